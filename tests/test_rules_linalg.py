"""numpy.linalg against finite differences: inv, det, slogdet, solve, cholesky, eigh, eigvalsh,
svd, svdvals, qr, pinv, norm / vector_norm / matrix_norm; single and stacked matrices, float64
and float32, the documented one-triangle convention for symmetric inputs, refused options."""

from __future__ import annotations

import numpy as np
import pytest

import adcli
from adcli.engine.core import Tracer
from adcli.engine.rules.linalg import _cholesky_vjp
from adcli.engine.triangular import lower_inverse
from adcli.errors import UnsupportedError
from adcli.testing import check_grad

DTYPES = [np.float64, np.float32]


def arr(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def weights(shape, seed=11):
    return np.random.default_rng(seed).uniform(0.5, 1.5, shape)


def readout(y):
    """A nonlinear weighted sum with distinct weights (a misplaced cotangent cannot pass)."""
    y = np.sin(y)
    if np.ndim(y) == 0:
        return y * 1.7
    return np.sum(y * weights(np.shape(y)).astype(np.result_type(y)))


def squares(y, seed=12):
    """Sign-invariant readout for eigenvectors and singular vectors, whose signs are arbitrary."""
    return np.sum(y**2 * weights(np.shape(y), seed).astype(np.result_type(y)))


def well_conditioned(shape, seed=0):
    n = shape[-1]
    return arr(shape, seed) * 0.5 + 2.0 * np.eye(n)


def spd(shape, seed=0):
    """Symmetric positive definite with well-separated eigenvalues 1, 2, ..., n."""
    n = shape[-1]
    q, _ = np.linalg.qr(arr(shape, seed))
    return (q * np.arange(1.0, n + 1)[..., None, :]) @ np.swapaxes(q, -1, -2)


def distinct_singular(shape, seed=0):
    """A matrix with singular values 1, 2, ..., k (well separated)."""
    m, n = shape[-2:]
    k = min(m, n)
    u, _ = np.linalg.qr(arr(shape[:-2] + (m, k), seed))
    v, _ = np.linalg.qr(arr(shape[:-2] + (n, k), seed + 1))
    return (u * np.arange(1.0, k + 1)[..., None, :]) @ np.swapaxes(v, -1, -2)


def check(f, x, *more, argnums=0):
    for dtype in DTYPES:
        check_grad(f, x.astype(dtype), *[m.astype(dtype) for m in more], argnums=argnums)


# --- inverse, determinants, solve ---
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (1, 1)])
def test_inv_det_slogdet(shape):
    a = well_conditioned(shape)
    check(lambda a: readout(np.linalg.inv(a)), a)
    check(lambda a: readout(np.linalg.det(a)), a)
    check(lambda a: readout(np.linalg.slogdet(a).logabsdet), a)
    check(lambda a: readout(np.linalg.slogdet(-a)[1]), a)  # negative determinants (odd n)


def test_slogdet_sign_is_plain():
    def f(a):
        sign, logabs = np.linalg.slogdet(a)
        assert not isinstance(sign, Tracer) and isinstance(logabs, Tracer)
        return logabs * sign

    a = well_conditioned((3, 3))
    g = adcli.grad(f)(-a)
    np.testing.assert_allclose(g, np.sign(np.linalg.det(-a)) * np.linalg.inv(-a).T, rtol=1e-10)


@pytest.mark.parametrize(
    "sa,sb",
    [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)), ((2, 3, 3), (2, 3, 4)), ((3, 3), (2, 3, 2)),
     ((2, 3, 3), (3, 2))],
)
def test_solve(sa, sb):
    a, b = well_conditioned(sa), arr(sb, 1)
    f = lambda a, b: readout(np.linalg.solve(a, b))
    for argnums in (0, 1, (0, 1)):
        check(f, a, b, argnums=argnums)


def triangular(n, lower, order, seed=0):
    a = well_conditioned((n, n), seed)
    a = np.tril(a) if lower else np.triu(a)
    return np.asfortranarray(a) if order == "F" else a


# 16 rows and more: the pullback solves with LAPACK's trtrs instead of factorising a again
@pytest.mark.parametrize("n", [16, 37])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("bshape", [(), (3,)])
def test_solve_with_a_triangular_matrix(n, lower, order, bshape):
    a, b = triangular(n, lower, order), arr((n,) + bshape, 1)
    f = lambda a, b: readout(np.linalg.solve(a, b))
    for argnums in (0, 1, (0, 1)):
        check(f, a, b, argnums=argnums)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("order", ["C", "F"])
def test_triangular_solve_pullback_skips_the_factorisation(monkeypatch, dtype, lower, order):
    import adcli.engine.rules.linalg as rl

    n = 40
    a, b = triangular(n, lower, order).astype(dtype), arr((n,), 1).astype(dtype)
    w = weights((n,)).astype(dtype)
    f = lambda a, b: np.sum(np.linalg.solve(a, b) * w)
    calls = []
    monkeypatch.setattr(rl, "solve", lambda *args: calls.append(1) or np.linalg.solve(*args))
    ga, gb = adcli.grad(f, argnums=(0, 1))(a, b)
    assert calls == [1]  # the forward's solve; the pullback's is trtrs
    # the LU's answer: a^-T w, and -gb x^T
    want_b = np.linalg.solve(a.T.astype(np.float64), w.astype(np.float64))
    want_a = -np.outer(want_b, np.linalg.solve(a.astype(np.float64), b.astype(np.float64)))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert ga.dtype == gb.dtype == dtype
    np.testing.assert_allclose(gb, want_b, rtol=tol, atol=tol * np.abs(want_b).max())
    np.testing.assert_allclose(ga, want_a, rtol=tol, atol=tol * np.abs(want_a).max())


@pytest.mark.parametrize(
    "a",
    [
        np.tril(well_conditioned((15, 15))),  # under 16 rows: NumPy's solve
        np.tril(well_conditioned((20, 20))) + np.diag(np.ones(19), 1),  # zero corner, not triangular
        np.tril(well_conditioned((2, 20, 20))),  # a stack
    ],
    ids=["small", "zero-corner", "stack"],
)
def test_solve_pullback_factorises_what_is_not_one_triangular_matrix(monkeypatch, a):
    import adcli.engine.rules.linalg as rl

    b = arr(a.shape[-1:], 1)
    calls = []
    monkeypatch.setattr(rl, "solve", lambda *args: calls.append(1) or np.linalg.solve(*args))
    adcli.grad(lambda a, b: readout(np.linalg.solve(a, b)), argnums=(0, 1))(a, b)
    assert calls == [1, 1]  # the forward's solve and the pullback's
    check_grad(lambda a, b: readout(np.linalg.solve(a, b)), a, b, argnums=(0, 1))


def test_gp_likelihood_through_triangular_solves():
    # the Cholesky factor and its transpose (C- and Fortran-ordered) in the two solves
    x = np.linspace(0.0, 6.0, 24)
    y = np.sin(x)

    def lml(x, y, s):
        K = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2) + s * np.eye(x.shape[0])
        L = np.linalg.cholesky(K)
        alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
        return np.dot(y, alpha) + 2.0 * np.sum(np.log(np.diagonal(L)))

    check_grad(lml, x, y, 0.5, argnums=(0, 1, 2))


# --- symmetric inputs: cholesky, eigh, eigvalsh ---
# (33, 33), (2, 70, 70): the stacked pullback inverts the factor by halves above 32 rows (uneven
# ones too); (130, 130), (257, 257): a single matrix's pullback goes by halves above 96 rows (at
# 257 two levels deep, split unevenly)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (33, 33), (2, 70, 70), (130, 130), (257, 257)])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(shape, upper):
    a = spd(shape)
    check(lambda a: readout(np.linalg.cholesky(a, upper=upper)), a)
    # Through a symmetric construction, the usual way a covariance reaches cholesky.
    b = arr(shape, 3)
    n = shape[-1]
    check(lambda b: readout(np.linalg.cholesky(b @ np.swapaxes(b, -1, -2) + n * np.eye(n), upper=upper)), b)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
@pytest.mark.parametrize("UPLO", ["L", "U"])
def test_eigh(shape, UPLO):
    a = spd(shape)
    check(lambda a: readout(np.linalg.eigh(a, UPLO).eigenvalues), a)
    check(lambda a: squares(np.linalg.eigh(a, UPLO).eigenvectors), a)
    check(lambda a: readout(np.linalg.eigh(a, UPLO)[0]) + squares(np.linalg.eigh(a, UPLO)[1]), a)
    check(lambda a: readout(np.linalg.eigvalsh(a, UPLO)), a)


def test_eigh_gauge_invariant_reconstruction():
    # V diag(w) V^T rebuilds (the symmetrised) a: uses both outputs, and each column's sign cancels.
    def f(a):
        w, v = np.linalg.eigh(a)
        return readout((v * w[..., None, :]) @ np.swapaxes(v, -1, -2))

    check(f, spd((2, 3, 3), 4))


@pytest.mark.parametrize(
    "fn",
    [lambda a: np.linalg.cholesky(a), lambda a: np.linalg.eigh(a)[1] ** 2, lambda a: np.linalg.eigvalsh(a)],
)
def test_one_triangle_convention(fn):
    # NumPy reads the lower triangle only: the gradient is zero above the diagonal, and equals
    # the symmetric gradient (as a function of the symmetrised input) folded onto the lower triangle.
    a = spd((4, 4), 5)
    g = adcli.grad(lambda a: readout(fn(a)))(a)
    assert np.all(np.triu(g, 1) == 0)
    gsym = adcli.grad(lambda a: readout(fn((a + a.T) / 2)))(a)  # symmetric gradient
    np.testing.assert_allclose(g, np.tril(gsym + gsym.T, -1) + np.diag(np.diag(gsym)), rtol=1e-8, atol=1e-10)


# --- svd ---
SVD_SHAPES = [(4, 4), (5, 3), (3, 5), (2, 4, 3), (2, 3, 4)]


@pytest.mark.parametrize("shape", SVD_SHAPES)
def test_svd(shape):
    a = distinct_singular(shape)
    f = lambda a: np.linalg.svd(a, full_matrices=False)
    check(lambda a: readout(f(a).S), a)
    check(lambda a: squares(f(a).U), a)
    check(lambda a: squares(f(a).Vh, 13), a)
    check(lambda a: readout(f(a)[0] @ f(a)[2]), a)  # U Vh: the sign of each pair cancels
    check(lambda a: readout(np.linalg.svd(a, compute_uv=False)), a)
    check(lambda a: readout(np.linalg.svdvals(a)), a)


def test_svd_full_matrices_square_is_the_default():
    a = distinct_singular((3, 3), 2)
    check(lambda a: squares(np.linalg.svd(a)[0]) + readout(np.linalg.svd(a)[1]) + squares(np.linalg.svd(a)[2], 13), a)


# --- qr ---
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3), (2, 3, 4)])
def test_qr(shape):
    a = distinct_singular(shape, 3)
    check(lambda a: readout(np.linalg.qr(a).Q), a)
    check(lambda a: readout(np.linalg.qr(a).R), a)
    check(lambda a: readout(np.linalg.qr(a)[0]) + readout(np.linalg.qr(a)[1]), a)
    check(lambda a: readout(np.linalg.qr(a, mode="r")), a)


def test_qr_complete_wide():
    a = distinct_singular((3, 5), 4)
    check(lambda a: readout(np.linalg.qr(a, mode="complete")[0]) + readout(np.linalg.qr(a, mode="complete")[1]), a)


# --- pinv ---
@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5), (2, 4, 3)])
def test_pinv(shape):
    check(lambda a: readout(np.linalg.pinv(a)), distinct_singular(shape, 5))


# --- norms ---
VECTOR_ORDS = [None, 2, 1, np.inf, -np.inf, 3, 0.5, -2]


@pytest.mark.parametrize("ord", VECTOR_ORDS)
def test_vector_norms(ord):
    x = arr((3, 4), 6)  # no zeros and no ties among |x|
    check(lambda x: readout(np.linalg.norm(x[0], ord)), x)
    check(lambda x: readout(np.linalg.norm(x, ord, axis=1)), x)
    check(lambda x: readout(np.linalg.norm(x, ord, axis=0, keepdims=True)), x)
    check(lambda x: readout(np.linalg.vector_norm(x, ord=2 if ord is None else ord, axis=(0, 1))), x)


MATRIX_ORDS = [None, "fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf]


@pytest.mark.parametrize("ord", MATRIX_ORDS)
def test_matrix_norms(ord):
    x = distinct_singular((3, 4), 7) + 0.1 * arr((3, 4), 8)  # distinct singular values, row/column sums
    check(lambda x: readout(np.linalg.norm(x, ord)), x)
    y = np.stack([x[:, :3], x[:, 1:]])  # a stack, reduced over transposed axes below
    check(lambda y: readout(np.linalg.norm(y, ord, axis=(2, 1), keepdims=True)), y)
    check(lambda y: readout(np.linalg.matrix_norm(y, ord="fro" if ord is None else ord)), y)


def test_norm_defaults_and_zero_order():
    x = arr((2, 3, 4), 9)
    check(lambda x: np.linalg.norm(x), x)
    check(lambda x: readout(np.linalg.norm(x, keepdims=True)), x)
    g = adcli.grad(lambda x: np.sum(np.linalg.norm(x, 0, axis=1)) + np.sum(x))(x)
    np.testing.assert_array_equal(g, np.ones_like(x))
    # The 2-norm of a zero vector has the subgradient 0, not nan.
    np.testing.assert_array_equal(adcli.grad(lambda x: np.linalg.norm(x))(np.zeros(3)), np.zeros(3))


def test_values_match_numpy():
    a = distinct_singular((2, 4, 3), 1)

    def f(a):
        plain = a.value
        for ours, ref in [
            (np.linalg.svd(a, full_matrices=False), np.linalg.svd(plain, full_matrices=False)),
            (np.linalg.qr(a), np.linalg.qr(plain)),
            (np.linalg.eigh(a[..., :3, :]), np.linalg.eigh(plain[..., :3, :])),
        ]:
            assert type(ours) is type(ref)
            for o, r in zip(ours, ref):
                np.testing.assert_array_equal(o.value, r)
        return np.sum(np.linalg.norm(a, axis=(1, 2)))

    adcli.grad(f)(a)


def test_refused_options():
    a = arr((3, 4))
    with pytest.raises(UnsupportedError, match="full_matrices=False"):
        adcli.grad(lambda a: np.sum(np.linalg.svd(a)[1]))(a)
    with pytest.raises(UnsupportedError, match="hermitian"):
        adcli.grad(lambda a: np.sum(np.linalg.svd(a, hermitian=True)[1]))(spd((3, 3)))
    with pytest.raises(UnsupportedError, match="mode='reduced'"):
        adcli.grad(lambda a: np.sum(np.linalg.qr(a, mode="raw")[0]))(a)
    with pytest.raises(UnsupportedError, match="mode='reduced'"):
        adcli.grad(lambda a: np.sum(np.linalg.qr(a, mode="complete")[0]))(a.T)
    with pytest.raises(UnsupportedError, match="hermitian"):
        adcli.grad(lambda a: np.sum(np.linalg.pinv(a, hermitian=True)))(spd((3, 3)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [1, 5, 70, 96, 97, 130, 257])
def test_the_lapack_cholesky_pullback_agrees_with_the_stacked_one(dtype, upper, n):
    # A single matrix goes through BLAS's triangular product and LAPACK's congruence (sygst, on
    # the reversed factor; by halves above 96 rows), a stack through the products with the inverse; a
    # strided cotangent and factor (views) must give the same result, C-ordered.
    a = spd((n, n)).astype(dtype)
    ans = np.linalg.cholesky(a, upper=upper)
    g = arr((n, 2 * n), 4)[:, ::2].astype(dtype)
    single = _cholesky_vjp(g, ans, a, upper=upper)
    stacked = _cholesky_vjp(g[None], ans[None], a[None], upper=upper)[0]
    strided = _cholesky_vjp(g, np.asfortranarray(ans), a, upper=upper)
    assert single.dtype == dtype and single.shape == (n, n) and single.flags.c_contiguous
    tol = 1e-4 if dtype == np.float32 else 1e-11
    scale = np.abs(stacked).max()
    np.testing.assert_allclose(single, stacked, rtol=0, atol=tol * scale)
    np.testing.assert_allclose(strided, stacked, rtol=0, atol=tol * scale)
    assert np.all((np.triu(single, 1) if not upper else np.tril(single, -1)) == 0)


@pytest.mark.parametrize("n", [31, 32, 33, 64, 97, 128])
def test_the_lower_inverse_by_halves_is_the_inverse(n):
    L = np.linalg.cholesky(spd((2, n, n)))
    inv = lower_inverse(L)
    np.testing.assert_allclose(inv @ L, np.broadcast_to(np.eye(n), (2, n, n)), atol=1e-12)
    assert np.array_equal(inv, np.tril(inv))  # lower triangular, zeros above exactly


def _moderate(n, seed=0):
    """An orthogonal matrix times singular values near 1: det and its gradient of order 1 at any n."""
    q, _ = np.linalg.qr(arr((n, n), seed))
    return q * np.linspace(0.8, 1.25, n)


@pytest.mark.parametrize("n", [16, 40])
def test_det_and_slogdet_of_larger_matrices(n):
    # 16 rows or more: the pullbacks take the inverse from LAPACK's LU (getrf, getri)
    # (float32 against float64's gradient: finite differences of a float32 determinant over
    # n^2 entries are noise)
    a = _moderate(n)
    for f in (lambda a: readout(np.linalg.det(a)), lambda a: readout(np.linalg.slogdet(a).logabsdet),
              lambda a: readout(np.linalg.slogdet(a.T[::-1])[1])):  # the last: a strided, F-ordered view
        g = check_grad(f, a)
        low = adcli.grad(f)(a.astype(np.float32))
        assert low.dtype == np.float32
        np.testing.assert_allclose(low, g, rtol=0, atol=1e-5 * np.abs(g).max())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [15, 16, 70])
def test_the_lu_inverse_is_numpys_inverse(dtype, n):
    from adcli.engine.rules.linalg import _inverse

    a = _moderate(n, 3).astype(dtype)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    for view in (a, np.asfortranarray(a), a.T[::-1]):
        got = _inverse(view)
        assert got.dtype == dtype and got.shape == (n, n)
        np.testing.assert_allclose(got, np.linalg.inv(view), rtol=0, atol=tol * np.abs(np.linalg.inv(view)).max())
    with pytest.raises(np.linalg.LinAlgError):  # singular: np.linalg.inv's error, as before
        _inverse(np.zeros((n, n), dtype))
