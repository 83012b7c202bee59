"""The verified list: every derived NumPy function against finite differences, for the
arguments and ranks its ``accepts`` admits; and the guards that make derivation fail loudly."""

import numpy as np
import pytest

import adcli
from adcli.engine.derive import Derivation, TracedArray
from adcli.engine.registry import REGISTRY
from adcli.errors import NoRuleError, UnsupportedError
from adcli.testing import check_grad

rng = np.random.default_rng(42)
A = rng.standard_normal((4, 3))
B = rng.standard_normal((2, 5))
S = rng.standard_normal((4, 4))
V = rng.standard_normal(5)
W = np.abs(V) + 1.0
X40 = rng.standard_normal((8, 6))

CASES = {
    "kron_2d": (lambda a, b: np.sum(np.sin(np.kron(a, b))), (A, B), (0, 1)),
    "kron_1d": (lambda a, b: np.sum(np.kron(a, b) ** 2), (V, V[:3]), (0, 1)),
    "kron_view_triu": (lambda a, b: np.sum(np.kron(a[0:3, 0:2], np.triu(b))), (X40, S), (0, 1)),
    "kron_one_constant": (lambda a: np.sum(np.kron(a, B) ** 2), (A,), 0),
    "kron_ranks_1_2": (lambda a, b: np.sum(np.kron(a, b) * np.arange(30).reshape(2, 15)), (V[:3], B), (0, 1)),
    "kron_ranks_2_1": (lambda a, b: np.sum(np.kron(a, b) ** 2), (A, V[:2]), (0, 1)),
    "kron_ranks_1_3": (lambda a, b: np.sum(np.sin(np.kron(a, b))), (V[:2], rng.standard_normal((2, 1, 3))), (0, 1)),
    "kron_scalar": (lambda a, b: np.sum(np.kron(a, b) ** 2), (np.float64(1.5), V), (0, 1)),
    "trace": (lambda a: np.trace(a) ** 2, (S,), 0),
    "trace_offset": (lambda a: np.trace(a, 1) ** 2 + np.trace(a, -1), (A,), 0),
    "trace_method": (lambda a: a.trace() ** 2, (S,), 0),
    "triu": (lambda a: np.sum(np.triu(a, 1) ** 2), (S,), 0),
    "triu_batched": (lambda a: np.sum(np.triu(a) ** 3), (rng.standard_normal((2, 3, 3)),), 0),
    "tril": (lambda a: np.sum(np.tril(a, -1) ** 2), (A,), 0),
    "diag_2d": (lambda a: np.sum(np.diag(a) ** 2), (S,), 0),
    "diag_2d_offset": (lambda a: np.sum(np.diag(a, -1) ** 3), (A,), 0),
    "diag_1d": (lambda a: np.sum(np.sin(np.diag(a, 1)) * np.arange(36).reshape(6, 6)), (V,), 0),
    "outer": (lambda a, b: np.sum(np.outer(a, b) ** 2 * np.arange(15).reshape(5, 3)), (V, V[:3]), (0, 1)),
    "outer_2d_input": (lambda a: np.sum(np.outer(a, a) ** 3), (A,), 0),
    "var": (lambda a: np.var(a), (A,), 0),
    "var_axis_ddof": (lambda a: np.sum(np.var(a, axis=0, ddof=1) ** 2), (A,), 0),
    "var_keepdims": (lambda a: np.sum(np.var(a, axis=1, keepdims=True) * A), (A,), 0),
    "std_axis": (lambda a: np.sum(np.std(a, axis=1)), (A,), 0),
    "std_method": (lambda a: a.std(), (A,), 0),
    "var_method_axis": (lambda a: np.sum(a.var(axis=0)), (A,), 0),
    "average_weighted": (lambda a, w: np.average(a, weights=w), (V, W), (0, 1)),
    "average_axis": (lambda a: np.sum(np.average(a, axis=0) ** 2), (A,), 0),
    "polyval_x": (lambda x: np.sum(np.polyval(np.array([1.0, -2.0, 3.0, 0.5]), x)), (V,), 0),
    "cov": (lambda a: np.sum(np.cov(a) ** 2), (A,), 0),
    "cov_rowvar": (lambda a: np.sum(np.cov(a, rowvar=False) ** 2), (A,), 0),
    "diff": (lambda a: np.sum(np.diff(a, 2) ** 2), (V,), 0),
    "diff_axis": (lambda a: np.sum(np.diff(a, axis=0) ** 2), (A,), 0),
    "ediff1d": (lambda a: np.sum(np.ediff1d(a) ** 2), (A,), 0),
    "trapezoid": (lambda a: np.trapezoid(a ** 2, dx=0.5), (V,), 0),
    "trapezoid_x": (lambda a, x: np.trapezoid(a ** 2, x=x), (V, np.cumsum(W)), (0, 1)),
    "flip": (lambda a: np.sum(np.flip(a, 0) * A), (A,), 0),
    "fliplr_flipud": (lambda a: np.sum(np.fliplr(a) * A + np.flipud(a) ** 2), (A,), 0),
    "rot90": (lambda a: np.sum(np.rot90(a) * A.T), (A,), 0),
    "roll": (lambda a: np.sum(np.roll(a, 2) * V), (V,), 0),
    "roll_axis": (lambda a: np.sum(np.roll(a, -1, axis=1) * A), (A,), 0),
    "tile": (lambda a: np.sum(np.tile(a, (2, 3)) ** 2 * np.arange(30).reshape(2, 15)), (V,), 0),
    "hstack": (lambda a: np.sum(np.hstack([a, a ** 2]) ** 2), (V,), 0),
    "vstack": (lambda a: np.sum(np.vstack([a, a ** 2]) ** 3), (V,), 0),
    "column_stack": (lambda a: np.sum(np.column_stack([a, a ** 2]) ** 3), (V,), 0),
    "append": (lambda a: np.sum(np.append(a, a ** 2) ** 3), (V,), 0),
    "sinc": (lambda a: np.sum(np.sinc(a)), (V,), 0),
    "repeat": (lambda a: np.sum(np.repeat(a, 3) ** 2 * np.arange(15)), (V,), 0),
    "repeat_axis": (lambda a: np.sum(np.repeat(a, [1, 2, 0, 3], axis=0) ** 2), (A,), 0),
    "take": (lambda a: np.sum(np.take(a, [0, 0, 2], axis=1) ** 2), (A,), 0),
    "diagonal": (lambda a: np.sum(np.diagonal(a, 1) ** 2), (rng.standard_normal((2, 4, 5)),), 0),
    "split": (lambda a: sum(np.sum(p ** 2 * (i + 1)) for i, p in enumerate(np.split(a, [1, 4], axis=1))), (X40,), 0),
    "array_split": (lambda a: sum(np.sum(p ** 3 * (i + 1)) for i, p in enumerate(np.array_split(a, 4))), (V,), 0),
    "hsplit_vsplit": (lambda a: sum(np.sum(p ** 2 * (i + 1)) for i, p in enumerate(np.hsplit(a, 3) + np.vsplit(a, 2))),
                      (X40,), 0),
    "dsplit": (lambda a: sum(np.sum(p ** 3 * (i + 1)) for i, p in enumerate(np.dsplit(a, 2))),
               (rng.standard_normal((2, 3, 4)),), 0),
    "rollaxis": (lambda a: np.sum(np.rollaxis(a, 2) * np.arange(24).reshape(4, 2, 3)), (rng.standard_normal((2, 3, 4)),), 0),
    "atleast_3d": (lambda a: np.sum(np.atleast_3d(a) ** 3), (A,), 0),
    "gradient": (lambda a: sum(np.sum(g ** 2 * (i + 1)) for i, g in enumerate(np.gradient(a))), (X40,), 0),
    "gradient_spacing": (lambda a: np.sum(np.gradient(a, 0.5, edge_order=2) ** 2), (V,), 0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_derivation_matches_finite_differences(name):
    f, args, argnums = CASES[name]
    check_grad(f, *args, argnums=argnums)


@pytest.mark.parametrize("name", ["kron_2d", "triu", "var_axis_ddof", "outer", "cov"])
def test_derivation_float32(name):
    f, args, argnums = CASES[name]
    args32 = tuple(a.astype(np.float32) for a in args)
    check_grad(f, *args32, argnums=argnums)


def test_derived_functions_are_registered_as_derivations():
    for func in (np.kron, np.trace, np.triu, np.tril, np.outer, np.var, np.std, np.polyval, np.cov, np.diff):
        assert REGISTRY[func].derivation is not None, func


def test_polyval_with_traced_coefficients_is_refused():
    with pytest.raises(NoRuleError, match=r"numpy\.polyval\(f64\[1d\], f64\[1d\]\).*only with respect to x"):
        adcli.grad(lambda p: np.sum(np.polyval(p, V)))(np.array([1.0, 2.0]))


def test_kron_of_unequal_ranks_has_numpys_value_and_layout():
    ref = np.kron(V[:3], B)
    seen = {}

    def f(a):
        seen["out"] = np.kron(a, B).value
        return np.sum(seen["out"])

    adcli.grad(f)(V[:3])
    assert seen["out"].shape == ref.shape and seen["out"].strides == ref.strides and np.array_equal(seen["out"], ref)


def test_body_that_loses_track_is_an_error():
    # np.outer's body calls asarray; derived *without* keeping asarray traced, its result
    # comes back untraced, which must be an error rather than a zero gradient.
    unpatched = Derivation(np.outer)
    with pytest.raises(UnsupportedError, match="untraced result"):
        adcli.grad(lambda a: np.sum(unpatched((a, a), {})))(V)


def test_body_making_an_array_by_an_unseen_route_is_an_error():
    def body(a):
        return np.array(a, copy=True, subok=True) * 2.0

    def fake(a):
        return body(a)

    fake._implementation = body
    derivation = Derivation(fake)
    with pytest.raises(UnsupportedError, match="route the engine cannot follow"):
        adcli.grad(lambda a: np.sum(derivation((a,), {})))(V)


def test_traced_array_escapes_raise():
    def body(a):
        return float(a[0]) * a

    def fake(a):
        return body(a)

    fake._implementation = body
    derivation = Derivation(fake)
    with pytest.raises(UnsupportedError, match=r"float\(\)"):
        adcli.grad(lambda a: np.sum(derivation((a,), {})))(V)


def test_asarray_patch_is_restored_and_transparent():
    real = np.asarray
    adcli.grad(lambda a: np.sum(np.outer(a, a)))(V)
    assert np.asarray is real
    # while patched, plain inputs behave exactly as with NumPy's own asarray
    assert not isinstance(np.outer(V, V), TracedArray)


def test_derived_gradient_equals_hand_computed():
    # d/dx sum(triu(x)) is the upper-triangle mask; d/dx trace(x) the identity.
    g = adcli.grad(lambda a: np.sum(np.triu(a)))(S)
    np.testing.assert_array_equal(g, np.triu(np.ones((4, 4))))
    g = adcli.grad(lambda a: np.trace(a))(S)
    np.testing.assert_array_equal(g, np.eye(4))
