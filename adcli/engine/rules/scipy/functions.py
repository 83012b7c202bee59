"""Native rules for SciPy's Python-level functions: ``scipy.special.logsumexp`` and kin,
``scipy.signal.convolve``, and ``scipy.linalg``'s triangular solve, square root, Sylvester
solve and Cholesky factor. They reach the engine through library dispatch points
(engine.library), whichever way the program imported them.

Each rule computes its value with SciPy's own function on the plain values (so results are
SciPy's, bit for bit) and records one tape node whose VJPs are the textbook derivatives;
tests/test_rules_scipy_functions.py checks each against central finite differences. A traced
argument a rule has no derivative for (``polygamma``'s order) is refused by name, never given a
silent zero.
"""

from __future__ import annotations

import numpy as np

from ....errors import UnsupportedError
from ...core import Primitive, Tracer, record_result, unwrap
from ...library import library_rule, original
from ...sums import unbroadcast
from ...where import user_location
from ..linalg import _cholesky_vjp


def _traced(x) -> bool:
    return isinstance(x, Tracer)


def refuse(name: str, what: str) -> UnsupportedError:
    return UnsupportedError(f"{name} has no derivative with respect to {what}, which is traced at {user_location(4)}: "
                            "pass a plain value (adcli.stop_gradient) or write a rule for it (`adcli export`)")


def _axes(axis, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return tuple(int(a) % max(ndim, 1) for a in axes)


def _expand(r, ndim: int, axis, keepdims: bool):
    """A reduction's result (or cotangent) with its reduced axes back, to broadcast."""
    if keepdims or np.ndim(r) == ndim:
        return r
    return np.expand_dims(r, _axes(axis, ndim))


# --- scipy.special ---------------------------------------------------------------------------


def _lse_weight(ans, a, b, axis, keepdims, sign):
    """d logsumexp / d a_i = sign * b_i * exp(a_i - ans), on the broadcast shape of a and b."""
    ndim = max(np.ndim(a), np.ndim(b) if b is not None else 0)
    w = np.exp(a - _expand(ans, ndim, axis, keepdims))
    if sign is not None:
        w = w * _expand(sign, ndim, axis, keepdims)
    return w, ndim


def _lse_a(g, ans, a, b, axis, keepdims, sign):
    w, ndim = _lse_weight(ans, a, b, axis, keepdims, sign)
    c = _expand(g, ndim, axis, keepdims) * (w if b is None else w * b)
    return unbroadcast(c, a)


def _lse_b(g, ans, a, b, axis, keepdims, sign):
    w, ndim = _lse_weight(ans, a, b, axis, keepdims, sign)
    return unbroadcast(_expand(g, ndim, axis, keepdims) * w, b)


_LOGSUMEXP = Primitive("scipy.special.logsumexp", None, _lse_a, _lse_b)


@library_rule("scipy.special.logsumexp", arrays=("a", "b"))
def _logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    av, bv = unwrap(a), unwrap(b)
    out = original("scipy.special.logsumexp")(av, axis=axis, b=bv, keepdims=keepdims, return_sign=return_sign)
    res, sign = out if return_sign else (out, None)
    # the sign's derivative is zero wherever it exists: a plain value
    res = record_result(_LOGSUMEXP, res, (a, b), {"axis": axis, "keepdims": keepdims, "sign": sign})
    return (res, sign) if return_sign else res


def _softmax_vjp(g, ans, x, axis):
    return ans * (g - np.sum(g * ans, axis=axis, keepdims=True))


def _log_softmax_vjp(g, ans, x, axis):
    return g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True)


_SOFTMAX = Primitive("scipy.special.softmax", None, _softmax_vjp)
_LOG_SOFTMAX = Primitive("scipy.special.log_softmax", None, _log_softmax_vjp)


@library_rule("scipy.special.softmax", arrays=("x",))
def _softmax(x, axis=None):
    return record_result(_SOFTMAX, original("scipy.special.softmax")(unwrap(x), axis=axis), (x,), {"axis": axis})


@library_rule("scipy.special.log_softmax", arrays=("x",))
def _log_softmax(x, axis=None):
    ans = original("scipy.special.log_softmax")(unwrap(x), axis=axis)
    return record_result(_LOG_SOFTMAX, ans, (x,), {"axis": axis})


def _multigammaln_vjp(g, ans, a, d):
    import scipy.special as sp

    return unbroadcast(g * sum(sp.digamma(a - 0.5 * j) for j in range(int(d))), a)


_MULTIGAMMALN = Primitive("scipy.special.multigammaln", None, _multigammaln_vjp)


@library_rule("scipy.special.multigammaln", arrays=("a",))
def _multigammaln(a, d):
    if _traced(d):
        raise refuse("scipy.special.multigammaln", "its dimension d")
    return record_result(_MULTIGAMMALN, original("scipy.special.multigammaln")(unwrap(a), d), (a, d), {})


def _polygamma_vjp(g, ans, n, x):
    import scipy.special as sp

    return unbroadcast(g * sp.polygamma(np.asarray(n) + 1, x), x)


_POLYGAMMA = Primitive("scipy.special.polygamma", None, None, _polygamma_vjp)


@library_rule("scipy.special.polygamma", arrays=("n", "x"))
def _polygamma(n, x):
    if _traced(n):
        raise refuse("scipy.special.polygamma", "its order n")
    return record_result(_POLYGAMMA, original("scipy.special.polygamma")(n, unwrap(x)), (n, x), {})


# --- scipy.signal.convolve -------------------------------------------------------------------


def _full_cotangent(g, s1, s2, mode):
    """The cotangent of the full convolution, given that of ``mode``'s slice of it."""
    full = tuple(a + b - 1 for a, b in zip(s1, s2))
    if mode == "full":
        return g
    if mode == "same":
        start = tuple((f - a) // 2 for f, a in zip(full, s1))
        shape = s1
    else:  # valid: the part where one input covers the other
        start = tuple(min(a, b) - 1 for a, b in zip(s1, s2))
        shape = tuple(abs(a - b) + 1 for a, b in zip(s1, s2))
    out = np.zeros(full, dtype=np.result_type(g, np.float64) if np.asarray(g).dtype.kind != "f" else np.asarray(g).dtype)
    out[tuple(slice(s, s + n) for s, n in zip(start, shape))] = g
    return out


def _convolve_vjp(k):
    def vjp(g, ans, in1, in2, mode, method):
        import scipy.signal as ss

        s1, s2 = np.shape(in1), np.shape(in2)
        gf = _full_cotangent(g, s1, s2, mode)
        other = in2 if k == 0 else in1
        c = ss.correlate(gf, other, mode="valid", method=method)
        return np.reshape(c, np.shape(in1 if k == 0 else in2))

    return vjp


_CONVOLVE = Primitive("scipy.signal.convolve", None, _convolve_vjp(0), _convolve_vjp(1))


@library_rule("scipy.signal.convolve", arrays=("in1", "in2"))
def _convolve(in1, in2, mode="full", method="auto"):
    v1, v2 = unwrap(in1), unwrap(in2)
    if np.iscomplexobj(v1) or np.iscomplexobj(v2) or np.ndim(v1) != np.ndim(v2):
        raise UnsupportedError(f"scipy.signal.convolve of traced values needs real inputs of equal rank, at {user_location(3)}")
    if mode not in ("full", "same", "valid"):
        raise UnsupportedError(f"scipy.signal.convolve(mode={mode!r}) with a traced value at {user_location(3)}")
    ans = original("scipy.signal.convolve")(v1, v2, mode=mode, method=method)
    return record_result(_CONVOLVE, ans, (in1, in2), {"mode": mode, "method": method})


# --- scipy.linalg ----------------------------------------------------------------------------


def _trans(trans) -> bool:
    """solve_triangular's ``trans``: whether it solves with a's transpose (real matrices)."""
    if trans in (0, "N", "n"):
        return False
    if trans in (1, 2, "T", "t", "C", "c"):
        return True
    raise UnsupportedError(f"scipy.linalg.solve_triangular(trans={trans!r}) with a traced value")


def _read_mask(n: int, lower: bool, unit_diagonal: bool):
    """The entries of a that solve_triangular reads."""
    mask = np.tri(n, dtype=bool) if lower else np.tri(n, dtype=bool).T
    if unit_diagonal:
        mask &= ~np.eye(n, dtype=bool)
    return mask


def _st_b(g, ans, a, b, trans, lower, unit_diagonal):
    import scipy.linalg as sl

    # x = op(a)^-1 b: db = op(a)^-T g, a solve with the other transposition
    return sl.solve_triangular(a, g, trans=0 if trans else 1, lower=lower, unit_diagonal=unit_diagonal)


def _st_a(g, ans, a, b, trans, lower, unit_diagonal):
    gb = _st_b(g, ans, a, b, trans, lower, unit_diagonal)
    ga = -(np.outer(gb, ans) if np.ndim(ans) == 1 else gb @ ans.T)  # d op(a) = -db x^T
    if trans:
        ga = ga.T
    return np.where(_read_mask(a.shape[-1], lower, unit_diagonal), ga, 0.0).astype(np.result_type(a, np.float32))


_SOLVE_TRIANGULAR = Primitive("scipy.linalg.solve_triangular", None, _st_a, _st_b)


@library_rule("scipy.linalg.solve_triangular", arrays=("a", "b"))
def _solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True):
    av, bv = unwrap(a), unwrap(b)
    if np.ndim(av) != 2 or np.ndim(bv) not in (1, 2):
        raise UnsupportedError(f"scipy.linalg.solve_triangular of traced values needs a 2-d a and a 1-d or 2-d b, at "
                               f"{user_location(3)}")
    ans = original("scipy.linalg.solve_triangular")(av, bv, trans=trans, lower=lower, unit_diagonal=unit_diagonal,
                                                   check_finite=check_finite)
    return record_result(_SOLVE_TRIANGULAR, ans, (a, b),
                         {"trans": _trans(trans), "lower": bool(lower), "unit_diagonal": bool(unit_diagonal)})


def _sqrtm_vjp(g, ans, a):
    import scipy.linalg as sl

    # a = X X: da = X dX + dX X, so the cotangent solves X^T A + A X^T = G
    return sl.solve_sylvester(ans.T, ans.T, g)


_SQRTM = Primitive("scipy.linalg.sqrtm", None, _sqrtm_vjp)


@library_rule("scipy.linalg.sqrtm", arrays=("A",))
def _sqrtm(A, *args, **kwargs):
    ans = original("scipy.linalg.sqrtm")(unwrap(A), *args, **kwargs)
    if isinstance(ans, tuple) or np.iscomplexobj(ans):
        raise UnsupportedError(f"scipy.linalg.sqrtm of a traced matrix with a complex square root (or disp=False), at "
                               f"{user_location(3)}: adcli differentiates real values only")
    return record_result(_SQRTM, ans, (A,), {})


def _sylvester_q(g, ans, a, b, q):
    import scipy.linalg as sl

    return sl.solve_sylvester(a.T, b.T, g)  # a X + X b = q: dq solves a^T Q + Q b^T = G


_SOLVE_SYLVESTER = Primitive(
    "scipy.linalg.solve_sylvester", None,
    lambda g, ans, a, b, q: -_sylvester_q(g, ans, a, b, q) @ ans.T,
    lambda g, ans, a, b, q: -ans.T @ _sylvester_q(g, ans, a, b, q),
    _sylvester_q,
)


@library_rule("scipy.linalg.solve_sylvester", arrays=("a", "b", "q"))
def _solve_sylvester(a, b, q):
    ans = original("scipy.linalg.solve_sylvester")(unwrap(a), unwrap(b), unwrap(q))
    if np.iscomplexobj(ans):
        raise UnsupportedError(f"scipy.linalg.solve_sylvester with complex values, at {user_location(3)}")
    return record_result(_SOLVE_SYLVESTER, ans, (a, b, q), {})


def _scipy_cholesky_vjp(g, ans, a, lower):
    return _cholesky_vjp(g, ans, a, upper=not lower)


_SCIPY_CHOLESKY = Primitive("scipy.linalg.cholesky", None, _scipy_cholesky_vjp)


@library_rule("scipy.linalg.cholesky", arrays=("a",))
def _scipy_cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    av = unwrap(a)
    if np.ndim(av) != 2:
        raise UnsupportedError(f"scipy.linalg.cholesky of a traced stack of matrices, at {user_location(3)}: use "
                               "np.linalg.cholesky")
    ans = original("scipy.linalg.cholesky")(av, lower=lower, check_finite=check_finite)
    return record_result(_SCIPY_CHOLESKY, ans, (a,), {"lower": bool(lower)})


def _banded_dense(l_and_u, ab):
    """The matrix a banded ``ab`` stands for, and which entries of ``ab`` it reads."""
    lower, upper = l_and_u
    n = ab.shape[1]
    dense = np.zeros((n, n), dtype=np.result_type(ab, np.float64))
    read = np.zeros(ab.shape, dtype=bool)
    for k in range(lower + upper + 1):
        j = np.arange(n)
        i = j + k - upper  # ab[k, j] = a[i, j] for u + i - j = k
        ok = (i >= 0) & (i < n)
        dense[i[ok], j[ok]] = ab[k, j[ok]]
        read[k, j[ok]] = True
    return dense, read


def _banded_b(g, ans, l_and_u, ab, b):
    dense, _ = _banded_dense(l_and_u, ab)
    return np.linalg.solve(dense.T, g)  # x = a^-1 b: db = a^-T g


def _banded_ab(g, ans, l_and_u, ab, b):
    gb = _banded_b(g, ans, l_and_u, ab, b)
    ga = -(np.outer(gb, ans) if np.ndim(ans) == 1 else gb @ ans.T)
    lower, upper = l_and_u
    out = np.zeros(ab.shape, dtype=ga.dtype)
    _, read = _banded_dense(l_and_u, ab)
    for k in range(lower + upper + 1):
        j = np.arange(ab.shape[1])
        i = j + k - upper
        ok = read[k]
        out[k, ok] = ga[i[ok], j[ok]]
    return out


_SOLVE_BANDED = Primitive("scipy.linalg.solve_banded", None, None, _banded_ab, _banded_b)


@library_rule("scipy.linalg.solve_banded", arrays=("ab", "b"))
def _solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    if _traced(l_and_u) or (isinstance(l_and_u, (tuple, list)) and any(_traced(v) for v in l_and_u)):
        raise refuse("scipy.linalg.solve_banded", "its band widths (l, u)")
    l_and_u = tuple(int(v) for v in l_and_u)
    ans = original("scipy.linalg.solve_banded")(l_and_u, unwrap(ab), unwrap(b), check_finite=check_finite)
    if np.iscomplexobj(ans) or np.ndim(unwrap(b)) > 2:
        raise UnsupportedError(f"scipy.linalg.solve_banded with complex values or a b of more than 2 dimensions, at "
                               f"{user_location(3)}")
    return record_result(_SOLVE_BANDED, ans, (l_and_u, ab, b), {})
