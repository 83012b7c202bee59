"""Native rules for numpy.linalg: inv, det, slogdet, solve, cholesky, eigh, eigvalsh, svd,
svdvals, qr, pinv, norm / vector_norm / matrix_norm. Every rule works on stacks of matrices
(the last two axes), as NumPy does.

Several outputs (eigh, svd, qr, slogdet): each differentiable output is recorded as its own
tape node whose pullback adds *that output's* share of the input's cotangent. A VJP is linear in
the output cotangents, so the shares add up to the joint VJP exactly; outputs nobody uses get
no cotangent and cost nothing in the reverse pass. Non-differentiable outputs (slogdet's sign)
are returned plain.

Symmetric inputs (cholesky, eigh, eigvalsh): NumPy reads only one triangle of the matrix (the
lower one by default; cholesky(upper=True) and UPLO='U' read the upper one), so the gradient is
taken with respect to the array NumPy actually reads: the used triangle, interpreted as a
symmetric matrix. If G is the gradient for symmetric perturbations (the "symmetric" gradient of
JAX, or autograd's cholesky), the rule returns diag(G) on the diagonal, G_ij + G_ji strictly
inside the used triangle and 0 in the ignored one; this is autograd's convention for eigh. It is
the exact derivative of what NumPy computes for any input, and for an input that is symmetric
by construction (A = B + B.T, X @ X.T) the chain rule gives the same result as the symmetric
convention, since both agree on every symmetric perturbation.

eigh and svd assume distinct eigenvalues / singular values (the eigenvector and singular-vector
cotangents divide by their differences), and the differentiated function must not depend on the
signs of the eigenvectors / singular-vector pairs, which NumPy chooses arbitrarily.
"""

from __future__ import annotations

import functools

import numpy as np

from ..errors import UnsupportedError
from .core import Primitive, Tracer, _parents, apply, kept, node_kind, record
from .registry import defnative
from .rules_contract import cast_like
from .sums import unbroadcast

solve = np.linalg.solve


def _T(x):
    return np.swapaxes(x, -1, -2)


@node_kind(output=5)
def _pb_part(node, g, acc):
    _, p, like, vjp, saved, _ans = node
    acc.add(p, cast_like(vjp(np.asarray(g), *saved), like))


def _part(x: Tracer, ans, vjp, *saved):
    """Record one output ``ans`` of a linalg op on ``x``; ``vjp(g, *saved)`` is its share of x's cotangent."""
    return record(x.tape, (_pb_part, x.idx, x.value, vjp, saved, ans), ans)


def _one_triangle(G, lower=True):
    """The gradient w.r.t. the triangle NumPy reads, from G whose symmetric part is the
    gradient for symmetric perturbations (see the module docstring): G + G^T strictly inside
    the triangle, G's diagonal on it, zeros elsewhere."""
    n = G.shape[-1]
    R = G + _T(G)
    d = np.arange(n)
    R[..., d, d] = G[..., d, d]
    # zeros written outside the triangle in place (np.tril would make a second n x n array)
    outside = ~np.tri(n, dtype=bool) if lower else np.tri(n, k=-1, dtype=bool)
    np.copyto(R, 0.0, where=outside)
    return R


def _off_diagonal_inverse(d):
    """1 / d off the diagonal, 0 on it (d holds pairwise differences of eigen/singular values)."""
    eye = np.eye(d.shape[-1], dtype=bool)
    return np.where(eye, 0.0, 1.0 / np.where(eye, 1.0, d))


# --- inverse, determinants, solve ---
INV = Primitive(
    "numpy.linalg.inv",
    np.linalg.inv,
    lambda g, ans, a: cast_like(-_T(ans) @ g @ _T(ans), a),
)
DET = Primitive(
    "numpy.linalg.det",
    np.linalg.det,
    lambda g, ans, a: cast_like(np.asarray(g * ans)[..., None, None] * _T(np.linalg.inv(a)), a),
)


# x = a^-1 b: db = a^-T g, da = -db x^T (before summing over broadcast batch dimensions). A 1-d
# b is one vector for every matrix of the stack.
def _solve_gb(g, a, b):
    g = np.asarray(g)
    gb = _triangular_solve_t(a, g)
    if gb is not None:
        return gb
    return solve(_T(a), g[..., None])[..., 0] if np.ndim(b) == 1 else solve(_T(a), g)


@functools.lru_cache(maxsize=8)
def _strict_upper(n):
    mask = ~np.tri(n, dtype=bool)
    mask.flags.writeable = False
    return mask


def triangle(a):
    """True for a lower-triangular float32/float64 matrix of 16 rows or more, False for an
    upper-triangular one, None for anything else (stacks, smaller or general matrices)."""
    n = a.shape[-1]
    if a.ndim != 2 or n < 16 or a.dtype not in _LAPACK_KIND:
        return None
    if a[0, n - 1] == 0 and not np.logical_and(a != 0, _strict_upper(n)).any():
        return True
    if a[n - 1, 0] == 0 and not np.logical_and(a.T != 0, _strict_upper(n)).any():
        return False
    return None


def _triangular_solve_t(a, g):
    """a^-T g by LAPACK's triangular solve (trtrs) when ``a`` is a triangular float32/float64
    matrix of 16 rows or more (a Cholesky factor, as in a GP's likelihood); None otherwise.
    NumPy's solve factorises a triangular matrix like any other: at n = 128 the pullback's
    solve took 96 µs through it and 3 µs through trtrs, after a 5 µs check that the other
    triangle is zero (a general matrix almost always fails at its corner, in well under 1 µs).
    The result is the triangular solve's, not the LU's: both are backward stable, they differ
    in the last bits. A zero on the diagonal (singular, which the forward's solve would have
    refused) falls back to NumPy's solve, which raises."""
    lower = triangle(a)
    if lower is None or g.dtype != a.dtype or g.ndim > 2:
        return None
    from scipy.linalg import lapack  # loaded on the first triangular solve's gradient

    trtrs = getattr(lapack, _LAPACK_KIND[a.dtype] + "trtrs")
    # a^T x = g: a's transpose is Fortran-ordered when a is C-ordered (no copy into LAPACK)
    if a.flags.f_contiguous:
        x, info = trtrs(a, g, lower=lower, trans=1)
    else:
        x, info = trtrs(np.ascontiguousarray(a).T, g, lower=not lower, trans=0)
    return x if info == 0 else None


def _solve_da_of(gb, ans, a, b):
    return unbroadcast(-gb[..., :, None] * ans[..., None, :] if np.ndim(b) == 1 else -gb @ _T(ans), a)


@node_kind(output=2)
def _pb_solve(node, g, acc):
    # the engine's node for np.linalg.solve: one solve serves both arguments when both are traced
    _, parents, ans, a, b = node
    gb = _solve_gb(g, a, b)
    for argnum, p in parents:
        if argnum == 0:
            acc.add(p, cast_like(_solve_da_of(gb, ans, a, b), a))
        else:
            acc.add(p, cast_like(unbroadcast(gb, b), b))


# The primitive's VJPs, one argument at a time: they say which arguments are differentiable
# (_parents, `adcli rules list`); the engine records _pb_solve instead.
def _solve_da(g, ans, a, b):
    return _solve_da_of(_solve_gb(g, a, b), ans, a, b)


def _solve_db(g, ans, a, b):
    return unbroadcast(_solve_gb(g, a, b), b)


SOLVE = Primitive("numpy.linalg.solve", solve, _solve_da, _solve_db)


@defnative(np.linalg.inv)
def _inv(a):
    return apply(INV, a)


@defnative(np.linalg.det)
def _det(a):
    return apply(DET, a)


@defnative(np.linalg.solve)
def _solve(a, b):
    tape, parents, vals = _parents(SOLVE, (a, b))
    ans = solve(*vals)
    if tape is None or not parents:
        return ans
    av, bv = (kept(v, tape) if v is arg else v for v, arg in zip(vals, (a, b)))  # plain operands: kept copies
    return record(tape, (_pb_solve, tuple(parents), ans, av, bv), ans)


@defnative(np.linalg.slogdet)
def _slogdet(a):
    res = np.linalg.slogdet(a.value)
    # d log|det a| = tr(a^-1 da); the sign is piecewise constant: no gradient.
    logabs = _part(a, res.logabsdet, lambda g, x: g[..., None, None] * _T(np.linalg.inv(x)), a.value)
    return type(res)(res.sign, logabs)


# --- Cholesky (Iain Murray, "Differentiation of the Cholesky decomposition", 2016) ---
def _cholesky_vjp(g, ans, a, upper=False):
    L, gL = (_T(ans), _T(g)) if upper else (ans, g)
    if L.ndim == 2 and L.dtype in _LAPACK_KIND and L.dtype == gL.dtype:
        return cast_like(_congruence(L, gL, upper), a)
    # stacks and mixed dtypes: products with the triangle's inverse
    n = L.shape[-1]
    P = np.tril(_T(L) @ gL)
    d = np.arange(n)
    P[..., d, d] *= 0.5  # lower triangle, halved diagonal (in place: no n x n temporaries)
    Li = _lower_inverse(L)
    S = _T(Li) @ (P @ Li)  # L^-T P L^-1
    del P, Li  # freed before _one_triangle's temporaries: the gradient's peak memory
    return cast_like(_one_triangle(S, lower=not upper), a)


# float32/float64 matrices: BLAS's triangular product and LAPACK's congruence (scipy.linalg;
# NumPy has neither). Against products with L^-1: the pullback at n = 100 went from 206 to
# 131 µs with a product and two triangular solves, and sygst in place of the two solves (one
# n^3 of flops fewer: it makes the symmetric result's one triangle) took n = 300 from 3.3 ms to
# 2.3 (n = 100: 200 -> 187 µs; it is OpenBLAS's reference code there, little faster than the
# two solves).
_LAPACK_KIND = {np.dtype(np.float64): "d", np.dtype(np.float32): "s"}


def _congruence(L, gL, upper=False):
    """The pullback's result in the lower triangle (the upper one, transposed, for ``upper``),
    C-ordered: with M = L^T tril(gL) and Q the symmetric matrix whose lower triangle is M's,
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
    from scipy.linalg import blas, lapack  # loaded on the first float Cholesky gradient, not with the engine

    kind = _LAPACK_KIND[L.dtype]
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
    lower = C[::-1, ::-1]  # C's lower triangle, reversed back into place
    return np.ascontiguousarray(lower.T if upper else lower)


def _lower_inverse(L):
    """The inverse of a (stack of) nonsingular lower-triangular matrices, by halves:
    [[A, 0], [B, C]]^-1 = [[A^-1, 0], [-C^-1 B A^-1, C^-1]]. Matrix products do the work (a
    third of an LU solve's flops for the same inverse): the Cholesky pullback's two triangular
    solves with n right-hand sides took 2.3x as long through np.linalg.solve at n = 128. The
    accuracy is a triangular solve's: within a few ulps of it times the condition number."""
    n = L.shape[-1]
    if n <= 32:
        return np.linalg.inv(L)
    h = n // 2
    A, C = _lower_inverse(L[..., :h, :h]), _lower_inverse(L[..., h:, h:])
    out = np.zeros_like(A, shape=L.shape)
    out[..., :h, :h] = A
    out[..., h:, h:] = C
    out[..., h:, :h] = -(C @ (L[..., h:, :h] @ A))
    return out


CHOLESKY = Primitive(
    "numpy.linalg.cholesky",
    lambda a, upper=False: np.linalg.cholesky(a, upper=upper),
    _cholesky_vjp,
)


@defnative(np.linalg.cholesky)
def _cholesky(a, /, *, upper=False):
    return apply(CHOLESKY, a, upper=bool(upper))


# --- symmetric eigendecomposition: a = V diag(w) V^T ---
def _eigh_w_vjp(g, V, lower):
    return _one_triangle((V * g[..., None, :]) @ _T(V), lower)


def _eigh_V_vjp(g, w, V, lower):
    F = _off_diagonal_inverse(w[..., None, :] - w[..., :, None])  # F_ij = 1 / (w_j - w_i)
    return _one_triangle(V @ (F * (_T(V) @ g)) @ _T(V), lower)


def _lower(UPLO):
    uplo = str(UPLO).upper()
    if uplo not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return uplo == "L"


@defnative(np.linalg.eigh)
def _eigh(a, UPLO="L"):
    lower = _lower(UPLO)
    res = np.linalg.eigh(a.value, UPLO)
    w, V = res
    return type(res)(_part(a, w, _eigh_w_vjp, V, lower), _part(a, V, _eigh_V_vjp, w, V, lower))


def _eigvalsh_vjp(g, ans, a, UPLO="L"):
    V = np.linalg.eigh(a, UPLO).eigenvectors  # only needed when a gradient flows
    return cast_like(_eigh_w_vjp(np.asarray(g), V, _lower(UPLO)), a)


EIGVALSH = Primitive("numpy.linalg.eigvalsh", lambda a, UPLO="L": np.linalg.eigvalsh(a, UPLO), _eigvalsh_vjp)


@defnative(np.linalg.eigvalsh)
def _eigvalsh(a, UPLO="L"):
    _lower(UPLO)
    return apply(EIGVALSH, a, UPLO=UPLO)


# --- singular value decomposition: a = U diag(s) Vh (J. Townsend, "Differentiating the
# singular value decomposition", 2016), with F_ij = 1 / (s_j^2 - s_i^2) off the diagonal ---
def _svd_s_vjp(g, U, Vh):
    return U @ (g[..., :, None] * Vh)


def _svd_U_vjp(g, U, s, Vh):
    F = _off_diagonal_inverse(s[..., None, :] ** 2 - s[..., :, None] ** 2)
    Utg = _T(U) @ g
    inner = (F * (Utg - _T(Utg))) * s[..., None, :]
    c = U @ inner @ Vh
    if U.shape[-2] > U.shape[-1]:  # tall: the part of g outside U's span
        c = c + ((g - U @ Utg) / s[..., None, :]) @ Vh
    return c


def _svd_Vh_vjp(g, U, s, Vh):
    F = _off_diagonal_inverse(s[..., None, :] ** 2 - s[..., :, None] ** 2)
    Vhg = Vh @ _T(g)  # V^T gV, with V = Vh^T and gV = g^T
    inner = s[..., :, None] * (F * (Vhg - _T(Vhg)))
    c = U @ inner @ Vh
    if Vh.shape[-1] > Vh.shape[-2]:  # wide: the part of g outside Vh's row span
        c = c + U @ ((g - _T(Vhg) @ Vh) / s[..., :, None])
    return c


def _svdvals_vjp(g, ans, a):
    U, _, Vh = np.linalg.svd(a, full_matrices=False)  # only needed when a gradient flows
    return cast_like(_svd_s_vjp(np.asarray(g), U, Vh), a)


SVDVALS = Primitive("numpy.linalg.svdvals", lambda a: np.linalg.svd(a, compute_uv=False), _svdvals_vjp)


@defnative(np.linalg.svd)
def _svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    if hermitian:
        raise UnsupportedError(
            "np.linalg.svd(..., hermitian=True) on a traced value is not supported: call it with hermitian=False"
        )
    if not compute_uv:
        return apply(SVDVALS, a)
    m, n = np.shape(a.value)[-2:]
    if full_matrices and m != n:
        raise UnsupportedError(
            f"np.linalg.svd(..., full_matrices=True) of a traced {m}x{n} matrix is not supported (the extra singular "
            "vectors are not unique): pass full_matrices=False"
        )
    res = np.linalg.svd(a.value, full_matrices=bool(full_matrices))
    U, s, Vh = res
    return type(res)(
        _part(a, U, _svd_U_vjp, U, s, Vh), _part(a, s, _svd_s_vjp, U, Vh), _part(a, Vh, _svd_Vh_vjp, U, s, Vh)
    )


@defnative(np.linalg.svdvals)
def _svdvals(x, /):
    return apply(SVDVALS, x)


# --- QR, reduced (Seeger et al. 2017, "Auto-differentiating linear algebra"; the wide case as in
# PyTorch: a = [X | Y], R = [Rx | Ry] with X = Q Rx square) ---
def _qr_tall_vjp(gQ, gR, Q, R):
    M = R @ _T(gR) - _T(gQ) @ Q
    low = np.tril(M, -1)
    sym = low + _T(low) + np.tril(np.triu(M))  # M's lower triangle copied to the upper
    return _T(solve(R, _T(gQ + Q @ sym)))  # (gQ + Q sym) R^-T


def _qr_vjp(gQ, gR, Q, R):
    m = Q.shape[-2]
    if m >= R.shape[-1]:
        return _qr_tall_vjp(gQ, gR, Q, R)
    Rx, Ry, gRx, gRy = R[..., :m], R[..., m:], gR[..., :m], gR[..., m:]
    gX = _qr_tall_vjp(gQ + (Q @ Ry) @ _T(gRy), gRx, Q, Rx)
    return np.concatenate([gX, Q @ gRy], axis=-1)


@defnative(np.linalg.qr)
def _qr(a, mode="reduced"):
    m, n = np.shape(a.value)[-2:]
    if mode not in ("reduced", "complete", "r") or (mode == "complete" and m > n):
        raise UnsupportedError(
            f"np.linalg.qr(..., mode={mode!r}) on a traced {m}x{n} matrix is not supported: use mode='reduced'"
        )
    res = np.linalg.qr(a.value, mode="complete" if mode == "complete" else "reduced")
    Q, R = res
    r = _part(a, R, lambda g, Q, R: _qr_vjp(np.zeros_like(Q), g, Q, R), Q, R)
    if mode == "r":
        return r
    return type(res)(_part(a, Q, lambda g, Q, R: _qr_vjp(g, np.zeros_like(R), Q, R), Q, R), r)


# --- Moore-Penrose pseudo-inverse (Golub & Pereyra 1973; valid where the rank is constant) ---
def _pinv_vjp(g, P, a, **kw):
    PT, gT = _T(P), _T(g)
    m, n = np.shape(a)[-2:]
    c = -PT @ g @ PT
    c = c + (np.eye(m) - a @ P) @ gT @ (P @ PT)
    c = c + (PT @ P) @ gT @ (np.eye(n) - P @ a)
    return cast_like(c, a)


PINV = Primitive("numpy.linalg.pinv", lambda a, **kw: np.linalg.pinv(a, **kw), _pinv_vjp)


@defnative(np.linalg.pinv)
def _pinv(a, rcond=None, hermitian=False, *, rtol=np._NoValue):
    if hermitian:
        raise UnsupportedError(
            "np.linalg.pinv(..., hermitian=True) on a traced value is not supported: use hermitian=False"
        )
    kw = {} if rtol is np._NoValue else {"rtol": rtol}
    if rcond is not None:
        kw["rcond"] = rcond
    return apply(PINV, a, **kw)
