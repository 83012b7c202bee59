"""Importing autograd's rules: the catalog, import_rule's verification (finite differences and
agreement with adcli's native/derived rule), the imported rules serving the engine, and the
documented quirks and refusals."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.special as ss  # a test dependency (pyproject.toml [test]): its rules are always tested

import adcli
from adcli.engine.core import Primitive
from adcli.engine.registry import FAST_UFUNCS, UFUNCS
from adcli.errors import RuleError
from adcli.rules import register, rules_for, unregister
from adcli.rules.autograd_catalog import catalog, find, summary
from adcli.rules.autograd_import import import_rule, imported_rules, unimport
from adcli.testing import GradientMismatch, check_grad, compare_gradients
from tests.support.recorder import recording

F1, F2 = "f64[1d]", "f64[2d]"


@pytest.fixture(autouse=True)
def no_rules_left_behind():
    yield
    unimport()  # every imported rule, even from a failed test
    for f in (np.kron, np.sin):
        unregister(f)


def served_by(rule, fn):
    """Run ``fn`` (which computes one gradient) and say whether ``rule`` made a tape node."""
    out, tapes = recording(fn)
    nodes = [n for tape in tapes for n in tape.nodes]
    return out, any(isinstance(n, tuple) and len(n) > 1 and n[1] is rule for n in nodes)


def rng(seed=5):
    return np.random.default_rng(seed)


def mat(m, n, seed=5):
    r = rng(seed)
    a = r.standard_normal((m, n)) / np.sqrt(max(m, n))
    return a + 2.0 * np.eye(m, n) if m == n else a


def readout(y):
    """A weighted nonlinear sum: a misplaced or mis-scaled cotangent cannot pass."""
    w = np.random.default_rng(17).uniform(0.5, 1.5, np.shape(y))
    return np.sum(w * y) + 0.1 * np.sum(y * y)


def pos(*shape, seed=5):
    return rng(seed).uniform(0.5, 2.0, shape)


def unit(*shape, seed=5):
    return rng(seed).uniform(-0.8, 0.8, shape)


def normal(*shape, seed=5):
    return rng(seed).standard_normal(shape)


def away0(*shape, seed=5):
    r = rng(seed)
    return r.choice([-1.0, 1.0], shape) * r.uniform(0.5, 2.0, shape)


def distinct(n, seed=5):
    return rng(seed).permutation(n) * 0.5 + 0.2


def spd(n, seed=5):
    b = rng(seed).standard_normal((n, n))
    return b @ b.T / n + np.eye(n)


# (callable, declared types, the engine-use call's arguments, argnums). The call's sizes differ
# from verification's (4 and 4x4): a rule for a descriptor serves every size.
CASES = [
    (np.negative, [F1], lambda: (normal(6),), 0),
    (np.absolute, [F2], lambda: (away0(3, 5),), 0),
    (np.fabs, [F1], lambda: (away0(6),), 0),
    (np.reciprocal, [F1], lambda: (away0(6),), 0),
    (np.exp, [F2], lambda: (normal(3, 5),), 0),
    (np.exp2, [F1], lambda: (normal(6),), 0),
    (np.expm1, [F1], lambda: (normal(6),), 0),
    (np.log, [F1], lambda: (pos(6),), 0),
    (np.log2, [F1], lambda: (pos(6),), 0),
    (np.log10, [F1], lambda: (pos(6),), 0),
    (np.log1p, [F1], lambda: (pos(6),), 0),
    (np.sin, [F1], lambda: (normal(6),), 0),
    (np.cos, [F2], lambda: (normal(3, 5),), 0),
    (np.tan, [F1], lambda: (unit(6),), 0),
    (np.arcsin, [F1], lambda: (unit(6),), 0),
    (np.arccos, [F1], lambda: (unit(6),), 0),
    (np.arctan, [F1], lambda: (normal(6),), 0),
    (np.sinh, [F1], lambda: (normal(6),), 0),
    (np.cosh, [F1], lambda: (normal(6),), 0),
    (np.tanh, [F1], lambda: (normal(6),), 0),
    (np.arcsinh, [F1], lambda: (normal(6),), 0),
    (np.arccosh, [F1], lambda: (pos(6) + 1.0,), 0),
    (np.arctanh, [F1], lambda: (unit(6),), 0),
    (np.deg2rad, [F1], lambda: (normal(6),), 0),
    (np.rad2deg, [F1], lambda: (normal(6),), 0),
    (np.square, [F1], lambda: (normal(6),), 0),
    (np.sqrt, [F1], lambda: (pos(6),), 0),
    (np.exp, ["float"], lambda: (0.3,), 0),
    (np.add, [F1, F1], lambda: (normal(6), normal(6, seed=6)), (0, 1)),
    (np.multiply, [F2, F2], lambda: (normal(3, 5), normal(3, 5, seed=6)), (0, 1)),
    (np.subtract, [F1, F1], lambda: (normal(6), normal(6, seed=6)), (0, 1)),
    (np.divide, [F1, F1], lambda: (normal(6), away0(6, seed=6)), (0, 1)),
    (np.maximum, [F1, F1], lambda: (normal(6), normal(6) + away0(6, seed=6)), (0, 1)),
    (np.minimum, [F1, F1], lambda: (normal(6), normal(6) + away0(6, seed=6)), (0, 1)),
    (np.logaddexp, [F1, F1], lambda: (normal(6), normal(6, seed=6)), (0, 1)),
    (np.power, [F1, F1], lambda: (pos(6), normal(6, seed=6)), (0, 1)),
    (np.arctan2, [F1, F1], lambda: (normal(6), normal(6, seed=6)), (0, 1)),
    (np.hypot, [F1, F1], lambda: (normal(6), normal(6, seed=6)), (0, 1)),
    (np.kron, [F2, F2], lambda: (mat(2, 3), mat(3, 2, seed=6)), (0, 1)),
    (np.outer, [F1, F1], lambda: (normal(3), normal(5, seed=6)), (0, 1)),
    (np.matmul, [F2, F2], lambda: (mat(3, 4), mat(4, 2, seed=6)), (0, 1)),
    (np.dot, [F2, F1], lambda: (mat(3, 4), normal(4, seed=6)), (0, 1)),
    (np.inner, [F1, F1], lambda: (normal(5), normal(5, seed=6)), (0, 1)),
    (np.tensordot, [F2, F2], lambda: (mat(3, 4), mat(3, 4, seed=6)), (0, 1)),
    (np.einsum, ["str", F2, F2], lambda: ("ij,jk->ik", mat(3, 4), mat(4, 2, seed=6)), (1, 2)),
    (np.sum, [F2, "axis=int"], None, 0),  # called with axis=: see test_keyword_rules below
    (np.mean, [F2], lambda: (mat(3, 5),), 0),
    (np.prod, [F1], lambda: (away0(5),), 0),
    (np.var, [F2], lambda: (mat(3, 5),), 0),
    (np.std, [F2], lambda: (mat(3, 5),), 0),
    (np.max, [F2], lambda: (distinct(15).reshape(3, 5),), 0),
    (np.amin, [F1], lambda: (distinct(7),), 0),
    (np.cumsum, [F1], lambda: (normal(6),), 0),
    (np.sort, [F1], lambda: (distinct(7),), 0),
    (np.transpose, [F2], lambda: (mat(3, 5),), 0),
    (np.reshape, [F2, "tuple(int, int)"], lambda: (mat(3, 4), (2, 6)), 0),
    (np.ravel, [F2], lambda: (mat(3, 4),), 0),
    (np.roll, [F1, "int"], lambda: (normal(6), 2), 0),
    (np.repeat, [F1, "int"], lambda: (normal(4), 3), 0),
    (np.tile, [F1, "int"], lambda: (normal(4), 3), 0),
    (np.expand_dims, [F1, "int"], lambda: (normal(4), 0), 0),
    (np.squeeze, [F2], lambda: (normal(1, 5),), 0),
    (np.swapaxes, [F2, "int", "int"], lambda: (mat(3, 5), 0, 1), 0),
    (np.flipud, [F2], lambda: (mat(3, 5),), 0),
    (np.fliplr, [F2], lambda: (mat(3, 5),), 0),
    (np.rot90, [F2], lambda: (mat(3, 5),), 0),
    (np.triu, [F2], lambda: (mat(4, 4),), 0),
    (np.tril, [F2], lambda: (mat(4, 4),), 0),
    (np.trace, [F2], lambda: (mat(4, 4),), 0),
    (np.diag, [F1], lambda: (normal(4),), 0),
    (np.diff, [F1], lambda: (normal(6),), 0),
    (np.gradient, [F1], lambda: (normal(8),), 0),
    (np.cross, [F1, F1], lambda: (normal(3), normal(3, seed=6)), (0, 1)),
    (np.where, ["b[1d]", F1, F1], lambda: (rng().random(6) > 0.5, normal(6), normal(6, seed=6)), (1, 2)),
    (np.clip, [F1, "float", "float"], lambda: (np.array([-1.2, -0.3, 0.1, 0.4, 0.9]), -0.5, 0.5), 0),
    (np.sinc, [F1], lambda: (away0(6),), 0),
    (np.fft.fftshift, [F1], lambda: (normal(7),), 0),
    (np.linspace, ["float", "float", "int"], lambda: (0.2, 1.9, 7), (0, 1)),
    (np.linalg.det, [F2], lambda: (mat(3, 3),), 0),
    (np.linalg.inv, [F2], lambda: (mat(3, 3),), 0),
    (np.linalg.pinv, [F2], lambda: (mat(3, 5),), 0),
    (np.linalg.solve, [F2, F1], lambda: (mat(3, 3), normal(3, seed=6)), (0, 1)),
    (np.linalg.norm, [F1], lambda: (normal(6),), 0),
]
if ss is not None:
    CASES += [
        (ss.erf, [F1], lambda: (normal(6),), 0),
        (ss.expit, [F1], lambda: (normal(6),), 0),
        (ss.logit, [F1], lambda: (rng().uniform(0.1, 0.9, 6),), 0),
        (ss.gammaln, [F1], lambda: (pos(6),), 0),
        (ss.psi, [F1], lambda: (pos(6),), 0),
        (ss.erfinv, [F1], lambda: (unit(6),), 0),
        (ss.i0, [F1], lambda: (normal(6),), 0),
        (ss.j0, [F1], lambda: (normal(6),), 0),
        (ss.betaln, [F1, F1], lambda: (pos(5), pos(5, seed=6)), (0, 1)),
        (ss.gammainc, [F1, F1], lambda: (pos(5), pos(5, seed=6)), 1),
        (ss.jn, ["int", F1], lambda: (2, pos(5)), 1),
    ]


def case_id(case):
    return f"{find(case[0]).name}({', '.join(case[1])})"


def test_at_least_40_distinct_functions_are_imported():
    assert len({find(c[0]).name for c in CASES}) >= 40


@pytest.mark.parametrize("case", [c for c in CASES if c[2] is not None], ids=case_id)
def test_imported_rule_is_verified_serves_the_engine_and_is_right(case):
    func, types, make_args, argnums = case
    rules = import_rule(func, *types)
    assert len(rules) == 1
    rule = rules[0]
    assert rule.source == "imported" and rule.origin.startswith("autograd ")
    assert rule.verification.startswith("finite differences")
    if find(func).status != "neither":
        assert "agrees with adcli's" in rule.verification
    assert rules_for(func)[tuple(types)] is rule

    args = make_args()
    _, used = served_by(rule, lambda: check_grad(lambda *a: readout(func(*a)), *args, argnums=argnums))
    assert used, f"{rule!r} did not serve the call"


def test_keyword_rules_serve_only_calls_with_those_keywords():
    [rule] = import_rule(np.sum, F2, "axis=int")
    assert rule.key == ("f64[2d]", "axis=int")
    x = mat(3, 5)
    _, used = served_by(rule, lambda: check_grad(lambda a: readout(np.sum(a, axis=0)), x))
    assert used
    _, used = served_by(rule, lambda: check_grad(lambda a: readout(np.sum(a, 0)), x))
    assert not used  # positional axis: another signature, served by the native rule
    _, used = served_by(rule, lambda: check_grad(lambda a: readout(np.sum(a)), x))
    assert not used


def test_keyword_types_in_any_order_and_values_passed_on():
    [rule] = import_rule(np.var, "f64[2d]", "ddof=int", "axis=int")
    assert rule.key == ("f64[2d]", "axis=int", "ddof=int")
    x = mat(4, 3)
    g, used = served_by(rule, lambda: check_grad(lambda a: readout(np.var(a, axis=1, ddof=0)), x))
    assert used


def test_scalar_and_zero_d_cotangents_are_cast_not_broadcast():
    [r1] = import_rule(np.sum, "f64[0d]")
    g = adcli.grad(lambda a: np.sum(a) * 3.0)(np.array(2.0))
    assert isinstance(g, np.ndarray) and g.shape == () and g.dtype == np.float64 and g == 3.0
    [r2] = import_rule(np.exp, "float")
    g = adcli.grad(lambda a: np.exp(a))(0.5)
    assert type(g) is float and g == pytest.approx(np.exp(0.5))
    # autograd's where returns a float64 cotangent for float32 input: cast to float32
    import_rule(np.where, "b[1d]", "f32[1d]", "f32[1d]")
    x = np.arange(4, dtype=np.float32)
    g = adcli.grad(lambda a: np.sum(np.where(x > 1, a, x)))(x)
    assert g.dtype == np.float32 and g.tolist() == [0, 0, 1, 1]


def test_wrong_shape_from_autograd_is_an_error_not_a_broadcast(monkeypatch):
    entry = find(np.kron)
    real = entry.vjpmaker

    def scalar_vjp(argnums, ans, args, kwargs):
        vjp = real(argnums, ans, args, kwargs)
        return lambda g: tuple(np.sum(c) for c in vjp(g))  # a scalar for a matrix argument

    [rule] = import_rule(np.kron, F2, F2)
    monkeypatch.setattr(entry, "vjpmaker", scalar_vjp)
    with pytest.raises(RuleError, match=r"shape \(\) for argument 0 of shape \(2, 2\).*no broadcasting"):
        adcli.grad(lambda a: np.sum(np.kron(a, a)))(np.ones((2, 2)))


def test_pullback_calls_autograd_at_every_reverse_pass(monkeypatch):
    entry = find(np.kron)
    real = entry.vjpmaker
    calls = []

    def counting(argnums, ans, args, kwargs):
        calls.append(argnums)
        return real(argnums, ans, args, kwargs)

    [rule] = import_rule(np.kron, F2, F2)
    monkeypatch.setattr(entry, "vjpmaker", counting)
    a, b = mat(2, 2), mat(3, 3, seed=6)
    for _ in range(3):
        adcli.grad(lambda x, y: np.sum(np.kron(x, y)), argnums=(0, 1))(a, b)
    adcli.grad(lambda y: np.sum(np.kron(a, y)))(b)
    assert calls == [(0, 1)] * 3 + [(1,)]  # only the traced arguments are asked for
    assert rule.served >= 4


# --- a wrong rule is caught -----------------------------------------------------------------


def doubled(real):
    def vjpmaker(argnums, ans, args, kwargs):
        vjp = real(argnums, ans, args, kwargs)
        return lambda g: tuple(2.0 * np.asarray(c) for c in vjp(g))

    return vjpmaker


NUMBERS = r"the rule (-?[0-9.e+-]+), finite differences (-?[0-9.e+-]+)"


@pytest.mark.parametrize("func", [np.kron] + ([ss.gammaln] if ss is not None else []), ids=lambda f: find(f).name)
def test_a_wrong_imported_rule_is_refused_naming_both_numbers(monkeypatch, func):
    entry = find(func)
    monkeypatch.setattr(entry, "vjpmaker", doubled(entry.vjpmaker))
    types = (F2, F2) if func is np.kron else (F1,)
    with pytest.raises(RuleError, match="disagrees with central finite differences") as info:
        import_rule(func, *types)
    m = re.search(NUMBERS, str(info.value))
    assert m, str(info.value)
    ours, fd = float(m.group(1)), float(m.group(2))
    assert ours == pytest.approx(2 * fd, rel=1e-4)
    assert rules_for(func) == {}  # removed again


def test_disagreement_with_the_native_rule_is_refused_naming_both_numbers(monkeypatch):
    # Make adcli's *native* sin rule wrong (twice the derivative): the imported rule passes
    # finite differences, then must be refused for disagreeing with the native rule.
    bad = Primitive("numpy.sin", np.sin, lambda g, ans, x: 2.0 * g * np.cos(x))
    monkeypatch.setitem(UFUNCS, np.sin, bad)
    monkeypatch.setitem(FAST_UFUNCS, np.sin, bad)
    with pytest.raises(RuleError, match="disagrees with adcli's native rule") as info:
        import_rule(np.sin, F1)
    m = re.search(r"the rule (-?[0-9.e+-]+), the native rule (-?[0-9.e+-]+)", str(info.value))
    assert m, str(info.value)
    assert float(m.group(2)) == pytest.approx(2 * float(m.group(1)), rel=1e-4)  # the native rule is the doubled one
    assert rules_for(np.sin) == {}


def test_compare_gradients_names_the_element_and_both_numbers():
    """The one gradient comparison (check_rule's, and so an import's verification's)."""
    a, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1.0, 2.0], [5.0, 4.0]])
    with pytest.raises(GradientMismatch, match=r"argument 1 \(y\) differs from the reference: worst component "
                                               r"\[1, 0\]: autograd 5, the reference 3") as info:
        compare_gradients("f(x, y)", [a], [b], "the reference", (1,), ["x", "y"], who=("autograd", "the reference"))
    assert info.value.against == "the reference"
    compare_gradients("f(x)", [np.array([1.0, 2.0])], [np.array([1.0, 2.0 + 1e-12])], "the reference", (0,), ["x"])


def test_failed_verification_restores_the_rule_it_replaced(monkeypatch):
    def kron_fwd(a, b):
        return np.kron(a, b), lambda g: (None, None)

    [mine] = register(np.kron, (F2, F2), kron_fwd)
    with pytest.raises(RuleError, match="already has a hand-written rule"):
        import_rule(np.kron, F2, F2)
    entry = find(np.kron)
    monkeypatch.setattr(entry, "vjpmaker", doubled(entry.vjpmaker))
    with pytest.raises(RuleError):
        import_rule(np.kron, F2, F2, replace=True)
    assert rules_for(np.kron) == {(F2, F2): mine}


def test_a_failed_union_member_removes_the_whole_import():
    # np.pad(x, 1, "constant") verifies; np.pad(x, 1, None) cannot: neither stays registered
    with pytest.raises(RuleError, match=r"numpy\.pad\(f64\[1d\], int, None\)"):
        import_rule(np.pad, F1, "int", ("str", "None"))
    assert rules_for(np.pad) == {}


# --- the catalog ------------------------------------------------------------------------------


def test_catalog_lists_autograds_rules_for_numpy_and_scipy():
    entries = catalog()
    names = [e.name for e in entries]
    assert len(entries) > 100 and len(names) == len(set(names))
    assert names == sorted(names)
    kron = find("numpy.kron")
    assert kron.func is np.kron and kron.argnums == (0, 1) and kron.status == "derived"
    assert kron.vjpmaker is __import__("autograd.core").core.primitive_vjps[kron.primitive]
    assert kron.primitive.fun is np.kron and "numpy_vjps.py" in kron.origin
    assert find(np.linalg.cholesky).name == "numpy.linalg.cholesky" and find(np.linalg.cholesky).native
    assert find("np.abs") is find(np.absolute) and "numpy.abs" in find(np.absolute).aliases
    assert find("numpy.where").argnums == (1, 2) and find("numpy.where").zero_argnums == (0,)
    assert find("numpy.einsum").argnums is None  # any position
    import autograd.numpy as anp

    assert find(anp.kron) is kron  # an autograd primitive finds its entry
    s = summary()
    assert s["entries"] == len(entries) == s["native"] + s["derived"] + s["neither"]
    assert not any(e.name.startswith("autograd") for e in entries)  # autograd's plumbing is left out


def test_catalog_names_scipy_rules_by_their_scipy_names():
    e = find(ss.gammaln)
    assert e.name == "scipy.special.gammaln" and e.status == "native" and e.importable  # engine/rules/scipy/special.py
    assert find("scipy.special.digamma") is find(ss.psi)
    # SciPy's Python functions with library dispatch points (engine.library) are importable
    assert find("scipy.special.logsumexp").dispatchable and find("scipy.special.logsumexp").status == "native"
    assert find("scipy.stats.norm.pdf").importable and find("scipy.stats.norm.pdf").status == "native"
    assert find("scipy.linalg.solve_banded").dispatchable and find("scipy.linalg.solve_banded").status == "native"
    assert not find("numpy.full").dispatchable and "nothing ever hands" in find("numpy.full").refusal


def test_unknown_function_raises_with_close_matches():
    with pytest.raises(RuleError, match=r"no rule for kronn; close matches: numpy\.kron"):
        find("kronn")
    with pytest.raises(RuleError, match=r"no rule for numpy\.linalg\.qr; close matches: .*numpy\.linalg\.norm"):
        import_rule(np.linalg.qr, F2)
    with pytest.raises(RuleError, match="close matches: numpy.linalg.cholesky"):
        find("numpy.linalg.choleski")


def test_unknown_descriptors_raise():
    with pytest.raises(RuleError, match="unknown dtype code 'float64'"):
        import_rule(np.exp, "float64[1d]")
    with pytest.raises(RuleError, match="unknown type descriptor 'array'"):
        import_rule(np.exp, "array")
    with pytest.raises(RuleError, match="unknown type descriptor 'integer'"):
        import_rule(np.sum, F2, "axis=integer")
    with pytest.raises(RuleError, match="descriptor strings"):
        import_rule(np.exp, np.float64)
    assert imported_rules() == []


# --- quirks and refusals ------------------------------------------------------------------------


def test_cholesky_is_verified_on_the_symmetric_subspace():
    [rule] = import_rule(np.linalg.cholesky, F2)
    assert "symmetric subspace" in rule.verification
    a = spd(4)
    f = lambda x: readout(np.linalg.cholesky(x))
    g_imported, used = served_by(rule, lambda: adcli.grad(f)(a))
    assert used
    unimport(rule)
    g_native = adcli.grad(f)(a)
    assert np.allclose(g_imported, g_imported.T)  # autograd: symmetrised gradient
    assert np.allclose(np.triu(g_native, 1), 0.0)  # adcli: the lower triangle NumPy reads
    assert not np.allclose(g_imported, g_native)
    sym = lambda g: (g + g.T) / 2
    assert np.allclose(sym(g_imported), sym(g_native))
    # through a symmetric construction both are the exact gradient
    b = mat(4, 4)
    h = lambda x: readout(np.linalg.cholesky(x @ x.T + np.eye(4)))
    import_rule(np.linalg.cholesky, F2)
    check_grad(h, b)


def test_svd_imports_only_without_uv():
    with pytest.raises(RuleError, match="compute_uv=False only"):
        import_rule(np.linalg.svd, F2)
    [rule] = import_rule(np.linalg.svd, F2, "compute_uv=bool")
    x = mat(3, 5)
    _, used = served_by(rule, lambda: check_grad(lambda a: readout(np.linalg.svd(a, compute_uv=False)), x))
    assert used
    with pytest.raises(RuleError, match="three arrays"):
        adcli.grad(lambda a: np.sum(np.linalg.svd(a, compute_uv=True)[1]))(x)


@pytest.mark.parametrize("func, why", [
    (np.linalg.eigh, "returns several arrays"),
    (np.linalg.slogdet, "returns several arrays"),
    (np.split, "returns several arrays"),
    (np.fft.fft, "complex"),
    (np.fft.rfft, "complex"),
    (np.full, "not a NumPy array function or ufunc"),
])
def test_functions_that_cannot_be_imported_are_refused(func, why):
    with pytest.raises(RuleError, match=why):
        import_rule(func, F2)


def test_scipy_python_functions_without_a_dispatch_point_are_refused_and_the_others_import():
    with pytest.raises(RuleError, match="nothing ever hands its traced arguments"):
        import_rule(np.full, "int", "float")
    [rule] = import_rule(ss.logsumexp, F1)
    try:
        _, used = served_by(rule, lambda: check_grad(lambda a: ss.logsumexp(a) * 1.5, normal(5)))
        assert used
    finally:
        unimport(rule)


def test_autograd_limitations_surface_at_verification():
    with pytest.raises(RuleError, match="make_diagonal only supports"):
        import_rule(np.diagonal, F2)  # default axes: autograd's VJP refuses
    [rule] = import_rule(np.diagonal, F2, "int", "int", "int")  # diagonal(x, 0, -1, -2) works
    check_grad(lambda a: readout(np.diagonal(a, 0, -1, -2)), mat(3, 3))
    with pytest.raises(RuleError, match="missing 1 required positional argument: 'mode'"):
        import_rule(np.pad, F1, "int")
    [rule] = import_rule(np.pad, F1, "int", "str")
    _, used = served_by(rule, lambda: check_grad(lambda a: readout(np.pad(a, 2, "constant")), normal(5)))
    assert used


def test_arguments_autograd_does_not_differentiate_raise_when_traced():
    import_rule(ss.gammainc, F1, F1)
    with pytest.raises(RuleError, match=r"no VJP for argument\(s\) 0; it differentiates argument\(s\) 1 only"):
        adcli.grad(lambda a, x: np.sum(ss.gammainc(a, x)), argnums=(0, 1))(pos(3), pos(3))
    import_rule(ss.jn, "float", F1)  # jv's order: autograd says zero, which is wrong
    with pytest.raises(RuleError, match="as zero"):
        adcli.grad(lambda v, x: np.sum(ss.jn(v, x)), argnums=(0, 1))(2.0, pos(3))
    g = adcli.grad(lambda x: np.sum(ss.jn(2.0, x)))(pos(3))
    assert np.allclose(g, (ss.jv(1, pos(3)) - ss.jv(3, pos(3))) / 2)


def test_traced_keyword_arguments_raise_instead_of_losing_their_gradient():
    import_rule(np.clip, F1, "a_max=float", "a_min=float", example_kwargs={"a_min": -0.5, "a_max": 0.5})
    x = np.array([-1.0, 0.0, 1.0])
    g = adcli.grad(lambda a: np.sum(np.clip(a, a_min=-0.5, a_max=0.5)))(x)
    assert g.tolist() == [0.0, 1.0, 0.0]
    with pytest.raises(RuleError, match="keyword argument a_min= is traced"):
        adcli.grad(lambda a, lo: np.sum(np.clip(a, a_min=lo, a_max=0.5)), argnums=(0, 1))(x, -0.5)


def test_ufuncs_take_no_keyword_types_and_nothing_float_is_refused():
    with pytest.raises(RuleError, match="ufunc"):
        import_rule(np.sin, F1, "dtype=None")
    with pytest.raises(RuleError, match="nothing to import"):
        import_rule(np.roll, "i64[1d]", "int")


def test_unions_and_layouts():
    rules = import_rule(np.kron, (F2, "f64[2d,F]"), "f64[2d,strided]")
    assert [r.key for r in rules] == [(F2, "f64[2d,strided]"), ("f64[2d,F]", "f64[2d,strided]")]
    a = np.asfortranarray(mat(2, 3))
    b = mat(6, 4)[::2, ::2]
    _, used = served_by(rules[1], lambda: check_grad(lambda x, y: readout(np.kron(x, y)), a, b, argnums=(0, 1)))
    assert used
    with pytest.raises(RuleError, match="example_args have types"):
        import_rule(np.exp, F1, example_args=(mat(2, 2),))


def test_verify_false_registers_without_checking():
    [rule] = import_rule(np.gradient, F1, verify=False)
    assert rule.verification.startswith("not verified")
    check_grad(lambda a: readout(np.gradient(a)), normal(9))
