"""The rules module ``adcli export`` writes (app/stubs.py): parameters named as the function
names them, every import its code uses, a TODO that states each cotangent's structure, and
tests that load the script the profile records, under plain pytest, without exporting again."""

from __future__ import annotations

import ast
import contextlib
import io
import os
import re
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from adcli.app.export import export
from adcli.app.stubs import cotangent_text
from adcli.cli import cli
from adcli.engine.registry import declared_rules, remove_rule
from adcli.profiler.api import profile_program
from tests.support.node_clock import use_node_clock
from tests.support.profiles import document, stats, write

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "tests", "support", "scripts")
EVERYTHING = {"import_burden": 0.0, "handwrite_burden": 0.0}
ZERO = ("--import-burden", "0", "--handwrite-burden", "0")

PROGRAM = '''import numpy as np


def f(theta, x0):
    return np.sum(theta * x0)


class Model:
    def loss(self, g, ans):
        return np.sum(g * ans)


def make():
    def inner(w):
        return np.sum(w)
    return inner
'''


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def pytest_run(path, cwd):
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture
def clean_registry():
    before = {id(r) for r in declared_rules()}
    yield
    for r in declared_rules():
        if id(r) not in before:
            remove_rule(r)


def _profile(tmp_path, command, sigs):
    return write(tmp_path / "p.json", document([stats(i, s, calls=1, time=1.0, derived=1.0, primal=0.01)
                                                 for i, s in enumerate(sigs, 1)], total=len(sigs), command=command))


# --- parameter names ---------------------------------------------------------------------------


def test_parameters_are_named_as_the_recorded_script_defines_them(tmp_path):
    """The script the profile records defines the functions: the rules' parameters are its own,
    a method's `self` included; names the skeleton uses itself (g, ans) get a trailing _."""
    (tmp_path / "prog.py").write_text(PROGRAM)
    path = _profile(tmp_path, [str(tmp_path / "prog.py")],
                    ["__main__.f(f64[1d], f64[1d])", "__main__:Model.loss(obj(__main__.Model), f64[1d], f64[1d])",
                     "__main__:make.<locals>.inner(f64[2d])"])
    out = tmp_path / "rules.py"
    res = invoke("export", path, "-o", out, *ZERO)
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "def f_rule(theta, x0):\n    ans = adcli.rules.original('__main__:f')(theta, x0)\n" in text
    assert "def loss_rule(self, g_, ans_):\n    ans = adcli.rules.original('__main__:Model.loss')(self, g_, ans_)" in text
    assert "def inner_rule(w):\n" in text
    assert "#   d_theta: an array shaped like theta\n" in text and "#   return d_theta, d_x0\n" in text
    assert "#   d_self: None (not differentiable)\n" in text and "#   return None, d_g_, d_ans_\n" in text
    ast.parse(text)


def test_without_the_defining_file_parameters_are_positional_names(tmp_path):
    path = _profile(tmp_path, [str(tmp_path / "gone.py")], ["__main__.f(f64[1d], f64[1d])"])
    out = tmp_path / "rules.py"
    assert invoke("export", path, "-o", out, *ZERO).exit_code == 0
    assert "def f_rule(a0, a1):\n    ans = adcli.rules.original('__main__:f')(a0, a1)\n" in out.read_text()


def test_a_library_functions_parameters_are_numpys(tmp_path):
    path = _profile(tmp_path, ["model.py"], ["numpy.kron(f64[2d], f64[2d])"])
    out = tmp_path / "rules.py"
    res = invoke("export", path, "-o", out, *ZERO, "--only", "hand-write")
    assert res.exit_code == 0, res.output
    assert "def kron_rule(a, b):\n    ans = np.kron(a, b)\n" in out.read_text()


# --- the cotangents' structure in the TODO ----------------------------------------------------


@pytest.mark.parametrize("desc,want", [
    ("f64[2d]", "an array shaped like p"),
    ("f32[3d,F]", "an array shaped like p"),
    ("float", "a float"),
    ("i64[1d]", "None (not differentiable)"),
    ("obj(__main__.Model)", "None (not differentiable)"),
    ("dict{W: f64[2d], b: f64[1d]}", "a dict with keys 'W', 'b' of arrays shaped like p['W'], p['b']"),
    ("dict{'log proportions': f64[1d], 3: f64[2d]}",
     "a dict with keys 'log proportions', 3 of arrays shaped like p['log proportions'], p[3]"),
    ("tuple(f64[2d], f64[1d])", "a tuple (or list) of 2 arrays shaped like p[0], p[1]"),
    ("list(f64[1d]*12)", "a list (or tuple) of 12 arrays shaped like p[0], p[1], p[2], ..., p[11]"),
    ("list(tuple(f64[2d], f64[1d]), tuple(f64[2d], f64[1d]))",
     "a list (or tuple) of 2: [0] a tuple (or list) of 2 arrays shaped like p[0][0], p[0][1]; "
     "[1] a tuple (or list) of 2 arrays shaped like p[1][0], p[1][1]"),
    ("dict{W: f64[2d], n: int}", "a dict with keys 'W', 'n': ['W'] an array shaped like p['W']; "
                                 "['n'] None (not differentiable)"),
])
def test_the_todo_states_each_cotangents_structure(desc, want):
    assert cotangent_text(desc, "p") == want


def test_a_dict_arguments_todo_names_its_keys_in_the_exported_module(tmp_path, monkeypatch):
    use_node_clock(monkeypatch)  # the advice to hand-write, whatever else the machine runs
    script = os.path.join(SCRIPTS, "dict_params.py")
    prof, rules = str(tmp_path / "p.json"), str(tmp_path / "rules.py")
    assert invoke("profile", "-o", prof, script).exit_code == 0
    res = invoke("export", prof, "-o", rules, *ZERO, "--tier", "user")
    assert res.exit_code == 0, res.output
    text = open(rules).read()
    assert "def loss_rule(params, X, idx):" in text
    assert "#   d_params: a dict with keys 'W', 'b' of arrays shaped like params['W'], params['b']\n" in text
    assert "#   d_idx: None (not differentiable)\n" in text and "#   return d_params, d_X, None\n" in text


# --- imports, and the tests under plain pytest --------------------------------------------------


@pytest.mark.parametrize("program", ["gmm.py", "variational_autoencoder.py", "fisher_kpp.py", "rnn.py", "ode_net.py"])
def test_every_exported_module_imports_what_it_uses(program, tmp_path, clean_registry, monkeypatch):
    """Each skeleton module loads in a fresh interpreter (NumPy imported even where only the
    pullback to write will use it), and its tests, run by plain pytest without --script, load
    the script the profile records and stop at a TODO (the pullback, or an example input of a
    type the module cannot write), not at a NameError or a request to export again."""
    use_node_clock(monkeypatch)
    prof, rules = str(tmp_path / "p.json"), tmp_path / "rules.py"
    with contextlib.redirect_stdout(io.StringIO()):
        profile_program(os.path.join(ROOT, "benchmarks", "corpus", program), [], output=prof, replay_budget=0.005)
    done = export(prof, str(rules), only="hand-write", tier="user", options=EVERYTHING)
    assert done.handwritten >= 1 and done.recorded_script is not None
    text = rules.read_text()
    assert "import numpy as np" in text and "load_script(SCRIPT)" in text
    loaded = subprocess.run([sys.executable, "-c", "import runpy, sys; runpy.run_path(sys.argv[1])", str(rules)],
                            capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert loaded.returncode == 0, loaded.stderr
    ran = pytest_run(rules, tmp_path)
    failed = [line for line in ran.stdout.splitlines() if line.startswith("FAILED ")]
    assert ran.returncode == 1 and len(failed) == done.handwritten, ran.stdout[-3000:]
    assert "NameError" not in ran.stdout and "export again" not in ran.stdout
    if program == "ode_net.py":  # its random example times are not increasing, which odeint refuses
        return
    if program == "rnn.py":  # a closure: checkable once the check finds closures (another item of the issue)
        return
    assert all(" - NotImplementedError: " in line for line in failed), failed


def test_the_generated_tests_load_the_script_the_profile_records(tmp_path, monkeypatch):
    """Profiled as `adcli profile prog.py` in its folder and exported from another folder: the
    recorded script is found next to the profile, the tests load it and, the pullback filled
    in, pass under plain pytest; no --script anywhere."""
    use_node_clock(monkeypatch)
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(os.path.join(SCRIPTS, "dict_params.py"), work / "prog.py")
    monkeypatch.chdir(work)
    assert invoke("profile", "-o", "p.json", "prog.py").exit_code == 0
    monkeypatch.chdir(tmp_path)
    res = invoke("export", "work/p.json", "-o", "work/rules.py", *ZERO, "--tier", "user")
    assert res.exit_code == 0, res.output
    assert f"its tests load {work / 'prog.py'}, the script the profile records" in res.output
    text = (work / "rules.py").read_text()
    assert "SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'prog.py')" in text
    ran = pytest_run(work / "rules.py", tmp_path)
    assert ran.returncode == 1 and "TODO: write the pullback" in ran.stdout, ran.stdout[-3000:]
    pullback = '''        W, b = params["W"], params["b"]
        rows = X[idx]
        h = np.tanh(rows @ W + b)
        dz = g * 2.0 * h * (1.0 - h * h)
        dX = np.zeros_like(X)
        np.add.at(dX, idx, dz @ W.T)
        return {"W": rows.T @ dz, "b": dz.sum(axis=0)}, dX, None'''
    filled = re.sub(r"        raise NotImplementedError\('TODO: write the pullback[^\n]*", pullback, text)
    assert filled != text
    (work / "rules.py").write_text(filled)
    ran = pytest_run(work / "rules.py", tmp_path)
    assert ran.returncode == 0, ran.stdout[-3000:]


def test_a_recorded_script_not_found_fails_the_tests_saying_what_is_missing(tmp_path, monkeypatch):
    use_node_clock(monkeypatch)
    shutil.copy(os.path.join(SCRIPTS, "dict_params.py"), tmp_path / "prog.py")
    monkeypatch.chdir(tmp_path)
    assert invoke("profile", "-o", "p.json", "prog.py").exit_code == 0
    os.rename(tmp_path / "prog.py", tmp_path / "moved.py")
    res = invoke("export", "p.json", "-o", "rules.py", *ZERO, "--tier", "user")
    assert res.exit_code == 0, res.output
    assert "the script the profile records, 'prog.py', is not here" in res.output
    text = (tmp_path / "rules.py").read_text()
    assert "load_script(SCRIPT)  #" not in text and "def loss_rule(a0, a1, a2):" in text
    ran = pytest_run(tmp_path / "rules.py", tmp_path)
    assert ran.returncode == 1, ran.stdout[-3000:]
    assert ("the script defining __main__:loss is needed (the profile records 'prog.py', which was not found "
            "when this module was exported): export again with --script SCRIPT") in ran.stdout
