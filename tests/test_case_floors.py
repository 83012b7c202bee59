"""The whole-case NumPy floors (benchmarks/case_floors.py): every profiles/ case has one, and its
value and gradient agree with adcli's ``value_and_grad`` at the benchmark's tolerance (rtol 1e-6),
with the same structure (tuple, dict keys in order, list, float or array of the same shape and
dtype), and the floor leaves its arguments as they were. No timings: the script reports those."""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import adcli
from tests.support.modules import load_file

ROOT = Path(__file__).resolve().parent.parent
STEMS = sorted(p.stem for p in (ROOT / "profiles").glob("*.py"))
RTOL, ATOL = 1e-6, 1e-9  # as benchmarks/bench.py's compare: atol relative to the largest entry


case_floors = load_file(ROOT / "benchmarks" / "case_floors.py", "adcli_benchmark_case_floors")


@functools.cache
def profile(stem: str):
    return load_file(ROOT / "profiles" / f"{stem}.py", f"adcli_case_floors_test_{stem}")


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """BLAS on one thread, as the benchmark runs: on a loaded 2-core machine OpenBLAS's threads
    made gp_lml's 128 x 128 Cholesky and solves take a second instead of a millisecond."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def assert_same_gradient(ours, theirs, where: str = "gradient") -> None:
    """``ours`` has ``theirs``'s structure and agrees with it leaf by leaf (rtol 1e-6)."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), f"{where}: {type(ours).__name__}, not a dict"
        assert list(ours) == list(theirs), f"{where}: keys {list(ours)} vs {list(theirs)}"
        for k in theirs:
            assert_same_gradient(ours[k], theirs[k], f"{where}[{k!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs), f"{where}: {type(ours).__name__}, not a {type(theirs).__name__}"
        assert len(ours) == len(theirs), f"{where}: {len(ours)} entries vs {len(theirs)}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same_gradient(a, b, f"{where}[{i}]")
    elif isinstance(theirs, float) and not isinstance(theirs, np.ndarray):
        assert isinstance(ours, float), f"{where}: {type(ours).__name__}, not a float"
        np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL * max(abs(theirs), 1.0), err_msg=where)
    else:
        assert isinstance(ours, np.ndarray), f"{where}: {type(ours).__name__}, not an array"
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, (
            f"{where}: {ours.dtype}{ours.shape} vs {theirs.dtype}{theirs.shape}")
        scale = max(float(np.max(np.abs(theirs))) if theirs.size else 0.0, 1.0)
        np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL * scale, err_msg=where)


def test_every_case_has_a_floor():
    names = [profile(stem).NAME for stem in STEMS]
    assert len(names) == len(set(names))
    assert sorted(case_floors.FLOORS) == sorted(names), "a profiles/ case without a floor, or a floor without a case"
    for name, floor in case_floors.FLOORS.items():
        assert getattr(case_floors, f"floor_{name}") is floor


@pytest.mark.parametrize("stem", STEMS)
def test_floor_agrees_with_adcli(stem):
    mod = profile(stem)
    args = mod.inputs()
    before = copy.deepcopy(args)
    value, grads = adcli.value_and_grad(mod.f, argnums=mod.ARGNUMS)(*args)
    floor_value, floor_grads = case_floors.FLOORS[mod.NAME](*args)
    np.testing.assert_allclose(floor_value, value, rtol=RTOL, atol=ATOL, err_msg=f"{mod.NAME}: value")
    assert_same_gradient(floor_grads, grads, mod.NAME)
    assert_same_gradient(list(args), list(before), f"{mod.NAME}: the arguments after the floor")  # not written to


def test_the_comparison_catches_a_wrong_gradient():
    mod = profile("batchnorm_mlp")
    args = mod.inputs()
    grads = adcli.value_and_grad(mod.f, argnums=mod.ARGNUMS)(*args)[1]
    close = copy.deepcopy(grads)
    close[1]["gamma"][3] *= 1.0 + 1e-8
    assert_same_gradient(close, grads)
    off = copy.deepcopy(grads)
    off[1]["gamma"][3] *= 1.0 + 1e-4
    with pytest.raises(AssertionError):
        assert_same_gradient(off, grads)
    reordered = copy.deepcopy(grads)
    reordered[0] = {k: reordered[0][k] for k in reversed(list(reordered[0]))}
    with pytest.raises(AssertionError, match="keys"):
        assert_same_gradient(reordered, grads)
    with pytest.raises(AssertionError, match="not a float"):
        assert_same_gradient((np.zeros(3), np.array(1.0)), (np.zeros(3), 1.0))
