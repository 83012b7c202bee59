"""What adcli writes from a profile: escaped for markdown and HTML, valid Python for non-finite
samples, and never over a file the user has (one made during the run, or the command's own
input), whatever the profile says."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from adcli.cli import cli
from adcli.data import store
from tests.support.profiles import ROOT, document, run_adcli, saved, stats, write


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(autouse=True)
def plain_output(monkeypatch):
    monkeypatch.setattr(os, "isatty", lambda fd: False)


# --- markdown and HTML ---------------------------------------------------------------------------


HOSTILE = "<img src=x onerror=alert(1)>[click](http://evil.example)&#x202e;"


def test_compare_markdown_passes_no_html_or_link_from_the_command(tmp_path):
    a = write(tmp_path / "a.json", document([stats(1, "numpy.sum(f64[1d])")], command=[f"{HOSTILE}.py"]))
    b = write(tmp_path / "b.json", document([stats(1, "numpy.sum(f64[1d])")], command=["other.py"]))
    res = invoke("compare", a, b, "--format", "markdown")
    assert res.exit_code == 0, res.output
    [note] = [line for line in res.output.splitlines() if "different programs" in line]
    code = note[len("> note: "):]
    assert code.startswith("`") and code.endswith("`") and code.count("`") == 2, note  # one code span: literal text
    for line in res.output.splitlines():
        if line != note:
            assert "<img" not in line and "](http" not in line and "&#x" not in line


def test_markdown_cells_escape_what_would_become_html_or_a_link():
    from adcli.render.text import md_cell, md_line

    for escape in (md_cell, md_line):
        out = escape(HOSTILE)
        assert "<" not in out.replace("\\<", "") and "[" not in out.replace("\\[", "") and "&" not in out.replace("\\&", "")


def test_report_escapes_overrides_surrogates_and_undecodable_names(tmp_path):
    doc = document([stats(1, "numpy.kron(dict{'a\\u202eb': f64[2d]}, f64[2d])", location="x\ud800\u202e.py:1")],
                   command=["evil\u202e\u2066.py", "\udcff"])
    path = write(tmp_path / "p.json", doc)
    out = tmp_path / "r.html"
    res = invoke("report", path, "-o", str(out))
    assert res.exit_code == 0, res.output
    page = out.read_text(encoding="utf-8")
    assert "\u202e" not in page and "\u2066" not in page and "\\u202e" in page and "\\udcff" in page
    name = os.fsdecode(b"bad\xff.json")  # a file name that is not UTF-8
    write(tmp_path / name, document([stats(1, "numpy.sum(f64[1d])")]))
    proc = subprocess.run([sys.executable, "-m", "adcli", "report", os.fsencode(name), "-o", "n.html"], cwd=tmp_path,
                          capture_output=True, env={**os.environ, "PYTHONPATH": ROOT}, timeout=120)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
    assert "bad\\udcff.json" in (tmp_path / "n.html").read_text(encoding="utf-8")


# --- exported values -----------------------------------------------------------------------------


@pytest.mark.parametrize("value,dtype", [(float("nan"), None), (float("inf"), None), (float("-inf"), "float64")])
def test_non_finite_samples_are_exported_as_expressions(tmp_path, value, dtype):
    enc = {"value": value} if dtype is None else {"value": value, "dtype": dtype}
    desc = "float" if dtype is None else "f64"
    sig = f"numpy.sinc({desc})"
    path = write(tmp_path / "p.json", document([stats(1, sig, calls=1, time=1.0, derived=1.0, primal=0.01,
                                                       sample={"args": [enc], "kwargs": {}})]))
    out = tmp_path / "rules.py"
    res = invoke("export", path, "-o", str(out))
    assert res.exit_code == 0 and "1 hand-written" in res.output, res.output
    tree = ast.parse(out.read_text())
    [args] = [n.value for n in ast.walk(tree) if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "args"]
    import numpy as np

    [got] = eval(compile(ast.Expression(args), "rules.py", "eval"), {"np": np})  # names nothing but np
    assert repr(float(got)) == repr(value)


# --- outputs never replace the user's files -------------------------------------------------------


def test_a_file_made_at_the_output_during_the_run_is_kept(tmp_path, monkeypatch):
    export_app = sys.modules["adcli.app.export"]

    path = saved(tmp_path)
    out = tmp_path / "rules.py"
    real = export_app.rules_module

    def meanwhile(*args, **kwargs):  # another process writes the output while adcli works
        out.write_text("# theirs\n")
        return real(*args, **kwargs)

    monkeypatch.setattr(export_app, "rules_module", meanwhile)
    doc = document([stats(1, "numpy.cumsum(f64[1d])", calls=1, time=1.0, derived=1.0, primal=0.01)])
    path = write(tmp_path / "q.json", doc)
    res = invoke("export", path, "-o", str(out))
    assert res.exit_code == 2 and "was created while adcli ran" in res.output and "--force" in res.output
    assert out.read_text() == "# theirs\n"
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".adcli-")]  # no temporary file left
    assert invoke("export", path, "-o", str(out), "--force").exit_code == 0
    assert "numpy.cumsum" in out.read_text()


def test_a_profile_run_never_replaces_a_file_made_at_its_output(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text("import numpy as np\nimport adcli\n\nopen('p.json', 'w').write('theirs')\n"
                    "adcli.grad(lambda x: np.sum(x * x))(np.ones(3))\n")
    res = run_adcli("profile", "--no-replay", "-o", "p.json", str(prog), cwd=tmp_path)
    assert res.returncode == 2 and "was created while adcli ran" in res.stderr and "saved to" in res.stderr, res.stderr
    assert (tmp_path / "p.json").read_text() == "theirs"
    where = res.stderr.split("saved to ")[1].split(" instead")[0]
    try:
        assert store.load(where).signatures
    finally:
        for p in (where, store.sidecar(where)):
            if os.path.exists(p):
                os.unlink(p)


@pytest.mark.parametrize("command", [["report", "{p}", "-o", "{out}"], ["suggest", "{p}", "-o", "{out}"],
                                     ["export", "{p}", "-o", "{out}"], ["show", "{p}", "--speedscope", "{out}"]])
@pytest.mark.parametrize("target", ["p.json", "p.npz"])
def test_an_output_onto_the_input_profile_is_refused_even_with_force(tmp_path, command, target):
    path = write(tmp_path / "p.json", document([stats(1, "numpy.cumsum(f64[1d])", calls=1, time=1.0, derived=1.0,
                                                       primal=0.01)]))
    (tmp_path / "p.npz").write_bytes(b"the samples")
    before = {f: (tmp_path / f).read_bytes() for f in ("p.json", "p.npz")}
    args = [a.format(p=path, out=str(tmp_path / target)) for a in command]
    for extra in ([], ["--force"]):
        res = invoke(*args, *extra)
        assert res.exit_code == 2 and "refusing to write" in res.output, res.output
        assert {f: (tmp_path / f).read_bytes() for f in before} == before


def test_a_profile_is_never_written_as_its_own_sidecar_nor_over_its_script(tmp_path):
    marker = tmp_path / "ran"
    prog = tmp_path / "prog.py"
    prog.write_text(f"open({str(marker)!r}, 'w').close()\n")
    (tmp_path / "out.npz").write_bytes(b"samples of an earlier run")
    for out in ("out.npz", "prog.py"):
        res = run_adcli("profile", "--force", "-o", out, "prog.py", cwd=tmp_path)
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        assert ("own sample file" if out.endswith(".npz") else "input of this command") in res.stderr
    assert not marker.exists() and (tmp_path / "out.npz").read_bytes() == b"samples of an earlier run"
    assert prog.read_text() == f"open({str(marker)!r}, 'w').close()\n"


def test_the_exported_module_never_lands_on_the_script(tmp_path):
    path = write(tmp_path / "p.json", document([stats(1, "__main__.f(f64[1d])", calls=1, time=1.0, derived=1.0,
                                                       primal=0.01)]))
    script = tmp_path / "prog.py"
    script.write_text("def f(x):\n    return x\n")
    res = invoke("export", path, "-o", str(script), "--script", str(script), "--force")
    assert res.exit_code == 2 and "input of this command" in res.output
    assert script.read_text() == "def f(x):\n    return x\n"
    assert json.loads((tmp_path / "p.json").read_text())["signatures"]
