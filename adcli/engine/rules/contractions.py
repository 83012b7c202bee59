"""Native rules for contractions: matmul (and the @ operator), dot, vdot, inner, tensordot,
einsum, and the NumPy 2 gufuncs vecdot / matvec / vecmat.

Every rule is the same idea: the cotangent of one operand of a contraction is the contraction
of the output cotangent with the *other* operands, laid out like that operand.
"""

from __future__ import annotations

import functools
import math
import operator

import numpy as np
from numpy._core.einsumfunc import _parse_einsum_input
from numpy.linalg._linalg import _multi_dot_matrix_chain_order as _chain_order  # NumPy's own order

from ...errors import UnsupportedError
from ..core import Primitive, Tracer, apply, apply2
from ..mutation import viewing
from ..registry import defnative, entry
from .elementwise import defufunc

ndarray = np.ndarray


def _val(x):
    return x.value if isinstance(x, Tracer) else x


def _T(x):
    return np.swapaxes(x, -1, -2)


def cast_like(c, x):
    """Give cotangent ``c`` the float dtype of its argument ``x`` (float32 in, float32 out)."""
    dt = getattr(x, "dtype", None)
    if dt is None or dt.kind != "f":
        return c
    if type(x) is np.ndarray:
        return np.asarray(c, dtype=dt)
    return dt.type(c)  # a NumPy scalar argument


# --- matmul: promote 1-d operands to matrices, use the 2-d rule, drop the added axis again;
# batch dimensions are summed back to the operand's shape by the ufunc fast path (unbroadcast) ---
def _promote(g, a, b):
    a, b, g = np.asarray(a), np.asarray(b), np.asarray(g)
    if b.ndim == 1:  # first: restores the last axis of g, which a 1-d a needs
        b, g = b[:, None], g[..., None]
    if a.ndim == 1:
        a, g = a[None, :], g[..., None, :]
    return g, a, b


# Vector operands take direct forms: a matrix product with a length-1 axis ((n,1) @ (1,1))
# misses BLAS and costs 10-30x the elementwise product it amounts to.
def _matmul_da(g, ans, a, b):
    if type(b) is ndarray and type(g) is ndarray and b.ndim == 2 and g.ndim == 2:  # matrices: the usual case
        return g @ b.T
    na, nb = np.ndim(a), np.ndim(b)
    if na == 1 and nb == 1:  # (n) @ (n) -> ()
        return np.multiply(g, b)
    if na == 2 and nb == 1:  # (m,n) @ (n) -> (m)
        return np.multiply.outer(np.asarray(g), b)
    if na == 1 and nb == 2:  # (n) @ (n,m) -> (m)
        return np.asarray(b) @ g
    g2, a2, b2 = _promote(g, a, b)
    da = g2 @ _T(b2)
    return da[..., 0, :] if na == 1 else da


def _matmul_db(g, ans, a, b):
    if type(a) is ndarray and type(g) is ndarray and a.ndim == 2 and g.ndim == 2:  # matrices: the usual case
        return a.T @ g
    na, nb = np.ndim(a), np.ndim(b)
    if na == 1 and nb == 1:
        return np.multiply(g, a)
    if na == 2 and nb == 1:
        return np.asarray(g) @ a
    if na == 1 and nb == 2:
        return np.multiply.outer(a, np.asarray(g))
    g2, a2, b2 = _promote(g, a, b)
    db = _T(a2) @ g2
    return db[..., 0] if nb == 1 else db


MATMUL = defufunc(np.matmul, _matmul_da, _matmul_db)
# np.dot on operands of at most 2 dimensions is matmul (without batch dimensions).
DOT2 = Primitive("numpy.dot", np.dot, _matmul_da, _matmul_db)

# (n),(n)->(), (m,n),(n)->(m), (n),(n,m)->(m); batch dimensions are un-broadcast as for matmul.
defufunc(np.vecdot, lambda g, ans, x, y: g[..., None] * y, lambda g, ans, x, y: g[..., None] * x)
defufunc(
    np.matvec,
    lambda g, ans, A, x: g[..., :, None] * np.asarray(x)[..., None, :],
    lambda g, ans, A, x: (_T(A) @ g[..., :, None])[..., 0],
)
defufunc(
    np.vecmat,
    lambda g, ans, x, A: (A @ g[..., :, None])[..., 0],
    lambda g, ans, x, A: np.asarray(x)[..., :, None] * g[..., None, :],
)


@defnative(np.linalg.matmul)
def _linalg_matmul(x1, x2):
    return np.matmul(x1, x2)


@defnative(np.linalg.vecdot)
def _linalg_vecdot(x1, x2, /, *, axis=-1):
    # The gufunc's axis= keyword names each operand's own axis: move it last in both.
    return np.vecdot(np.moveaxis(x1, axis, -1), np.moveaxis(x2, axis, -1))


# --- tensordot: axes normalised to ((axes of a), (axes of b)), non-negative ---
def _free(n, contracted):
    return [i for i in range(n) if i not in contracted]


def _tensordot_da(g, ans, a, b, axes):
    ca, cb = axes
    na, nb = np.ndim(a), np.ndim(b)
    fa, fb = _free(na, ca), _free(nb, cb)
    r = np.tensordot(g, b, (list(range(len(fa), len(fa) + len(fb))), fb))
    # r's axes: a's free axes, then b's contracted axes in b's order; map each back to a's axis.
    src = fa + [ca[cb.index(j)] for j in sorted(cb)]
    return cast_like(np.transpose(r, np.argsort(src)), a)


def _tensordot_db(g, ans, a, b, axes):
    ca, cb = axes
    na, nb = np.ndim(a), np.ndim(b)
    fa, fb = _free(na, ca), _free(nb, cb)
    r = np.tensordot(a, g, (fa, list(range(len(fa)))))
    src = [cb[ca.index(i)] for i in sorted(ca)] + fb
    return cast_like(np.transpose(r, np.argsort(src)), b)


TENSORDOT = Primitive(
    "numpy.tensordot",
    lambda a, b, axes: np.tensordot(a, b, axes),
    _tensordot_da,
    _tensordot_db,
)
# np.inner and the N-d np.dot are tensordots, with NumPy's own forward: their sums can run in
# another order than tensordot's (a different last bit), and a traced result has NumPy's value
INNER = Primitive("numpy.inner", lambda a, b, axes: np.inner(a, b), _tensordot_da, _tensordot_db)
DOTN = Primitive("numpy.dot", lambda a, b, axes: np.dot(a, b), _tensordot_da, _tensordot_db)


def _tensordot_axes(axes, na, nb):
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if not 0 <= n <= min(na, nb):
            raise ValueError(f"tensordot: axes={n} but the operands have {na} and {nb} dimensions")
        return tuple(range(na - n, na)), tuple(range(n))
    ax_a, ax_b = axes
    ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
    ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
    if len(ax_a) != len(ax_b):
        raise ValueError("shape-mismatch for sum")
    return tuple(int(i) % na for i in ax_a), tuple(int(i) % nb for i in ax_b)


def tensordot(a, b, axes=2):
    na, nb = np.ndim(_val(a)), np.ndim(_val(b))
    return apply(TENSORDOT, a, b, axes=_tensordot_axes(axes, na, nb))


defnative(np.tensordot)(tensordot)


@defnative(np.linalg.tensordot)
def _linalg_tensordot(x1, x2, /, *, axes=2):
    return tensordot(x1, x2, axes)


@defnative(np.dot)
def _dot(a, b, out=None):
    if out is not None:
        raise UnsupportedError("np.dot(..., out=...) with a traced value: write y = np.dot(a, b) instead")
    na, nb = np.ndim(_val(a)), np.ndim(_val(b))
    if na == 0 or nb == 0:
        return np.multiply(a, b)
    if na <= 2 and nb <= 2:
        return apply2(DOT2, a, b)
    # N-d: sum over the last axis of a and the second-to-last of b (the only one if b is 1-d).
    return apply(DOTN, a, b, axes=((na - 1,), (max(nb - 2, 0),)))


@defnative(np.inner)
def _inner(a, b):
    na, nb = np.ndim(_val(a)), np.ndim(_val(b))
    if na == 0 or nb == 0:
        return np.multiply(a, b)
    return apply(INNER, a, b, axes=((na - 1,), (nb - 1,)))


# np.vdot of real arrays: the dot product of the flattened operands (no conjugation needed), with
# NumPy's own forward (it sums a strided or reversed operand in its own order)
VDOT = Primitive("numpy.vdot", np.vdot, lambda g, ans, a, b: g * np.reshape(b, np.shape(a)),
                 lambda g, ans, a, b: g * np.reshape(a, np.shape(b)))


@defnative(np.vdot)
def _vdot(a, b):
    if np.iscomplexobj(_val(a)) or np.iscomplexobj(_val(b)) or np.size(_val(a)) != np.size(_val(b)):
        return np.dot(np.ravel(a), np.ravel(b))  # as before (NumPy's own error for unequal sizes)
    return apply(VDOT, a, b)


# --- einsum ---
# The call is parsed by NumPy's own parser into explicit subscripts (ellipses become letters,
# implicit outputs become explicit), and the forward runs on those, so forward and backward read
# the same expression. The cotangent of operand k is the einsum of the output cotangent with the
# other operands onto k's distinct letters; a letter only k has (summed away in the forward) is
# carried by a vector of ones; a letter k has with size 1 while others broadcast it is summed back;
# a letter repeated in k (a diagonal, 'ii->i') is written onto that diagonal of a zero array.
def _einsum_fwd(*ops, subs, out, optimize):
    return np.einsum(",".join(subs) + "->" + out, *ops, optimize=optimize)


def _einsum_vjp(k, g, ans, *ops, subs, out, optimize):
    x = ops[k]
    shape = np.shape(x)
    mine = subs[k]
    letters = "".join(dict.fromkeys(mine))  # distinct, in order of first appearance
    size = {c: shape[mine.index(c)] for c in letters}
    others = [(s, o) for i, (s, o) in enumerate(zip(subs, ops)) if i != k]
    seen = set(out).union(*(set(s) for s, _ in others))
    terms = [out] + [s for s, _ in others] + [c for c in letters if c not in seen]
    arrays = [g] + [o for _, o in others] + [np.ones(size[c]) for c in letters if c not in seen]
    c = np.einsum(",".join(terms) + "->" + letters, *arrays, optimize=optimize or _worth_a_plan(terms, arrays))
    # NumPy's einsum broadcasts a letter of size 1 against size n: where k had the 1, its
    # cotangent is summed over the n; where k had the n and everything else the 1, c has a 1
    # and is broadcast back to n.
    wide = tuple(i for i, ch in enumerate(letters) if size[ch] == 1 and c.shape[i] != 1)
    if wide:
        c = c.sum(axis=wide, keepdims=True)
    target = tuple(size[ch] for ch in letters)
    if c.shape != target:
        c = np.broadcast_to(c, target)
    if len(letters) < len(mine):
        dtype = x.dtype if getattr(x, "dtype", None) is not None and x.dtype.kind == "f" else c.dtype
        full = np.zeros(shape, dtype)
        strides = [sum(full.strides[i] for i, ch in enumerate(mine) if ch == ch2) for ch2 in letters]
        diag = np.lib.stride_tricks.as_strided(full, c.shape, strides, writeable=True)
        diag[...] = c
        c = full
    return cast_like(c, x)


# A pullback's einsum contracts the cotangent with the other operands. NumPy's einsum without
# optimize loops over every combination of letters in C; with optimize, pairs go to BLAS through
# tensordot after a planning step of fixed cost. _EINSUM_PLAN_MIN trades that cost against BLAS's
# speed: the plan pays from about 2^15 combinations; below, the C loop is done before a plan would be
# (docs/engine.md § Measurements behind the code).
_EINSUM_PLAN_MIN = 1 << 15


def _worth_a_plan(terms, arrays):
    if len(arrays) < 2:
        return False
    dims = {}
    for term, a in zip(terms, arrays):
        for ch, d in zip(term, np.shape(a)):
            dims[ch] = max(dims.get(ch, 1), d)
    return math.prod(dims.values()) >= _EINSUM_PLAN_MIN


@functools.lru_cache(maxsize=None)
def _einsum_prim(n):
    return Primitive("numpy.einsum", _einsum_fwd, *[functools.partial(_einsum_vjp, k) for k in range(n)])


@defnative(np.einsum)
def _einsum(*operands, out=None, optimize=False, **kwargs):
    if out is not None:
        raise UnsupportedError("np.einsum(..., out=...) with a traced value: write y = np.einsum(...) instead")
    if kwargs.pop("dtype", None) is not None:
        raise UnsupportedError("np.einsum(..., dtype=...) with a traced value: cast the operands with .astype first")
    kwargs.pop("order", None)
    kwargs.pop("casting", None)
    if kwargs:
        raise TypeError(f"einsum() got unexpected keyword argument(s) {', '.join(kwargs)}")
    # numpy._core's parser (private, but it is the one np.einsum(optimize=...) itself uses).
    ins, outs, _ = _parse_einsum_input([_val(o) for o in operands])
    if isinstance(operands[0], str):
        arrays = list(operands[1:])
    else:  # interleaved form: op0, sublist0, op1, sublist1, ..., [output sublist]
        arrays = list(operands[0 : len(operands) - len(operands) % 2 : 2])
    subs = tuple(ins.split(","))
    if len(subs) != len(arrays):
        raise ValueError("einsum: the number of subscript terms does not match the number of operands")
    opt = optimize if isinstance(optimize, (bool, str)) else False  # a precomputed path is for other shapes
    prim = _einsum_prim(len(arrays))
    ans = apply(prim, *arrays, subs=subs, out=outs, optimize=opt)
    if len(arrays) == 1 and isinstance(arrays[0], Tracer):
        # 'ii->i', 'ij->ji', 'ij': NumPy returns a (writeable) view
        viewing(arrays[0], ans, lambda r: apply(prim, r, subs=subs, out=outs, optimize=opt))
    return ans


# --- chains ---
@defnative(np.linalg.multi_dot)
def _multi_dot(arrays, *, out=None):
    if out is not None:
        raise UnsupportedError("np.linalg.multi_dot(..., out=...) with traced values: write y = multi_dot(...)")
    # NumPy's own order of products (its float results depend on it): cheapest first for three
    # arrays, the matrix-chain order beyond; vectors at the ends made 2-d and back
    arrays = list(arrays)
    n = len(arrays)
    if n < 2:
        raise ValueError("Expecting at least two arrays.")
    if n == 2:
        return np.dot(arrays[0], arrays[1])
    first, last = np.ndim(_val(arrays[0])), np.ndim(_val(arrays[-1]))
    if first == 1:
        arrays[0] = np.atleast_2d(arrays[0])
    if last == 1:
        arrays[-1] = np.atleast_2d(arrays[-1]).T
    if n == 3:
        (a0, a1b0), (b1c0, c1) = np.shape(_val(arrays[0])), np.shape(_val(arrays[2]))
        if a0 * b1c0 * (a1b0 + c1) < a1b0 * c1 * (a0 + b1c0):
            result = np.dot(np.dot(arrays[0], arrays[1]), arrays[2])
        else:
            result = np.dot(arrays[0], np.dot(arrays[1], arrays[2]))
    else:
        order = _chain_order([_val(a) for a in arrays])
        result = _chain(arrays, order, 0, n - 1)
    if first == 1 and last == 1:
        return result[0, 0]
    return np.ravel(result) if first == 1 or last == 1 else result


def _chain(arrays, order, i, j):
    if i == j:
        return arrays[i]
    return np.dot(_chain(arrays, order, i, order[i, j]), _chain(arrays, order, order[i, j] + 1, j))


@defnative(np.linalg.matrix_power)
def _matrix_power(a, n):
    n = operator.index(n)
    if n == 0:
        return np.linalg.matrix_power(_val(a), 0)  # the identity: no dependence on a
    if n < 0:
        a, n = np.linalg.inv(a), -n
    if n == 3:  # NumPy's own short cut, in its order: (a a) a, not a (a a) (another last bit)
        return (a @ a) @ a
    result, base = None, a
    while True:  # binary powering: log2(n) squarings, each a recorded matmul
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if not n:
            break
        base = base @ base
    return np.copy(result) if result is a else result


# --- np.outer: a native rule the advisor advised (origin="advised"; docs/advisor.md § Engine defaults) ---
def _outer_a(g, ans, a, b):
    return (np.asarray(g) @ np.ravel(b)).reshape(np.shape(a))


def _outer_b(g, ans, a, b):
    return (np.ravel(a) @ np.asarray(g)).reshape(np.shape(b))


OUTER = Primitive("numpy.outer", lambda a, b: np.outer(a, b), _outer_a, _outer_b)


@defnative(np.outer, origin="advised")
def _outer(a, b, out=None):
    if out is not None:
        return entry(np.outer).derivation((a, b), {"out": out})
    return apply(OUTER, a, b)
