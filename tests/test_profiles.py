"""The profiles/ scripts: each one's gradient agrees with finite differences, its main() runs and
prints, its primal returns a float; one runs as a script in a subprocess."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from adcli.testing import check_grad

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ROOT / "profiles"
SCRIPTS = sorted(p.name for p in PROFILES.glob("*.py"))

# Finite-difference directions per script, default 3: none of the primals is slow enough yet to need fewer
# (the whole file runs in a few seconds).
DIRECTIONS: dict[str, int] = {}

EXPECTED = {
    "sum_1000.py", "sum_loop_1000.py", "sum_sin_1000.py", "sum_sin_loop_1000.py", "kron_sum.py",
    "kron_view_sum.py", "naive_map_sin_cos_exp.py", "map_sin_cos_exp.py", "broadcast_sin_cos_exp.py",
    "simple_mlp.py", "gp_lml.py", "large_single_block.py", "logistic_regression.py", "mlp_dict.py", "rk4_ode.py",
    "stencil_roll.py", "hmm_forward.py", "bayes_logreg.py", "rnn.py", "gp_hyper.py", "batchnorm_mlp.py",
    "loop_helper_loss.py",
}


def load(name: str):
    path = PROFILES / name
    spec = importlib.util.spec_from_file_location(f"adcli_profile_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_case_has_a_script():
    assert EXPECTED <= set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_shape(name):
    mod = load(name)
    assert isinstance(mod.NAME, str) and mod.NAME
    assert isinstance(mod.ARGNUMS, (int, tuple))
    assert mod.__doc__ and mod.__doc__.strip()
    assert callable(mod.f) and callable(mod.inputs) and callable(mod.main)
    a, b = mod.inputs(), mod.inputs()
    assert isinstance(a, tuple)
    for u, v in zip(a, b):  # deterministic given the seed
        for lu, lv in zip(_leaves(u), _leaves(v)):
            np.testing.assert_array_equal(lu, lv)


@pytest.mark.parametrize("name", SCRIPTS)
def test_primal_returns_float(name):
    mod = load(name)
    value = mod.f(*mod.inputs())
    assert isinstance(value, float), type(value)
    assert np.isfinite(value)


@pytest.mark.parametrize("name", SCRIPTS)
def test_gradient_matches_finite_differences(name):
    mod = load(name)
    check_grad(mod.f, *mod.inputs(), argnums=mod.ARGNUMS, directions=DIRECTIONS.get(name, 3))


@pytest.mark.parametrize("name", SCRIPTS)
def test_main_runs_and_prints(name, capsys):
    mod = load(name)
    mod.main()
    out = capsys.readouterr().out
    assert out.startswith(mod.NAME + ":"), out
    assert "value" in out and "grad" in out


def test_gp_lml_runs_as_a_script():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    proc = subprocess.run(
        [sys.executable, "profiles/gp_lml.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("gp_lml: value = "), proc.stdout
    assert "grad s:" in proc.stdout


def _leaves(v):
    if isinstance(v, dict):
        return [x for k in sorted(v) for x in _leaves(v[k])]
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _leaves(item)]
    return [v]
