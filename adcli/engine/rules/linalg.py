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

from ...errors import UnsupportedError
from ..core import Primitive, Tracer, _parents, apply, kept, node_kind, record
from ..registry import defnative
from ..sums import unbroadcast
from ..tape import parent_at, parents_at
from ..triangular import LAPACK_KIND, congruence, lower_inverse, scipy_linalg, triangle, triangular_solve_t
from .contractions import cast_like

solve = np.linalg.solve


def _T(x):
    return np.swapaxes(x, -1, -2)


@node_kind(output=5, parents=parent_at(1))
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
    lambda g, ans, a: cast_like(np.asarray(g * ans)[..., None, None] * _T(_inverse(a)), a),
)


def _inverse(a):
    """a^-1 for the pullbacks of det and slogdet (d log|det a| = tr(a^-1 da)): for a float32/
    float64 matrix of 16 rows or more from LAPACK's LU and its inverse (getrf, getri with the
    optimal workspace: 2 n^3 flops), where np.linalg.inv solves against the identity (8/3 n^3;
    docs/engine.md § Measurements behind the code). Stacks, other dtypes and a singular
    matrix go to np.linalg.inv (which raises for the last, as before)."""
    if a.ndim == 2 and a.shape[0] >= 16 and a.dtype in LAPACK_KIND:
        getrf, getri, lwork = _lu_inverse(LAPACK_KIND[a.dtype], a.shape[0])
        lu, piv, info = getrf(a)
        if info == 0:
            inv, info = getri(lu, piv, lwork=lwork, overwrite_lu=1)
            if info == 0:
                return inv
    return np.linalg.inv(a)


@functools.lru_cache(maxsize=32)
def _lu_inverse(kind: str, n: int):
    lapack = scipy_linalg()[1]
    return getattr(lapack, kind + "getrf"), getattr(lapack, kind + "getri"), \
        max(int(getattr(lapack, kind + "getri_lwork")(n)[0]), n)


# x = a^-1 b: db = a^-T g, da = -db x^T (before summing over broadcast batch dimensions). A 1-d
# b is one vector for every matrix of the stack.
def _solve_gb(g, a, b):
    g = np.asarray(g)
    gb = triangular_solve_t(a, g)
    if gb is not None:
        return gb
    return solve(_T(a), g[..., None])[..., 0] if np.ndim(b) == 1 else solve(_T(a), g)


def _solve_da_of(gb, ans, a, b):
    return unbroadcast(-gb[..., :, None] * ans[..., None, :] if np.ndim(b) == 1 else -gb @ _T(ans), a)


def _solve_closed_form(node, g, work, fastest) -> float:
    """The share of a solve node's pullback a hand-written rule still does (a cost hint, see
    engine.introspect.closed_form), for one right-hand side b: the pullback solves with a's
    transpose, which factorizes a again (LU, O(n^3)) before its O(n^2) triangular solves and
    outer product; a hand-written rule reuses the forward's factor (lu_factor, cho_factor, or the
    triangular factor it solved with), so the forward's time, nearly all factorization, comes
    off. 1.0 for several right-hand sides (their triangular solves are work too), for a
    triangular a (the pullback's solve is already a triangular one, ``triangular.triangle``) and
    when not measurable. The pullback is timed here (``work`` is not known for this kind)."""
    _, parents, ans, a, b = node
    if np.ndim(b) != 1 or type(a) is not np.ndarray or triangle(a) is not None:
        return 1.0

    def pullback():
        gb = _solve_gb(g, a, b)
        if any(argnum == 0 for argnum, _ in parents):
            _solve_da_of(gb, ans, a, b)

    try:
        pulled, forward = fastest(pullback), fastest(lambda: solve(a, b))
    except Exception:  # noqa: BLE001 - values no longer solvable (mutated since): not known
        return 1.0
    return min(max(pulled - forward, 0.0) / pulled, 1.0) if pulled > 0 else 1.0


@node_kind(output=2, parents=parents_at(1), closed_form=_solve_closed_form)
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
    logabs = _part(a, res.logabsdet, lambda g, x: g[..., None, None] * _T(_inverse(x)), a.value)
    return type(res)(res.sign, logabs)


# --- Cholesky (Iain Murray, "Differentiation of the Cholesky decomposition", 2016) ---
def _cholesky_vjp(g, ans, a, upper=False):
    L, gL = (_T(ans), _T(g)) if upper else (ans, g)
    if L.ndim == 2 and L.dtype in LAPACK_KIND and L.dtype == gL.dtype:
        return cast_like(congruence(L, gL, upper), a)
    # stacks and mixed dtypes: products with the triangle's inverse
    n = L.shape[-1]
    P = np.tril(_T(L) @ gL)
    d = np.arange(n)
    P[..., d, d] *= 0.5  # lower triangle, halved diagonal (in place: no n x n temporaries)
    Li = lower_inverse(L)
    S = _T(Li) @ (P @ Li)  # L^-T P L^-1
    del P, Li  # freed before _one_triangle's temporaries: the gradient's peak memory
    return cast_like(_one_triangle(S, lower=not upper), a)


def _cholesky_closed_form(node, g, work, fastest) -> float:
    """The share of a cholesky node's pullback a closed form needs (a cost hint, see
    engine.introspect.closed_form). The generic pullback takes L^T G (BLAS's trmm) and the
    congruence L^-T Q L^-1 (LAPACK's sygst): about two n^3 flops, the result on one triangle;
    above 96 rows by halves, about two thirds of n^3 (triangular.congruence). A scalar objective
    that reaches a only through its factor's solves and log-determinant (a Gaussian likelihood,
    a Gaussian process's marginal likelihood: the uses of a Cholesky factor) has a closed form in
    K^-1, which LAPACK's potri computes from the forward's factor in two thirds of n^3 flops
    (scipy.linalg.lapack, as a GP rule is written: GPy's and scikit-learn's take K^-1 or K^-1 y
    from the factor). So that is what counts: potri and the copy of its triangle onto the other,
    timed, over the pullback's own measured time (``work``). A function using its factor's
    entries otherwise is credited with more than a rule saves there; the gp workloads'
    predictions were 0.7x their measured savings before it."""
    _, _, _, L, _, kwargs = node
    if work is None or work <= 0 or type(L) is not np.ndarray or L.ndim != 2 or L.dtype.kind != "f":
        return 1.0
    try:
        potri = scipy_linalg()[1].get_lapack_funcs("potri", (L,))
        lower = not kwargs.get("upper")
        out: list = []

        def closed_form():
            half, info = potri(L, lower=lower)  # K^-1's triangle, from the factor
            out[:] = [half + (np.tril(half, -1) if lower else np.triu(half, 1)).T, info]

        closed = fastest(closed_form)
        inverse, info = out
    except Exception:  # noqa: BLE001 - values no longer factorable (mutated since): not known
        return 1.0
    if info != 0 or not np.all(np.isfinite(inverse)):
        return 1.0
    return min(max(closed, 0.0) / work, 1.0)


CHOLESKY = Primitive(
    "numpy.linalg.cholesky",
    lambda a, upper=False: np.linalg.cholesky(a, upper=upper),
    _cholesky_vjp,
    closed_form=_cholesky_closed_form,
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
