"""Issue "A profile is data", items 1-5: nothing from a profile is executed, imported, or
written into code or a terminal unescaped. Profiles here are hand-made, as an attacker would."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from adcli.cli import cli
from adcli.data.model import Profile
from adcli.data.schema import ProfileError
from adcli.render import render
from adcli.render.profile import render_markdown, render_summary
from tests.support.profiles import document, stats, trial, write

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(autouse=True)
def plain_output(monkeypatch):
    monkeypatch.setattr(os, "isatty", lambda fd: False)


def no_code_but_the_generated(path):
    """The exported module parses, and no statement or call of it mentions the payload."""
    source = open(path, encoding="utf-8").read()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            assert node.id not in ("open", "os", "system", "PWNED"), ast.dump(node)
    for line in source.splitlines():
        if "PWNED" in line:
            assert line.lstrip().startswith("#") or "'" in line, line  # a comment, or inside a repr'd string
    return source


# --- 1. signatures and reasons in the exported module's comments ------------------------------


@pytest.mark.parametrize("payload", ["\nimport os; PWNED = 1", "\rimport os; PWNED = 1", "\u2028PWNED = 1",
                                     "\x0bPWNED = 1", "\x85PWNED = 1"])
def test_a_signature_with_a_line_break_is_refused_on_load(tmp_path, payload):
    path = write(tmp_path / "p.json", document([stats(1, f"numpy.kron(f64[2d], f64[2d]){payload}")]))
    out = tmp_path / "rules.py"
    res = invoke("export", path, "-o", str(out))
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1 and "signature" in res.output
    assert not out.exists()


@pytest.mark.parametrize("payload", ["\rimport os; os.system('PWNED')", "\nPWNED = open('x', 'w')",
                                     "\u2028PWNED = 1", "\x1b]8;;x\x07PWNED"])
def test_profile_text_in_the_reasons_reaches_the_module_only_as_comments(tmp_path, payload):
    imp = trial(f"autograd numpy.kron{payload}", rule_s=0.004)
    path = write(tmp_path / "p.json", document([stats(1, "numpy.kron(f64[2d], f64[2d])", imports=[imp])]))
    out = str(tmp_path / "rules.py")
    res = invoke("export", path, "-o", out)
    assert res.exit_code == 0, res.output
    source = no_code_but_the_generated(out)
    assert "\r" not in source and "\x1b" not in source and "\u2028" not in source


# --- 2. check never runs the script a profile names ------------------------------------------


RULES = '''import numpy as np
import adcli.rules
from adcli.testing import check_rule


@adcli.rules.rule(np.cumsum, "f64[1d]", replace=True)
def cumsum_rule(x):
    return np.cumsum(x), lambda g: (np.cumsum(g[::-1])[::-1],)


def test_cumsum():
    check_rule(np.cumsum, np.linspace(0.0, 1.0, 5), timing=False)
'''


def test_check_never_runs_the_script_a_profile_names(tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    path = write(tmp_path / "p.json", document([stats(1, "numpy.sum(f64[1d])")], command=["evil.py"]))
    (tmp_path / "rules.py").write_text(RULES)
    monkeypatch.chdir(tmp_path)
    try:
        res = invoke("check", "rules.py", "--profile", path)
    finally:
        from adcli.rules import unregister

        unregister(__import__("numpy").cumsum)
    assert res.exit_code == 0, res.output
    assert not marker.exists()


# --- 3. export imports nothing to name a target, and names only what the user passes ----------


def test_export_imports_nothing_a_profile_names(tmp_path):
    marker = tmp_path / "imported"
    pkg = tmp_path / "evilpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (pkg / "sub.py").write_text("def f(x):\n    return x\n")
    path = write(tmp_path / "p.json", document([stats(1, "evilpkg.sub.f(f64[1d])", calls=1, time=1.0, derived=1.0,
                                                       primal=0.01)]))
    for extra, written in (([], False), (["--module", "evilpkg/sub.py", "--force"], True)):
        res = subprocess.run([sys.executable, "-m", "adcli", "export", path, "-o", "rules.py", *extra], cwd=tmp_path,
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})
        assert res.returncode == 0, res.stderr
        assert not marker.exists()
        text = (tmp_path / "rules.py").read_text()
        assert ("@adcli.rules.rule('evilpkg.sub:f', 'f64[1d]')" in text) is written, text
        assert ("not exported" in text) is not written


# --- 3b. a profile that names a command: export writes no rule for it, check never calls it ---


def _popen_profile(tmp_path, marker, function="subprocess.Popen", kind="user"):
    """A profile whose signature is subprocess.Popen with sample arguments that run ``touch
    MARKER`` in a shell (a float in pass_fds gives check_rule an argument to differentiate)."""
    def v(x):
        return {"value": x}
    args = [v(f"touch {marker}"), v(-1), *[v(None)] * 5, v(True), v(True), *[v(None)] * 4, v(0), v(True), v(False),
            {"tuple": [v(0.0)]}]
    sig = (f"{function}(str, int, None, None, None, None, None, bool, bool, None, None, None, None, int, bool, bool, "
           "tuple(float))")
    return write(tmp_path / "evil.json", document([stats(1, sig, kind=kind, calls=1, time=1.0, derived=1.0, primal=0.01,
                                                           sample={"args": args, "kwargs": {}})]))


EVIL_RULES = """import subprocess

import adcli.rules


@adcli.rules.rule({target}, {types})
def popen_rule(*args):
    return {target_call}(*args), lambda g: (None,) * len(args)
"""


@pytest.mark.parametrize("function,kind", [("subprocess.Popen", "user"), ("numpy.f2py.subprocess.Popen", "numpy")])
def test_export_writes_no_rule_for_a_command_a_profile_names(tmp_path, function, kind):
    marker = tmp_path / "PWNED"
    path = _popen_profile(tmp_path, marker, function, kind)
    out = tmp_path / "rules.py"
    res = invoke("export", path, "-o", str(out))
    assert res.exit_code == 0, res.output
    assert "0 hand-written rule skeleton(s); 1 left out" in res.output
    source = out.read_text()
    tree = ast.parse(source)
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)], source  # no rule, no test
    assert all("Popen" not in line or line.startswith("#") for line in source.splitlines())
    res = invoke("check", str(out), "--profile", path)
    assert not marker.exists()


def test_check_never_calls_a_command_a_profile_samples(tmp_path):
    # a rules file naming subprocess.Popen (written by hand, or by an older adcli) and a profile
    # with samples that run a command: check refuses the rule before calling anything
    marker = tmp_path / "PWNED"
    path = _popen_profile(tmp_path, marker)
    types = "'str', 'int', " + "'None', " * 5 + "'bool', 'bool', " + "'None', " * 4 + "'int', 'bool', 'bool', 'tuple(float)'"
    for target in ("'subprocess:Popen'", "subprocess.Popen"):
        rules = tmp_path / "rules.py"
        rules.write_text(EVIL_RULES.format(target=target, types=types, target_call="subprocess.Popen"))
        try:
            res = invoke("check", str(rules), "--profile", path)
            assert res.exit_code == 2 and "refusing to check" in res.output and "Traceback" not in res.output
            assert len(res.output.strip().splitlines()) == 1
            proc = subprocess.run([sys.executable, "-m", "adcli", "check", str(rules), "--profile", path],
                                  cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT},
                                  timeout=120)
            assert proc.returncode == 2 and "refusing to check" in proc.stderr, proc.stderr
        finally:
            from adcli.rules import unregister

            unregister("subprocess:Popen")
        assert not marker.exists()


@pytest.mark.parametrize("signature,sample", [("numpy.f2py.subprocess.time.sleep(float)", {"value": 1e9}),
                                              ("numpy.ctypeslib.ctypes.cdll.libadcli_nothing(float)", {"value": 1.0})])
def test_export_never_walks_a_name_from_the_profile(tmp_path, signature, sample):
    """A sleep of 31 years, a shared library loaded by attribute access: export names neither,
    so neither check nor pytest on the module can reach them."""
    path = write(tmp_path / "p.json", document([stats(1, signature, calls=1, time=1.0, derived=1.0, primal=0.01,
                                                       sample={"args": [sample], "kwargs": {}})]))
    out = tmp_path / "rules.py"
    proc = subprocess.run([sys.executable, "-m", "adcli", "export", str(path), "-o", str(out)], cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    source = out.read_text()
    assert all("sleep" not in line and "cdll" not in line or line.startswith("#") for line in source.splitlines())
    assert "check_rule(" not in source
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(out)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 5, done.stdout  # no tests collected: nothing to call


def test_export_names_script_functions_only_when_the_script_defines_them(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("import numpy as np\n\n\nclass Model:\n    def loss(self, x):\n        return x\n\n\n"
                      "def f(x):\n    return np.sum(x)\n")
    sigs = [stats(i, f"__main__:{q}(f64[1d])" if "." in q else f"__main__.{q}(f64[1d])", calls=1, time=1.0, derived=1.0,
                  primal=0.01) for i, q in enumerate(["f", "Model.loss", "np.f2py.subprocess.Popen", "g"], 1)]
    path = write(tmp_path / "p.json", document(sigs, total=4.0))
    out = tmp_path / "rules.py"
    res = invoke("export", path, "-o", str(out), "--script", str(script), "--handwrite-burden", "0", "--import-burden", "0")
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "rule('__main__:f'" in text and "rule('__main__:Model.loss'" in text
    assert "rule('__main__:np.f2py" not in text and "rule('__main__:g'" not in text
    assert "does not define np.f2py.subprocess.Popen" in text


@pytest.mark.parametrize("names", [["x):\n    import os; os.system('PWNED')\n    (", "y"], ["PWNED=open('x', 'w')", "y"],
                                   ["lambda", "y"], ["x", "x"], ["\ufb01", "y"], ["x"], [3, "y"], "xy"])
def test_a_crafted_parameter_name_never_becomes_code(tmp_path, monkeypatch, names):
    """Parameter names reach the module only as identifiers Python reads as written (not a
    keyword, NFKC-normal, distinct, one per argument); anything else gives a0, a1."""
    monkeypatch.setattr(sys.modules["adcli.app.export"], "parameters", lambda *args: names)
    path = write(tmp_path / "p.json", document([stats(1, "__main__.f(f64[1d], f64[1d])", calls=1, time=1.0,
                                                       derived=1.0, primal=0.01)]))
    out = str(tmp_path / "rules.py")
    res = invoke("export", path, "-o", out, "--handwrite-burden", "0", "--import-burden", "0")
    assert res.exit_code == 0, res.output
    source = no_code_but_the_generated(out)
    assert "def f_rule(a0, a1):\n    ans = adcli.rules.original('__main__:f')(a0, a1)\n" in source


def test_the_recorded_scripts_path_reaches_the_module_only_through_repr(tmp_path):
    """A recorded script not found: its text is quoted in the tests' message, never code."""
    command = ["x.py')\nimport os; os.system('PWNED')\n('.py"]
    path = write(tmp_path / "p.json", document([stats(1, "__main__.f(f64[1d])", calls=1, time=1.0, derived=1.0,
                                                       primal=0.01)], command=command))
    out = str(tmp_path / "rules.py")
    res = invoke("export", path, "-o", out, "--handwrite-burden", "0", "--import-burden", "0")
    assert res.exit_code == 0 and "is not here" in res.output, res.output
    source = no_code_but_the_generated(out)
    assert "SCRIPT = " not in source and "load_script(SCRIPT)  #" not in source
    assert r'''the profile records "x.py\')\\nimport os''' in source  # repr'd in a repr'd message


# --- 4. the profile's path in the generated module ---------------------------------------------


def test_the_profile_path_reaches_the_module_only_through_repr(tmp_path):
    name = 'a"""\\b\'c.json'
    path = write(tmp_path / name, document([stats(1, "numpy.kron(f64[2d], f64[2d])",
                                                   imports=[trial("autograd numpy.kron", rule_s=0.004)])]))
    out = str(tmp_path / "rules.py")
    res = invoke("export", path, "-o", out)
    assert res.exit_code == 0, res.output
    tree = ast.parse(open(out, encoding="utf-8").read())
    [assign] = [n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "PROFILE"]
    assert ast.literal_eval(assign.value) == path
    assert name not in ast.get_docstring(tree)


# --- 5. terminal and markdown output -----------------------------------------------------------


def profile_with(signature, rule="autograd numpy.kron"):
    return Profile.from_json(document([stats(1, signature, imports=[trial(rule, rule_s=0.004)])]))


def test_markup_like_dict_keys_are_shown_as_they_are():
    for key in ("'x[/]'", "'W[in]'", "'[link=http://evil]x'", "'[bold]b'"):
        sig = f"numpy.kron(dict{{{key}: f64[2d]}}, f64[2d])"
        out = render_summary(profile_with(sig))
        assert key.strip("'") in out, out


def test_escape_sequences_never_reach_the_terminal():
    p = profile_with("numpy.kron(f64[2d], f64[2d])", rule="autograd \x1b]8;;http://evil\x07numpy\x1b[2J.kron\u202e")
    from adcli.advisor import suggest
    from adcli.app.advice import Advice

    suggestions, summary = suggest([p])
    for fmt in ("table", "markdown", "json"):
        out = render(Advice(suggestions, summary, None, True), fmt)
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out, fmt
        if fmt != "json":
            assert "\\x1b" in out


def test_markdown_escapes_backticks_pipes_and_newlines():
    p = profile_with("numpy.kron(dict{'a`b|c': f64[2d]}, f64[2d])", rule="autograd `x`\n| y")
    md = render_markdown(p)
    [row] = [line for line in md.splitlines() if "a`b" in line]
    assert "`` numpy.kron(dict{'a`b\\|c'" in row and row.count("|") - row.count("\\|") == 11
    from adcli.advisor import suggest
    from adcli.app.advice import Advice

    text = render(Advice(*suggest([p]), None, True), "markdown")
    assert "\n| y" not in text and "\\`x\\`" in text


def test_the_error_line_escapes_what_it_quotes(tmp_path):
    res = invoke("show", str(tmp_path / "no\x1b[31mpe.json"))
    assert res.exit_code == 2 and "\x1b" not in res.output and "\\x1b" in res.output


def test_a_profile_that_lists_bad_text_in_any_free_field_still_renders_escaped(tmp_path):
    doc = document([stats(1, "numpy.sum(f64[1d])", location="\x1b[31mx.py:1")], command=["\x1b]0;t\x07"])
    path = write(tmp_path / "p.json", doc)
    for args in (["show", path], ["show", path, "--format", "markdown"], ["show", path, "--format", "json"]):
        res = invoke(*args)
        assert res.exit_code == 0 and "\x1b" not in res.output and "\x07" not in res.output
    assert json.loads(invoke("show", path, "--format", "json").output)["command"] == ["\x1b]0;t\x07"]


def test_signatures_must_parse(tmp_path):
    for bad in ("kron(f64[2d])", "numpy.kron(f64[2d]", "numpy.kron(x[/])", "numpy.kron(\ud800)", "numpy.kron(W[in])"):
        with pytest.raises(ProfileError) as info:
            Profile.from_json(document([stats(1, bad)]), "p.json")
        assert "\n" not in str(info.value) and "signature" in str(info.value)


def test_a_synthesis_outcome_from_the_profile_reaches_the_terminal_only_escaped():
    """The profile's ``synthesis`` text (why no rule was synthesized) is a reason of the advice:
    escaped in every format like the others, never a sequence a terminal acts on."""
    from adcli.advisor import suggest
    from adcli.app.advice import Advice

    s = stats(1, "__main__.f(f64[1d])", derived=0.05, primal=0.001, time=1.0, calls=10)
    s["replay"]["synthesis"] = "not synthesized: \x1b[2J\x1b]8;;http://evil\x07here"
    suggestions, summary = suggest([Profile.from_json(document([s]))])
    assert any("not synthesized" in r for x in suggestions for r in x.reasons)  # the text is shown
    for fmt in ("table", "markdown", "json"):
        out = render(Advice(suggestions, summary, None, True), fmt)
        assert "\x1b" not in out and "\x07" not in out, fmt
