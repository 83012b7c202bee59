"""Contractions against finite differences: matmul / @, dot, vdot, inner, tensordot, einsum,
vecdot / matvec / vecmat, np.linalg.matmul / vecdot / tensordot, multi_dot, matrix_power.
Every case differentiates each operand alone and both together, in float64 and float32."""

from __future__ import annotations

import numpy as np
import pytest

import adcli
from adcli.engine.core import Tracer
from adcli.engine.rules import contractions as rules_contract
from adcli.errors import UnsupportedError
from adcli.testing import check_grad


def arr(shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def readout(y):
    """A nonlinear weighted sum with distinct weights: a cotangent routed to the wrong entry,
    or transposed, cannot pass."""
    y = np.sin(y)
    if np.ndim(y) == 0:
        return y * 1.7
    w = np.random.default_rng(99).uniform(0.5, 1.5, np.shape(y)).astype(np.result_type(y))
    return np.sum(y * w)


def check_binary(op, sa, sb, dtype=np.float64):
    """Check d/da, d/db and both at once (the other operand constant in the first two)."""
    a, b = arr(sa, 1, dtype), arr(sb, 2, dtype)
    f = lambda a, b: readout(op(a, b))
    ga = check_grad(f, a, b, argnums=0)
    gb = check_grad(f, a, b, argnums=1)
    gab = check_grad(f, a, b, argnums=(0, 1))
    np.testing.assert_allclose(gab[0], ga, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gab[1], gb, rtol=1e-5, atol=1e-6)


DTYPES = [np.float64, np.float32]

MATMUL_SHAPES = [
    ((3, 4), (4, 5)),
    ((4,), (4, 5)),
    ((3, 4), (4,)),
    ((4,), (4,)),
    ((2, 3, 4), (4, 5)),
    ((3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),  # batch dimensions broadcast both ways
    ((4,), (2, 4, 3)),
    ((2, 3, 4), (4,)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul(sa, sb, dtype):
    check_binary(np.matmul, sa, sb, dtype)
    check_binary(lambda a, b: a @ b, sa, sb, dtype)


def test_matmul_plain_left_operand_and_mixed_dtypes():
    a, b = arr((3, 4), 1), arr((4, 2), 2, np.float32)
    check_grad(lambda b: readout(a @ b), b)  # ndarray.__matmul__ defers to the tracer
    g = check_grad(lambda a, b: readout(a @ b), a, b, argnums=(0, 1))
    assert g[0].dtype == np.float64 and g[1].dtype == np.float32


def test_matmul_same_tracer_twice():
    a = arr((3, 3))
    check_grad(lambda a: readout(a @ a @ a), a)
    check_grad(lambda a: readout(a.T @ a), a)


def test_linalg_matmul():
    check_binary(np.linalg.matmul, (2, 3, 4), (4, 2))


DOT_SHAPES = [
    ((), (3,)),
    ((2, 3), ()),
    ((4,), (4,)),
    ((3, 4), (4,)),
    ((4,), (4, 3)),
    ((3, 4), (4, 2)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 4, 3)),
    ((2, 3, 4), (4, 5)),
    ((2, 3, 4), (5, 4, 2)),  # N-d x M-d: last axis of a with the second-to-last of b
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sa,sb", DOT_SHAPES)
def test_dot(sa, sb, dtype):
    check_binary(np.dot, sa, sb, dtype)


def test_dot_method_and_python_scalar():
    a, b = arr((3, 4), 1), arr((4,), 2)
    check_grad(lambda a: readout(a.dot(b)), a)
    check_grad(lambda s: readout(np.dot(s, b)), 0.7)


@pytest.mark.parametrize("sa,sb", [((5,), (5,)), ((2, 3), (2, 3)), ((6,), (2, 3))])
def test_vdot(sa, sb):
    check_binary(np.vdot, sa, sb)
    check_binary(np.vdot, sa, sb, np.float32)


@pytest.mark.parametrize("sa,sb", [((4,), (4,)), ((3, 4), (4,)), ((2, 3, 4), (5, 4)), ((), (3,))])
@pytest.mark.parametrize("dtype", DTYPES)
def test_inner(sa, sb, dtype):
    check_binary(np.inner, sa, sb, dtype)


TENSORDOT_CASES = [
    ((3, 4), (4, 5), 1),
    ((2, 3, 4), (3, 4, 5), 2),
    ((3,), (4,), 0),  # outer product
    ((2, 3), (2, 3), 2),  # full contraction to a scalar
    ((2, 3, 4), (4, 2, 5), ([2, 0], [0, 1])),
    ((2, 3, 4), (3, 5, 2), ([0, 1], [2, 0])),  # pairs in non-sorted order
    ((3, 4, 2), (2, 3), ([-1, 0], [0, -1])),
    ((3, 4), (5, 4), (1, 1)),  # single ints
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sa,sb,axes", TENSORDOT_CASES)
def test_tensordot(sa, sb, axes, dtype):
    check_binary(lambda a, b: np.tensordot(a, b, axes), sa, sb, dtype)
    check_binary(lambda a, b: np.tensordot(a, b, axes=axes), sa, sb, dtype)


def test_linalg_tensordot():
    check_binary(lambda a, b: np.linalg.tensordot(a, b, axes=([1], [0])), (3, 4), (4, 2))


EINSUM_BINARY = [
    ("ij,jk->ik", (3, 4), (4, 5)),
    ("ij,jk", (3, 4), (4, 5)),  # implicit output
    ("ij,kj->ki", (3, 4), (5, 4)),
    ("i,i", (4,), (4,)),
    ("i,j->ij", (3,), (4,)),
    ("ij,ij->ij", (1, 3), (4, 3)),  # size-1 dimension broadcast against a label
    ("...ij,...jk->...ik", (2, 3, 4), (5, 1, 4, 2)),  # ellipses of different lengths
    ("bij,bjk->bik", (2, 3, 4), (2, 4, 3)),
    ("ii,ij->j", (3, 3), (3, 4)),  # a diagonal inside one operand
    ("ij,jk->", (3, 4), (4, 2)),
    ("ik,jl->", (2, 3), (4, 5)),  # a letter only one operand has
    (",ij->ij", (), (2, 3)),
    ("i...,...->i...", (3, 2), (2,)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("subs,sa,sb", EINSUM_BINARY)
def test_einsum_binary(subs, sa, sb, dtype):
    check_binary(lambda a, b: np.einsum(subs, a, b), sa, sb, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("subs,sa,sb", EINSUM_BINARY)
def test_einsum_binary_with_planned_pullbacks(subs, sa, sb, dtype, monkeypatch):
    # Large pullbacks contract through einsum's optimize (BLAS); every case above, planned
    monkeypatch.setattr(rules_contract, "_EINSUM_PLAN_MIN", 1)
    check_binary(lambda a, b: np.einsum(subs, a, b), sa, sb, dtype)
    monkeypatch.setattr(rules_contract, "_EINSUM_PLAN_MIN", 1 << 60)
    check_binary(lambda a, b: np.einsum(subs, a, b), sa, sb, dtype)


def test_a_large_einsum_pullback_is_planned_and_agrees():
    a, b = arr((40, 50), 1), arr((60, 50), 2)
    assert rules_contract._worth_a_plan(["ij", "kj"], [a, b]) and not rules_contract._worth_a_plan(["ij"], [a])
    f = lambda a, b: readout(np.einsum("ij,kj->ik", a, b))
    ga, gb = adcli.grad(f, argnums=(0, 1))(a, b)
    w = np.cos(a @ b.T) * np.random.default_rng(99).uniform(0.5, 1.5, (40, 60))  # readout's cotangent
    np.testing.assert_allclose(ga, w @ b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gb, w.T @ a, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "subs,shape",
    [("ii->i", (3, 3)), ("ii", (3, 3)), ("ij->", (3, 4)), ("ij->j", (3, 4)), ("ba", (3, 4)),
     ("iji->j", (3, 2, 3)), ("...ii->...i", (2, 3, 3)), ("i...i", (3, 2, 3)), ("ij->ji", (2, 3))],
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_einsum_unary(subs, shape, dtype):
    check_grad(lambda x: readout(np.einsum(subs, x)), arr(shape, 3, dtype))


@pytest.mark.parametrize("optimize", [False, True, "greedy", "optimal"])
def test_einsum_many_operands(optimize):
    a, b, c = arr((3, 4), 1), arr((4, 5), 2), arr((5, 2), 3)
    f = lambda a, b, c: readout(np.einsum("ij,jk,kl->il", a, b, c, optimize=optimize))
    for argnums in (0, 1, 2, (0, 2), (0, 1, 2)):
        check_grad(f, a, b, c, argnums=argnums)


def test_einsum_same_operand_twice_and_sublists():
    x, m = arr((4,), 1), arr((4, 4), 2)
    check_grad(lambda x: readout(np.einsum("i,ij,j->", x, m, x)), x)
    check_grad(lambda m: readout(np.einsum(m, [0, 1], x, [1], [0])), m)
    check_grad(lambda m: readout(np.einsum(m, [Ellipsis, 0, 0], [Ellipsis, 0])), arr((2, 3, 3)))


def test_einsum_float32_keeps_dtype():
    g = adcli.grad(lambda x: np.sum(np.einsum("ij,jk->ik", x, x)))(arr((3, 3), 0, np.float32))
    assert g.dtype == np.float32


GUFUNC_CASES = [
    (np.vecdot, (4,), (4,)),
    (np.vecdot, (3, 4), (4,)),
    (np.vecdot, (2, 1, 4), (3, 4)),
    (np.matvec, (3, 4), (4,)),
    (np.matvec, (2, 3, 4), (5, 1, 4)),
    (np.vecmat, (3,), (3, 4)),
    (np.vecmat, (2, 3), (3, 4)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op,sa,sb", GUFUNC_CASES)
def test_gufuncs(op, sa, sb, dtype):
    check_binary(op, sa, sb, dtype)


def test_linalg_vecdot_axis():
    check_binary(lambda a, b: np.linalg.vecdot(a, b, axis=0), (4, 3), (4, 3))
    check_binary(np.linalg.vecdot, (2, 4), (4,))


@pytest.mark.parametrize("shapes", [[(3, 4), (4, 5), (5, 2)], [(4,), (4, 3), (3, 2), (2,)], [(2, 3), (3,)]])
def test_multi_dot(shapes):
    arrays = [arr(s, i) for i, s in enumerate(shapes)]
    check_grad(lambda xs: readout(np.linalg.multi_dot(xs)), arrays)
    check_grad(lambda x0: readout(np.linalg.multi_dot([x0] + arrays[1:])), arrays[0])


@pytest.mark.parametrize("n", [1, 2, 3, 5, -1, -2])
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)])
def test_matrix_power(n, shape):
    a = arr(shape, 4) * 0.2 + np.eye(3)  # well-conditioned for negative powers, entries of a**n stay O(1)
    check_grad(lambda a: readout(np.linalg.matrix_power(a, n)), a)
    check_grad(lambda a: readout(np.linalg.matrix_power(a, n)), a.astype(np.float32))


def test_matrix_power_zero_has_zero_gradient():
    a = arr((3, 3))
    g = adcli.grad(lambda a: np.sum(np.linalg.matrix_power(a, 0)) + np.sum(a))(a)
    np.testing.assert_array_equal(g, np.ones((3, 3)))


def test_results_are_traced_and_match_numpy():
    a, b = arr((2, 3, 4), 1), arr((4, 5), 2)
    seen = {}

    def f(a):
        for name, y, ref in [
            ("matmul", a @ b, a.value @ b), ("dot", np.dot(a, b), np.dot(a.value, b)),
            ("einsum", np.einsum("...ij,jk", a, b), np.einsum("...ij,jk", a.value, b)),
            ("tensordot", np.tensordot(a, b, 1), np.tensordot(a.value, b, 1)),
        ]:
            assert isinstance(y, Tracer)
            np.testing.assert_allclose(y.value, ref, rtol=1e-12)
            seen[name] = True
        return np.sum(a @ b)

    adcli.grad(f)(a)
    assert len(seen) == 4


def test_refused_options():
    a = arr((3, 3))
    with pytest.raises(UnsupportedError, match="out="):
        adcli.grad(lambda a: np.sum(np.dot(a, a, out=np.empty((3, 3)))))(a)
    with pytest.raises(UnsupportedError, match="dtype"):
        adcli.grad(lambda a: np.sum(np.einsum("ij->i", a, dtype=np.float32)))(a)
    with pytest.raises(UnsupportedError, match="out="):
        adcli.grad(lambda a: np.sum(np.einsum("ij->i", a, out=np.empty(3))))(a)
