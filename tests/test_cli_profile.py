"""`adcli profile` end to end: click's runner and the real console script."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

import adcli
from adcli.cli import cli
from adcli.data import store

SCRIPTS = os.path.join(os.path.dirname(__file__), "support", "scripts")


def load_json(path):
    """A saved profile as its JSON document."""
    return store.load(path).to_json()


def script(name):
    return os.path.join(SCRIPTS, name)


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


def test_profile_prints_a_summary_and_writes_the_profile(tmp_path):
    out = str(tmp_path / "p.json")
    res = invoke("profile", "-o", out, "--top", "5", script("known_calls.py"))
    assert res.exit_code == 0, res.output
    assert "__main__.outer(f64[2d])" in res.output and "numpy.kron" in res.output
    data = load_json(out)
    assert data["totals"]["gradients"] == 2 and os.path.exists(str(tmp_path / "p.npz"))
    shown = invoke("show", out, "--format", "markdown")
    assert shown.exit_code == 0 and "| " in shown.output and "numpy.kron" in shown.output


def test_options_after_the_script_belong_to_the_script(tmp_path):
    out = str(tmp_path / "p.json")
    res = invoke("profile", "-o", out, "--no-replay", script("argv.py"), "-o", "theirs", "--top", "1")
    assert res.exit_code == 0, res.output
    assert "ARGV ['-o', 'theirs', '--top', '1']" in res.output


def test_no_gradient_exits_1_and_writes_nothing(tmp_path):
    out = str(tmp_path / "p.json")
    res = invoke("profile", "-o", out, script("nograd.py"))
    assert res.exit_code == 1 and "took no gradient" in res.output
    assert not os.path.exists(out)


def test_missing_script_exits_2(tmp_path):
    (tmp_path / "p.json").write_text("an existing output must not matter: the script is checked first")
    res = invoke("profile", "-o", str(tmp_path / "p.json"), "no/such/script.py")
    assert res.exit_code == 2 and "no such script" in res.output and "Traceback" not in res.output


def test_unwritable_output_exits_2_before_running(tmp_path):
    res = invoke("profile", "-o", str(tmp_path / "nope" / "p.json"), script("argv.py"))
    assert res.exit_code == 2 and "cannot write" in res.output and "ARGV" not in res.output


def test_a_failing_script_shows_its_traceback_and_keeps_the_profile(tmp_path):
    out = str(tmp_path / "p.json")
    res = invoke("profile", "-o", out, "--no-replay", script("raises.py"))
    assert res.exit_code == 1
    assert "ValueError: boom from the script" in res.output
    assert load_json(out)["exit_status"] == 1


def test_console_script_without_a_terminal(tmp_path):
    env = {**os.environ, "NO_COLOR": "1"}
    out = str(tmp_path / "p.json")
    res = subprocess.run([sys.executable, "-m", "adcli", "profile", "-o", out, "--no-replay", script("known_calls.py")],
                         capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert "\x1b[" not in res.stdout and "numpy.kron" in res.stdout


def test_profile_a_module_with_dash_m(tmp_path, monkeypatch):
    (tmp_path / "mymodel.py").write_text(
        "import numpy as np\nimport adcli\n\n\ndef loss(x):\n    return np.sum(np.tanh(x) ** 2)\n\n\n"
        "if __name__ == '__main__':\n    adcli.grad(loss)(np.linspace(0, 1, 5))\n"
    )
    monkeypatch.chdir(tmp_path)
    res = invoke("profile", "-o", "p.json", "--no-replay", "-m", "mymodel")
    assert res.exit_code == 0, res.output
    data = load_json(str(tmp_path / "p.json"))
    assert [s["signature"] for s in data["signatures"] if s["kind"] == "user"] == ["__main__.loss(f64[1d])"]


def test_a_script_that_raises_before_its_first_gradient_shows_its_traceback(tmp_path):
    out = str(tmp_path / "p.json")
    res = subprocess.run([sys.executable, "-m", "adcli", "profile", "-o", out, script("raises_early.py")],
                         capture_output=True, text=True, cwd=str(tmp_path))
    assert res.returncode == 1 and not os.path.exists(out)
    assert "Traceback (most recent call last):" in res.stderr and 'raises_early.py", line 10, in <module>' in res.stderr
    assert "FileNotFoundError" in res.stderr
    assert "raised before its first gradient (FileNotFoundError: no-such-file-for-adcli-tests.csv" in res.stderr


def test_tracebacks_and_warnings_point_at_the_users_lines_not_adclis(tmp_path):
    out = str(tmp_path / "p.json")
    res = subprocess.run([sys.executable, "-m", "adcli", "profile", "-o", out, "--no-replay",
                          script("raises_in_gradient.py")], capture_output=True, text=True, cwd=str(tmp_path))
    assert res.returncode == 1
    tb = res.stderr[res.stderr.index("Traceback"):]
    frames = [ln for ln in tb.splitlines() if ln.startswith('  File "')]
    assert [f.split('", ')[1] for f in frames] == ["line 15, in <module>", "line 12, in f", "line 8, in helper"], frames
    assert all("raises_in_gradient.py" in f for f in frames)
    assert "TracingError: float() of a traced value" in tb
    assert "raises_in_gradient.py:7: RuntimeWarning: divide by zero encountered in log" in res.stderr
    assert "adcli/engine" not in res.stderr


def test_incomplete_profiles_say_so_and_suggest_refuses_or_qualifies(tmp_path):
    """A gradient that raised, a failed program and a profile without replays are flagged by
    every renderer; suggest refuses a profile without replays (exit 1) and qualifies the rest."""
    failed = str(tmp_path / "failed.json")
    res = invoke("profile", "-o", failed, script("raises_in_gradient.py"))
    assert res.exit_code == 1
    doc = load_json(failed)
    assert doc["failed_gradients"] == 1 and doc["replays"] == "done" and doc["exit_status"] == 1
    shown = invoke("show", failed)
    assert "INCOMPLETE: the program failed (exit status 1); 1 of 1 gradient raised before finishing" in \
        " ".join(shown.output.split())
    advice = invoke("suggest", failed)
    assert advice.exit_code == 0 and advice.output.startswith("advice from an INCOMPLETE profile: the program failed")
    # its own line: a real line break after it, not an escaped one before the headline
    assert "\\n" not in advice.output.splitlines()[0] and "INCOMPLETE" not in advice.output.splitlines()[-1]
    as_json = CliRunner().invoke(cli, ["suggest", failed, "--format", "json"])
    assert "adcli: warning: advice from an incomplete profile" in as_json.stderr

    no_replay = str(tmp_path / "no_replay.json")
    assert invoke("profile", "-o", no_replay, "--no-replay", script("known_calls.py")).exit_code == 0
    assert load_json(no_replay)["replays"] == "skipped"
    assert "no replays (profiled with --no-replay" in " ".join(invoke("show", no_replay).output.split())
    refused = invoke("suggest", no_replay)
    assert refused.exit_code == 1 and "no call was replayed" in refused.output and "Traceback" not in refused.output


def test_compare_says_when_the_profiles_are_of_different_programs_or_incomplete(tmp_path):
    a, b = str(tmp_path / "a.json"), str(tmp_path / "b.json")
    assert invoke("profile", "-o", a, "--no-replay", script("known_calls.py")).exit_code == 0
    assert invoke("profile", "-o", b, script("raises_in_gradient.py")).exit_code == 1
    out = " ".join(invoke("compare", a, b).output.split())
    assert "note: the profiles are of different programs" in out
    assert "note: before: no replays" in out and "note: after: the program failed (exit status 1)" in out
    same = invoke("compare", a, a).output
    assert "different programs" not in same


def test_suggest_fits_80_columns_without_truncating_numbers(tmp_path, monkeypatch):
    out = str(tmp_path / "p.json")
    assert invoke("profile", "-o", out, script("known_calls.py")).exit_code == 0
    wide = invoke("suggest", out, "--all").output
    monkeypatch.setenv("COLUMNS", "80")
    narrow = invoke("suggest", out, "--all").output
    assert all(len(line) <= 80 for line in narrow.splitlines()), narrow
    assert "…" not in narrow and "columns left out to fit 80 columns" in " ".join(narrow.split())
    # the savings and shares of the wide table are all in the narrow one, whole
    cells = [c.strip() for row in wide.splitlines() if row.startswith("│") for c in row.split("│")[8:10]]
    assert cells and all(c in narrow for c in cells if c)


def test_command_line_conventions_version_quiet_color_and_suggest_output(tmp_path):
    assert invoke("-V").output.startswith("adcli, version")
    out = str(tmp_path / "p.json")
    quiet = subprocess.run([sys.executable, "-m", "adcli", "-q", "profile", "--replay-budget", "120", "-o", out,
                            script("known_calls.py")],  # (replays never cut by a busy machine: tests/conftest.py)
                           capture_output=True, text=True, cwd=str(tmp_path))
    assert quiet.returncode == 0 and "profile written" not in quiet.stderr and "numpy.kron" in quiet.stdout
    colored = subprocess.run([sys.executable, "-m", "adcli", "--color", "show", out], capture_output=True, text=True)
    plain = subprocess.run([sys.executable, "-m", "adcli", "--no-color", "show", out], capture_output=True, text=True)
    assert "\x1b[" in colored.stdout and "\x1b" not in plain.stdout
    advice = str(tmp_path / "advice.md")
    assert invoke("suggest", out, "--format", "markdown", "-o", advice).exit_code == 0
    text = open(advice).read()
    assert text.startswith("**") and "\x1b" not in text
    again = invoke("suggest", out, "-o", advice)
    assert again.exit_code == 2 and "exists; pass --force" in again.output and open(advice).read() == text
    assert invoke("suggest", out, "-o", advice, "--force").exit_code == 0 and open(advice).read() != text


def test_small_defects_of_the_command_line(tmp_path):
    """profile --top -5 is refused like show --top -1; a file that is not JSON is not called
    truncated; math.sin(x) is named as such; suggest's header is a sentence."""
    bad = invoke("profile", "--top", "-5", script("known_calls.py"))
    assert bad.exit_code == 2 and "--top" in bad.output
    garbage = tmp_path / "garbage.json"
    garbage.write_text("this is not a profile\n")
    res = invoke("show", str(garbage))
    assert res.exit_code == 2 and "not JSON" in res.output and "truncated" not in res.output
    with pytest.raises(adcli.AdcliError, match=r"^math\.sin\(\) \(which takes float\(\)\) of a traced value at "):
        adcli.grad(lambda x: math.sin(x[0]))(np.ones(2))
    out = str(tmp_path / "p.json")
    assert invoke("profile", "-o", out, script("known_calls.py")).exit_code == 0
    header = invoke("suggest", out, "--all").output.split("\n\n")[0]
    assert "estimated with no imported" not in " ".join(header.split())


def test_replays_hide_what_the_program_prints_and_keep_to_their_budget(tmp_path):
    out = str(tmp_path / "p.json")
    res = subprocess.run([sys.executable, "-m", "adcli", "profile", "-o", out, script("chatty.py")],
                         capture_output=True, text=True, cwd=str(tmp_path))
    assert res.returncode == 0
    assert res.stdout.count("Running simulation...") == 3  # the program's three gradients, not the replays'
    assert "line(s) they printed were hidden" in res.stderr
    tight = str(tmp_path / "tight.json")
    res = subprocess.run([sys.executable, "-m", "adcli", "profile", "-o", tight, "--replay-budget", "0.001",
                          script("chatty.py")], capture_output=True, text=True, cwd=str(tmp_path))
    assert res.returncode == 0 and "replays stopped at the 0.001 s budget: 1 of 2 signature(s) not replayed" in res.stderr
    doc = load_json(tight)
    assert doc["unreplayed"] == 1 and any("not replayed, the smallest" in n for n in doc["notes"])
    # incomplete only when what was left out is over 5% of the gradient time (model.UNREPLAYED_SHARE)
    flagged = "1 signature(s) not replayed within the --replay-budget" in " ".join(invoke("show", tight).output.split())
    assert 0 < doc["unreplayed_s"] and flagged == (doc["unreplayed_s"] > 0.05 * doc["totals"]["gradient_s"])
