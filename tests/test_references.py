"""The benchmark's reference hand-written rules (benchmarks/references.py) against the functions
they stand for, on the arguments each profiles/ script really passes them: same value, cotangents
of each argument's structure, shape and dtype, agreeing with central finite differences; and,
served by the engine in place of the instrumented function, the same gradient of the whole
program as the derived rule."""

from __future__ import annotations

import copy
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import adcli
from adcli.engine.pytree import flatten
from adcli.engine.signature import signature_key
from adcli.gradcheck import is_float_leaf
from adcli.rules import register, unregister
from adcli.rules.instrument import instrument
from tests.support.modules import load_file

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ROOT / "profiles"


references = load_file(ROOT / "benchmarks" / "references.py", "adcli_benchmark_references")
REFERENCE = references.REFERENCE
KEYS = sorted(REFERENCE)
CALL_FORMS = 4  # distinct call forms checked per function (logsumexp is called with 1-d and 2-d, axis 0, 1, -1)


def _modname(stem: str) -> str:
    return f"adcli_reference_test_{stem}"


def load(stem: str):
    """The script as a plain module (not in sys.modules), named as its instrumented twin below."""
    return load_file(PROFILES / f"{stem}.py", _modname(stem))


# --- the original function and the arguments the script passes it -----------------------------


def _reachable_functions(mod):
    """Every function reachable from the module's values through closures and classes."""
    seen, stack = {}, list(vars(mod).values())
    while stack:
        v = stack.pop()
        if isinstance(v, types.MethodType):
            v = v.__func__
        if isinstance(v, type) and v.__module__ == mod.__name__:
            stack.extend(vars(v).values())
            continue
        if isinstance(v, (staticmethod, classmethod)):
            v = v.__func__
        if not isinstance(v, types.FunctionType) or id(v) in seen:
            continue
        seen[id(v)] = v
        stack.extend(c.cell_contents for c in (v.__closure__ or ()) if _filled(c))
    return list(seen.values())


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _call_form(args, kwargs):
    literal = lambda v: v if isinstance(v, (int, str)) and not isinstance(v, bool) else None  # noqa: E731
    return (signature_key(args, kwargs), tuple(literal(a) for a in args), tuple((k, literal(v)) for k, v in kwargs.items()))


def capture(mod, qualname: str):
    """(the original function, [(args, kwargs, types), ...]): the first call of each distinct form made
    while the script computes ``f(*inputs())``, found by routing every place the function is
    called through (module global, class attribute, closure cell, NumPy attribute) via a recorder."""
    calls, forms, patches = [], set(), []

    def recorder(func):
        def record(*args, **kwargs):
            form = _call_form(args, kwargs)
            if form not in forms and len(calls) < CALL_FORMS:
                forms.add(form)
                calls.append((copy.deepcopy(args), copy.deepcopy(kwargs), form[0]))  # form[0]: the call's own types
            return func(*args, **kwargs)
        return record

    def patch(obj, name, value, setter=setattr):
        patches.append((obj, name, getattr(obj, name) if setter is setattr else obj.cell_contents, setter))
        setter(obj, name, value)

    original = None
    head, _, attr = qualname.rpartition(".")
    if "<locals>" not in qualname and head and isinstance(getattr(mod, head, None), type):  # a method
        cls = getattr(mod, head)
        raw = vars(cls)[attr]
        original = raw.__func__ if isinstance(raw, staticmethod) else raw
        wrapped = recorder(original)
        patch(cls, attr, staticmethod(wrapped) if isinstance(raw, staticmethod) else wrapped)
    else:
        reachable = _reachable_functions(mod)  # before patching: not the recorders themselves
        for name, v in list(vars(mod).items()):  # module-level names (mod.f may be the closure itself)
            if isinstance(v, types.FunctionType) and v.__qualname__ == qualname and v.__module__ == mod.__name__:
                original = v
                patch(mod, name, recorder(v))
        for fn in reachable:  # closure cells that hold it
            for cell in fn.__closure__ or ():
                v = cell.cell_contents if _filled(cell) else None
                if isinstance(v, types.FunctionType) and v.__qualname__ == qualname:
                    original = v
                    patch(cell, None, recorder(v), setter=lambda c, _, value: setattr(c, "cell_contents", value))
        if original is None and callable(getattr(np, qualname, None)):  # a NumPy callable the script calls as np.<name>
            original = getattr(np, qualname)
            patch(np, qualname, recorder(original))
    assert original is not None, f"{qualname} not found in {mod.__name__}"
    args = mod.inputs()
    try:
        f = mod.f
        if isinstance(f, types.MethodType):  # a bound method: look it up again, so a patched class attribute is used
            f = getattr(f.__self__, f.__name__)
        f(*args)
    finally:
        for obj, name, old, setter in reversed(patches):
            setter(obj, name, old)
    return original, calls


_CAPTURED: dict = {}


def captured(key):
    if key not in _CAPTURED:
        _CAPTURED[key] = capture(load(key[0]), key[1])
    return _CAPTURED[key]


# --- checks ------------------------------------------------------------------------------------


def _weights(value, rng):
    if isinstance(value, np.ndarray):
        return rng.standard_normal(value.shape)
    return float(rng.standard_normal())


def _weighted(original, kwargs, w):
    return lambda *a: float(np.sum(w * original(*a, **kwargs)))


def _perturbed(args, i, j, step):
    """``args`` with leaf ``j`` of argument ``i`` moved by ``step`` (an array or a float)."""
    leaves, unflatten = flatten(args[i])
    leaves = list(leaves)
    leaves[j] = leaves[j] + step
    return args[:i] + (unflatten(leaves),) + args[i + 1:]


def _check_structure(key, i, arg, cot):
    if not any(is_float_leaf(v) for v in flatten(arg)[0]):
        assert cot is None, f"{key}: argument {i} is not a float, its cotangent should be None"
        return
    a_leaves, a_build = flatten(arg)
    c_leaves, c_build = flatten(cot)
    assert len(a_leaves) == len(c_leaves), f"{key}: argument {i} has {len(a_leaves)} leaves, its cotangent {len(c_leaves)}"
    # same containers (dict keys in order, list lengths): rebuild each from the other's leaves
    assert repr(a_build(range(len(a_leaves)))) == repr(c_build(range(len(c_leaves)))), f"{key}: argument {i} structure"
    for v, c in zip(a_leaves, c_leaves):
        if isinstance(v, np.ndarray):
            assert isinstance(c, np.ndarray), f"{key}: argument {i}: cotangent is {type(c).__name__}, not an ndarray"
            assert c.shape == v.shape and c.dtype == v.dtype, f"{key}: argument {i}: {c.shape} {c.dtype} vs {v.shape} {v.dtype}"
        else:
            assert is_float_leaf(v), f"{key}: argument {i}: a non-float leaf {type(v).__name__} in a float container"
            assert isinstance(c, (float, np.floating)) and np.ndim(c) == 0, f"{key}: argument {i}: cotangent {c!r}"


def _check_value(key, value, expected):
    if isinstance(expected, np.ndarray):
        assert isinstance(value, np.ndarray), f"{key}: value is {type(value).__name__}, the original's an ndarray"
        assert value.shape == expected.shape and value.dtype == expected.dtype, key
    else:
        assert isinstance(expected, (float, np.floating)), type(expected)
        assert isinstance(value, (float, np.floating)) and np.ndim(value) == 0, f"{key}: value {value!r}"
    # the same descriptor (float vs f64, layout): what the engine dispatches the callers' next calls on
    assert signature_key((value,), {}) == signature_key((expected,), {}), f"{key}: value {signature_key((value,), {})}"
    np.testing.assert_allclose(value, expected, rtol=1e-12, err_msg=str(key))


@pytest.mark.parametrize("key", KEYS, ids=lambda k: f"{k[0]}:{k[1]}")
def test_reference_rule(key):
    original, calls = captured(key)
    assert calls, f"{key}: the script never calls {key[1]}"
    rng = np.random.default_rng(0)
    for args, kwargs, _ in calls:
        check_call(key, original, args, kwargs, rng)


# Call forms the scripts do not make but the rules accept: optional arguments passed positionally.
OTHER_CALLS = {
    ("hmm_forward", "logsumexp"): lambda args, kwargs: [((args[0], kwargs["axis"]), {})],
    ("hmm_forward", "log_softmax"): lambda args, kwargs: [((args[0], 0), {})],
    ("bayes_logreg", "standardise"): lambda args, kwargs: [((args[0], 3.0, 1e-3), {}), ((args[0],), {"eps": 0.5})],
    ("batchnorm_mlp", "var"): lambda args, kwargs: [((args[0], 1), {}), ((args[0],), {}), ((args[0], -1, None, None, 1), {}),
                                                   ((args[0],), {"axis": (0, 1), "ddof": 1, "keepdims": True}),
                                                   ((args[0],), {"axis": 0, "keepdims": True})],
    ("kron_view_sum", "triu"): lambda args, kwargs: [((args[0], 1), {}), ((args[0],), {"k": -2}),
                                                     ((np.asfortranarray(args[0][:, :7]), 3), {})],
    # the axis positionally, negative, a shift past the length, no axis (flattened), tuples of shifts and axes
    ("stencil_roll", "roll"): lambda args, kwargs: [((args[0], 2, 1), {}), ((args[0], -50), {"axis": -1}),
                                                    ((args[0], 7), {}), ((args[0], (1, -3)), {"axis": (0, 1)}),
                                                    ((np.asfortranarray(args[0]), 5), {"axis": 0})],
}


@pytest.mark.parametrize("key", sorted(OTHER_CALLS), ids=lambda k: f"{k[0]}:{k[1]}")
def test_reference_rule_other_call_forms(key):
    original, calls = captured(key)
    rng = np.random.default_rng(1)
    for args, kwargs in OTHER_CALLS[key](*calls[0][:2]):
        check_call(key, original, args, kwargs, rng)


def _forced(cots):
    """The cotangents with every thunk called (docs/rules.md: the engine calls a traced
    argument's only; here every one is checked)."""
    return tuple(c() if callable(c) else c for c in cots) if isinstance(cots, tuple) else cots


def check_call(key, original, args, kwargs, rng):
    """The rule's value, cotangent structure and cotangents (central differences) on one call."""
    rule = REFERENCE[key]
    h = 1e-6
    before = copy.deepcopy(args)
    expected = original(*args, **kwargs)
    value, pullback = rule(*args, **kwargs)
    _check_value(key, value, expected)
    w = _weights(expected, rng)
    cots = _forced(pullback(w))
    assert isinstance(cots, tuple) and len(cots) == len(args), f"{key}: {len(cots)} cotangents for {len(args)} arguments"
    for i, (arg, cot) in enumerate(zip(args, cots)):
        _check_structure(key, i, arg, cot)
    for b, a in zip(flatten(list(before))[0], flatten(list(args))[0]):
        if isinstance(b, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=f"{key}: an input was modified")
    if isinstance(expected, np.ndarray):  # a read-only broadcast cotangent (np.sum's) gives the same result
        c0 = float(rng.standard_normal())
        for a, b in zip(flatten(list(_forced(pullback(np.broadcast_to(c0, expected.shape)))))[0],
                        flatten(list(_forced(pullback(np.full(expected.shape, c0)))))[0]):
            if b is not None:  # (rounding apart: sums that cancel to ~0 are summed in another order)
                np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * (1.0 + np.max(np.abs(b))),
                                           err_msg=f"{key}: broadcast cotangent")
    F = _weighted(original, kwargs, w)
    scale = 1.0 + abs(F(*args))
    for i, arg in enumerate(args):
        leaves = flatten(arg)[0]
        for j, v in enumerate(leaves):
            if not is_float_leaf(v):
                continue
            c = flatten(cots[i])[0][j]
            # random unit directions, and the cotangent's own (the most sensitive to a wrong scale)
            directions = [1.0] if np.ndim(v) == 0 else list(rng.standard_normal((3,) + v.shape)) + [c]
            directions = [d / np.linalg.norm(d) for d in directions if np.linalg.norm(d) > 0]
            for d in directions:
                fd = (F(*_perturbed(args, i, j, h * d)) - F(*_perturbed(args, i, j, -h * d))) / (2 * h)
                ad = float(np.sum(c * d))
                assert abs(fd - ad) <= 1e-5 * abs(ad) + 1e-8 * scale, \
                    f"{key}: argument {i} leaf {j}: pullback {ad!r}, finite differences {fd!r}"


# --- served by the engine ---------------------------------------------------------------------


def _instrumented(stem: str):
    """The script compiled as `adcli profile` compiles it: every function a dispatch point."""
    name = _modname(stem)
    inst = types.ModuleType(name)
    inst.__file__ = str(PROFILES / f"{stem}.py")
    sys.modules[name] = inst
    exec(instrument((PROFILES / f"{stem}.py").read_bytes(), inst.__file__), inst.__dict__)
    return inst


@pytest.mark.parametrize("key", KEYS, ids=lambda k: f"{k[0]}:{k[1]}")
def test_served_by_the_engine(key):
    """Registered for the instrumented script's function (for each call form the script makes),
    the rule serves the traced calls and the program's gradient equals the derived one."""
    stem, qualname = key
    original, calls = captured(key)
    inst = _instrumented(stem)
    served = []

    def counting(*a, **k):
        served.append(1)
        return REFERENCE[key](*a, **k)

    target = original if isinstance(original, np.ufunc) or getattr(original, "__module__", "") == "numpy" \
        else f"{inst.__name__}:{qualname}"
    registered = []
    try:
        args = inst.inputs()
        vg = adcli.value_and_grad(inst.f, argnums=inst.ARGNUMS)
        derived_value, derived = vg(*args)
        for form in {types_ for _, _, types_ in calls}:
            register(target, form, counting)
            registered.append(form)
        value, grads = vg(*args)
    finally:
        for form in registered:  # only these: a NumPy callable keeps any other rule it has
            unregister(target, form)
        sys.modules.pop(inst.__name__, None)
    if not served:
        # the script calls it with no traced argument (bayes_logreg's standardise of the data): a rule never serves it
        assert stem == "bayes_logreg" and qualname == "standardise", f"{key}: the rule never served a call"
        return
    np.testing.assert_allclose(value, derived_value, rtol=1e-10)
    for a, b in zip(flatten(grads)[0], flatten(derived)[0]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9, err_msg=str(key))
