"""Programs written for autograd and ported to adcli by swapping imports (tests/ported/).

For every program: adcli's gradient of ``loss`` agrees with central finite differences on every
parameter entry, adcli's forward value is exactly the plain program's, the gradient has the
parameters' structure, and autograd 1.9 (the same source with its imports rewritten back) computes
the same gradient.
"""

from __future__ import annotations

import copy
import importlib
import sys

import autograd
import autograd.numpy
import numpy as np
import pytest

import adcli
from adcli.testing import check_grad
from tests.ported._load import autograd_source, load, names

SEED = 0
NAMES = names()
MIN_PROGRAMS = 14

# Programs autograd 1.9 cannot run as written: for each, the exception autograd raises and a pattern of its message.
# test_autograd_computes_the_same_gradient asserts that autograd still fails this way, so the list cannot go stale.
AUTOGRAD_CANNOT_RUN: dict[str, tuple[type[BaseException], str]] = {
    # Stencil updates in place. autograd's ArrayBox has no .copy() method (the first line it meets), and no item
    # assignment either (`vx[1:-1] += ...`, `p[1:-1] = ...` would raise next).
    "fluid_sim": (AttributeError, "'ArrayBox' object has no attribute 'copy'"),
    "shallow_water": (AttributeError, "'ArrayBox' object has no attribute 'copy'"),
    # odeint's parameters travel in a tuple (args=(log_rates,)). autograd traces only arguments that are boxes
    # themselves, so SciPy's solver receives an ArrayBox and fails converting it; autograd programs write
    # autograd.builtins.tuple((log_rates,)), which has no NumPy/SciPy counterpart to swap imports with.
    "ode_fit": (ValueError, "setting an array element with a sequence"),
}


# --- pytrees of float arrays and Python floats (dict / list / tuple), and finite differences ---------------------------

def leaf_paths(tree, prefix=()):
    if isinstance(tree, dict):
        for key in tree:
            yield from leaf_paths(tree[key], prefix + (key,))
    elif isinstance(tree, (list, tuple)):
        for i, item in enumerate(tree):
            yield from leaf_paths(item, prefix + (i,))
    else:
        yield prefix


def get_leaf(tree, path):
    for key in path:
        tree = tree[key]
    return tree


def replace_leaf(tree, path, leaf):
    """A copy of ``tree`` (containers only) with the leaf at ``path`` replaced."""
    if not path:
        return leaf
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        out = dict(tree)
        out[head] = replace_leaf(tree[head], rest, leaf)
        return out
    items = list(tree)
    items[head] = replace_leaf(tree[head], rest, leaf)
    return type(tree)(items)


def path_name(path) -> str:
    return "".join(f"[{key!r}]" for key in path)


def finite_difference_grad(f, params, data, rel_step=1e-6):
    """Central differences of ``f(params, data)`` for every entry of every leaf, as {path: array}."""
    out = {}
    for path in leaf_paths(params):
        leaf = get_leaf(params, path)
        base = np.array(leaf, dtype=np.float64)
        fd = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            h = rel_step * max(1.0, abs(base[idx]))
            plus, minus = base.copy(), base.copy()
            plus[idx] += h
            minus[idx] -= h
            if type(leaf) is float:
                plus, minus = float(plus), float(minus)
            f_plus = f(replace_leaf(params, path, plus), data)
            f_minus = f(replace_leaf(params, path, minus), data)
            fd[idx] = (f_plus - f_minus) / (np.asarray(plus)[idx] - np.asarray(minus)[idx])
        out[path] = fd
    return out


def assert_same_structure(grads, params, name):
    assert list(leaf_paths(grads)) == list(leaf_paths(params)), f"{name}: gradient structure differs from params"
    for path in leaf_paths(params):
        p, g = get_leaf(params, path), get_leaf(grads, path)
        where = f"{name}: gradient{path_name(path)}"
        assert type(g) is type(p), f"{where} is {type(g).__name__}, the parameter {type(p).__name__}"
        assert np.shape(g) == np.shape(p), f"{where} has shape {np.shape(g)}, the parameter {np.shape(p)}"
        assert np.result_type(g) == np.result_type(p), f"{where} has dtype {np.result_type(g)}"


def assert_trees_close(actual, expected, name, what, rtol, atol):
    failures = []
    for path in leaf_paths(expected):
        a, e = np.asarray(get_leaf(actual, path)), np.asarray(get_leaf(expected, path))
        try:
            np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)
        except AssertionError as err:
            failures.append(f"{name}: {what}{path_name(path)}:{err}")
    assert not failures, "\n".join(failures)


# --- the tests ----------------------------------------------------------------------------------------------------------

def test_there_are_enough_programs():
    assert len(NAMES) >= MIN_PROGRAMS, f"only {len(NAMES)} ported programs: {NAMES}"
    assert set(AUTOGRAD_CANNOT_RUN) <= set(NAMES)
    assert len(FITTED) >= 3, FITTED


@pytest.mark.parametrize("name", NAMES)
def test_gradient_matches_finite_differences(name):
    loss, make_inputs = load(name)
    params, data = make_inputs(SEED)
    before = copy.deepcopy((params, data))
    grads = adcli.grad(loss)(params, data)
    assert_same_structure(grads, params, name)
    np.testing.assert_equal((params, data), before, err_msg=f"{name}: the gradient changed its inputs")
    fd = finite_difference_grad(loss, params, data)
    failures = []
    for path, expected in fd.items():
        try:
            np.testing.assert_allclose(get_leaf(grads, path), expected, rtol=1e-5, atol=1e-7)
        except AssertionError as err:
            failures.append(f"{name}: gradient{path_name(path)} (adcli, then finite differences):{err}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name", NAMES)
def test_forward_value_is_unchanged(name):
    loss, make_inputs = load(name)
    params, data = make_inputs(SEED)
    value, _ = adcli.value_and_grad(loss)(params, data)
    np.testing.assert_array_equal(value, loss(params, data))
    assert np.size(value) == 1


@pytest.mark.parametrize("name", NAMES)
def test_autograd_computes_the_same_gradient(name):
    ag_loss, ag_make_inputs = load(name, "autograd")
    assert ag_loss.__globals__["np"] is autograd.numpy
    params, data = ag_make_inputs(SEED)
    if name in AUTOGRAD_CANNOT_RUN:
        exc, message = AUTOGRAD_CANNOT_RUN[name]
        with pytest.raises(exc, match=message):
            autograd.grad(ag_loss)(params, data)
        return
    ag_value, ag_grads = autograd.value_and_grad(ag_loss)(params, data)

    loss, make_inputs = load(name)
    params, data = make_inputs(SEED)
    value, grads = adcli.value_and_grad(loss)(params, data)
    np.testing.assert_allclose(value, ag_value, rtol=1e-12)
    assert_trees_close(grads, ag_grads, name, "gradient (adcli, then autograd)", rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("name", NAMES)
def test_autograd_flavour_rewrites_every_import(name):
    source = autograd_source(name)
    assert "import autograd.numpy as np" in source
    assert "adcli" not in source


FITTED = [n for n in NAMES if hasattr(importlib.import_module(f"tests.ported.{n}"), "fit")]


@pytest.mark.parametrize("name", FITTED)
def test_fitting_with_the_programs_own_grad_lowers_the_loss(name):
    loss, make_inputs = load(name)
    params, data = make_inputs(SEED)
    fitted = importlib.import_module(f"tests.ported.{name}").fit(params, data, num_iters=5)
    assert loss(fitted, data) < loss(params, data)


def test_in_place_updates_of_an_array_copied_from_plain_data_do_not_depend_on_argnums():
    """fluid_sim as first written copied its initial dye from plain data and updated it in place
    with traced velocities (``dye[1:-1] -= ...``), which was refused. The store now rebinds the
    local to a traced copy (engine.plain_writes): the velocities' gradients are those with the
    dye differentiated too, and match finite differences."""
    loss, make_inputs = load("fluid_sim", "adcli")
    params, data = make_inputs(0)
    module = sys.modules[loss.__module__]

    def dye_loss(p, d, dye0):
        vx, vy, dye = module.simulate(p["vx"], p["vy"], dye0, d["num_steps"], d["dt"], d["viscosity"])
        return np.sum((dye - d["target"]) ** 2)

    dye0 = params.pop("dye")
    plain = check_grad(dye_loss, params, data, dye0)
    both = adcli.grad(dye_loss, argnums=(0, 2))(params, data, dye0)[0]
    for name in ("vx", "vy"):
        np.testing.assert_allclose(plain[name], both[name], rtol=1e-12, atol=1e-15)
