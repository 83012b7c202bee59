"""Triangular matrices in the linalg pullbacks, through SciPy's BLAS and LAPACK wrappers where
NumPy has no function for the operation (a triangular solve, a triangular product, a
congruence): which matrices are triangular, a^-T g by a triangular solve, the Cholesky
pullback's congruence, and the inverse of a lower-triangular matrix by halves."""

from __future__ import annotations

import functools

import numpy as np

# float32/float64 matrices: BLAS's triangular product and LAPACK's congruence for the Cholesky
# pullback (rules.linalg; NumPy has neither). Against products with L^-1: a product and two
# triangular solves make the pullback faster, and sygst in place of the two solves (one n^3 of
# flops fewer: it makes the symmetric result's one triangle) faster again on large matrices (on
# small ones it is OpenBLAS's reference code, little faster than the two solves). The timings:
# docs/engine.md § Measurements behind the code.
LAPACK_KIND = {np.dtype(np.float64): "d", np.dtype(np.float32): "s"}


WHOLE_MAX = 96  # rows: a larger factor's pullback is taken by halves (congruence)


def congruence(L, gL, upper=False):
    """The Cholesky pullback of a float32/float64 matrix from its lower factor L and the
    factor's cotangent gL: the gradient in the lower triangle (the upper one, transposed, for
    ``upper``), C-ordered. Up to WHOLE_MAX rows in one piece (``_whole``); above, by halves
    (``_by_halves``), which is faster there and gains the more the larger the matrix (at a little
    above WHOLE_MAX rows the two are close; docs/engine.md § Measurements behind the code)."""
    if L.shape[-1] <= WHOLE_MAX:
        lower = _whole(L, gL)
    else:
        lower = np.tril(gL)
        _by_halves(L, lower, getattr(scipy_linalg()[0], LAPACK_KIND[L.dtype] + "trsm"))
    return np.ascontiguousarray(lower.T if upper else lower)


def _by_halves(L, W, trsm) -> None:
    """W, the factor's cotangent on entry (its lower triangle), becomes the gradient (in place).

    The factorisation by halves, L11 = chol(A11), L21 = A21 L11^-T, L22 = chol(A22 - L21
    L21^T), reversed step by step (the blocked algorithm of I. Murray, "Differentiation of the
    Cholesky decomposition", 2016, with two blocks): L22's pullback (by halves again) gives the
    gradient G of A22 - L21 L21^T, so L21's cotangent loses (G + G^T) L21; A21's cotangent is
    L21's times L11^-1 (a triangular solve), which takes tril(gA21^T L21) from L11's; then
    L11's pullback. The work is matrix products and triangular solves (BLAS level 3), about
    twice the factorisation's flops, where the congruence in one piece takes six times them,
    half of it in LAPACK's sygst (unblocked reference code); the pieces of WHOLE_MAX rows or
    fewer are each one congruence."""
    n = L.shape[0]
    if n <= WHOLE_MAX:
        W[...] = _whole(L, W)
        return
    h = n // 2
    L21 = L[h:, :h]
    _by_halves(L[h:, h:], W[h:, h:], trsm)
    G = W[h:, h:]
    W[h:, :h] -= (G + G.T) @ L21
    W[h:, :h] = trsm(1.0, L[:h, :h], W[h:, :h], side=1, lower=1)  # gA21 = gL21 L11^-1
    W[:h, :h] -= np.tril(W[h:, :h].T @ L21)
    _by_halves(L[:h, :h], W[:h, :h], trsm)


def _whole(L, gL):
    """The pullback in one piece, the result in the lower triangle of a (not contiguous) view:
    with M = L^T tril(gL) and Q the symmetric matrix whose lower triangle is M's,
    C = L^-T Q L^-1 (symmetric) is twice the symmetrised L^-T Phi(M) L^-1 of Murray's formula
    (Phi: the lower triangle, the diagonal halved), so the gradient is C's strict lower
    triangle with C's halved diagonal.

    LAPACK's sygst computes inv(V^T) A inv(V) for an upper-triangular V and a symmetric A given
    by its upper triangle. Reversing rows and columns (J, the reversal) turns L into such a V
    (V = J L J) and M's lower triangle into an upper one: C = J inv(V^T) (J Q J) inv(V) J.
    One triangular product (trmm) then one sygst, each on Fortran-ordered operands: the
    reversed arrays are copied to Fortran order (n^2, against the n^3 of the work), and each
    n x n temporary is dropped as soon as it has served (the gradient's peak memory: two of
    them at a time)."""
    blas, lapack = scipy_linalg()
    kind = LAPACK_KIND[L.dtype]
    trmm, sygst = getattr(blas, kind + "trmm"), getattr(lapack, kind + "sygst")
    # (L^T tril(gL))^T = tril(gL)^T L: B op(U) with op(U) = U^T = L, U = L^T Fortran-ordered;
    # written into tril(gL)'s own array. M itself is the transpose.
    Mt = trmm(1.0, np.ascontiguousarray(L).T, np.tril(gL).T, side=1, lower=0, trans_a=1, overwrite_b=1)
    A = np.ascontiguousarray(Mt[::-1, ::-1]).T  # J M J, Fortran-ordered: (J Mt J)^T
    del Mt
    V = np.ascontiguousarray(L[::-1, ::-1].T).T  # J L J, Fortran-ordered
    C, info = sygst(A, V, itype=1, lower=0, overwrite_a=1)
    del A, V
    if info != 0:  # pragma: no cover - only an illegal argument makes sygst fail
        raise np.linalg.LinAlgError(f"LAPACK {kind}sygst failed (info={info})")
    n = C.shape[-1]
    np.copyto(C, 0.0, where=np.tri(n, k=-1, dtype=bool))  # C's strict lower part: J C J's upper
    d = np.arange(n)
    C[d, d] *= 0.5
    return C[::-1, ::-1]  # C's lower triangle, reversed back into place


def lower_inverse(L):
    """The inverse of a (stack of) nonsingular lower-triangular matrices, by halves:
    [[A, 0], [B, C]]^-1 = [[A^-1, 0], [-C^-1 B A^-1, C^-1]]. Matrix products do the work (a
    third of an LU solve's flops for the same inverse): the Cholesky pullback's two triangular
    solves with n right-hand sides took more than twice as long through np.linalg.solve
    (docs/engine.md § Measurements behind the code). The accuracy is a triangular solve's: within
    a few ulps of it times the condition number."""
    n = L.shape[-1]
    if n <= 32:
        return np.linalg.inv(L)
    h = n // 2
    A, C = lower_inverse(L[..., :h, :h]), lower_inverse(L[..., h:, h:])
    out = np.zeros_like(A, shape=L.shape)
    out[..., :h, :h] = A
    out[..., h:, h:] = C
    out[..., h:, :h] = -(C @ (L[..., h:, :h] @ A))
    return out


@functools.lru_cache(maxsize=8)
def _strict_upper(n):
    mask = ~np.tri(n, dtype=bool)
    mask.flags.writeable = False
    return mask


def triangle(a):
    """True for a lower-triangular float32/float64 matrix of 16 rows or more, False for an
    upper-triangular one, None for anything else (stacks, smaller or general matrices)."""
    n = a.shape[-1]
    if a.ndim != 2 or n < 16 or a.dtype not in LAPACK_KIND:
        return None
    if a[0, n - 1] == 0 and not np.logical_and(a != 0, _strict_upper(n)).any():
        return True
    if a[n - 1, 0] == 0 and not np.logical_and(a.T != 0, _strict_upper(n)).any():
        return False
    return None


@functools.cache
def scipy_linalg():
    """SciPy's BLAS and LAPACK wrappers, (scipy.linalg.blas, scipy.linalg.lapack), loaded on the
    first pullback that needs them (a slow import, which importing the engine does not pay). A
    profiler loads them before the program runs (profiler.session.Session): in a profile of one
    gradient the load was charged to the first linalg pullback, and was most of its time (gp_lml's
    solve; docs/engine.md § Measurements behind the code)."""
    from scipy.linalg import blas, lapack

    return blas, lapack


def triangular_solve_t(a, g):
    """a^-T g by LAPACK's triangular solve (trtrs) when ``a`` is a triangular float32/float64
    matrix of 16 rows or more (a Cholesky factor, as in a GP's likelihood); None otherwise.
    NumPy's solve factorises a triangular matrix like any other: many times slower than trtrs,
    even with the check that the other triangle is zero added to trtrs's time (a general matrix
    almost always fails that check at its corner, at once; docs/engine.md § Measurements behind
    the code).
    The result is the triangular solve's, not the LU's: both are backward stable, they differ
    in the last bits. A zero on the diagonal (singular, which the forward's solve would have
    refused) falls back to NumPy's solve, which raises."""
    lower = triangle(a)
    if lower is None or g.dtype != a.dtype or g.ndim > 2:
        return None
    trtrs = getattr(scipy_linalg()[1], LAPACK_KIND[a.dtype] + "trtrs")
    # a^T x = g: a's transpose is Fortran-ordered when a is C-ordered (no copy into LAPACK)
    if a.flags.f_contiguous:
        x, info = trtrs(a, g, lower=lower, trans=1)
    else:
        x, info = trtrs(np.ascontiguousarray(a).T, g, lower=not lower, trans=0)
    return x if info == 0 else None
