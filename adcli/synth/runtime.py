"""What a synthesized rule calls besides the registry's VJPs: summing a cotangent back to its
operand's shape, an element's cotangent added into its array's, the adjoint of a container, the
written adjoints' helpers (adjoints.py), and the cotangent returned for an argument (its
structure, shape and dtype, None where it holds no float). The gradient of a call it has no
written adjoint for is calls.py's.

The adjoint of a list, tuple or dict is a :class:`Sparse`: its items' adjoints by index or key,
a missing one zero; ``Sparse + Sparse`` merges, ``0.0 + Sparse`` is the Sparse. An adjoint
array is written in place only by ``scatter`` and ``take``, and only once the pullback owns it
(every other update of an adjoint makes a new array).
"""

from __future__ import annotations

import numbers

import numpy as np

from ..engine.kernels import roll as _roll
from ..engine.sums import unbroadcast as _engine_unbroadcast
from ..errors import SynthesisError, UnsupportedError

__all__ = ["Sparse", "copy", "cotangent", "fit", "item", "own", "plain", "reshape_back", "roll_back", "saved", "scatter",
           "spread", "spread_moment", "take", "take_last", "to_extrema", "transpose_back", "unbroadcast",
           "unconcatenate", "unstack", "zero_passing"]

ndarray = np.ndarray
_CONTAINERS = (list, tuple, dict)


def plain(name: str, *args) -> None:
    """Refuse an ndarray subclass among a synthesized rule's arguments (at any depth of a list,
    tuple or dict), as the engine refuses one beside a traced value: a masked array skips its
    masked entries, np.matrix multiplies with ``*``; the rule is written for ndarray. A
    memory-mapped array is an ndarray in all but storage: it passes."""
    for a in args:
        t = type(a)
        if t is ndarray or t is float or t is int:
            continue
        if isinstance(a, _CONTAINERS):
            plain(name, *(a.values() if isinstance(a, dict) else a))
        elif isinstance(a, ndarray) and t is not np.memmap:
            raise UnsupportedError(f"the synthesized rule of {name} given a {t.__module__}.{t.__name__} argument: it "
                                   "follows plain ndarray semantics only; pass np.asarray(...) of it")


def unbroadcast(c, x):
    """A cotangent summed back to its operand's shape (the engine's unbroadcast). A zero
    adjoint (0.0: a branch not taken, a loop run zero times) that met a broadcasting VJP may
    come with fewer elements than the operand: zeros of its shape. Anything else that does not
    fit is an error, never a cotangent of the wrong shape."""
    if type(x) is ndarray and type(c) is ndarray:
        if c.shape == x.shape and c.dtype == x.dtype:  # the common case, at the cost of two comparisons
            return c
        if not (c.ndim < x.ndim or c.size < x.size):
            return _engine_unbroadcast(c, x)
        if not c.any():
            return np.zeros(x.shape, c.dtype if x.dtype.kind not in "fc" else x.dtype)
        return np.broadcast_to(c, x.shape)  # raises for a cotangent that does not fit
    if type(x) is list or type(x) is tuple:  # np.sum(xs) of a list: its items' adjoints, as one array
        return np.broadcast_to(np.asarray(c), np.shape(x)) if np.ndim(c) < len(np.shape(x)) else c
    return _engine_unbroadcast(c, x)


class Sparse(dict):
    """The adjoint of a container: item adjoints by index or key (missing: zero)."""

    __slots__ = ()
    __array_ufunc__ = None  # an array + Sparse comes here (and fails), never an object array

    def __add__(self, other):
        if isinstance(other, numbers.Number) and other == 0:
            return Sparse(self)
        other = sparse(other)
        if type(other) is ndarray and other.ndim >= 1:  # a list's adjoint as one array (np.sum(xs)'s)
            other = _items(other)
        if not isinstance(other, Sparse):
            raise TypeError(f"the adjoint of a container added to one of {type(other).__name__}")
        out = Sparse(self)
        for k, v in other.items():
            out[k] = out[k] + v if k in out else v
        return out

    __radd__ = __add__


def sparse(c):
    """A pytree cotangent (list, tuple, dict of cotangents) as a Sparse; anything else as it is."""
    if isinstance(c, Sparse):
        return c
    if isinstance(c, (list, tuple)):
        return Sparse({k: sparse(v) for k, v in enumerate(c) if v is not None})
    if isinstance(c, dict):
        return Sparse({k: sparse(v) for k, v in c.items() if v is not None})
    return 0.0 if c is None else c


def dense(d, like):
    """The adjoint ``d`` with the structure of the value ``like`` (the cotangent a gradient of a
    call returning ``like`` is seeded with)."""
    if isinstance(like, _CONTAINERS):
        items = like.items() if isinstance(like, dict) else enumerate(like)
        out = {k: dense(item(d, k), v) for k, v in items}
        if isinstance(like, dict):
            return out
        if isinstance(like, tuple):  # a named tuple (np.linalg.eigh's) as a plain one: the engine's pytree
            return tuple(out.values())
        return list(out.values())
    if isinstance(d, Sparse):
        raise SynthesisError(f"the adjoint of a container for a value of type {type(like).__name__}")
    if isinstance(like, ndarray) and np.shape(d) != like.shape:
        return np.zeros(like.shape, like.dtype if like.dtype.kind in "fc" else float) + d
    return d


def own(g):
    """The output's cotangent as a value the pullback may write into (``scatter`` and ``take``
    write into adjoints in place; the engine's ``g`` is not the pullback's to change)."""
    if type(g) is ndarray:
        return g.copy()
    return sparse(g) if isinstance(g, _CONTAINERS) else g


def copy(m):
    """The pullback's own copy of an array written into or a list appended to."""
    return m.copy() if type(m) is ndarray else list(m) if isinstance(m, list) else m


def saved(v):
    """The elements a write overwrites, kept (a view would change with the write)."""
    return v.copy() if type(v) is ndarray else v


def _basic(i) -> bool:
    """Whether ``d[i] += c`` adds ``c`` once per element (no index repeated): an int, a slice,
    None, ..., a mask, or a tuple of them."""
    if isinstance(i, tuple):
        return all(_basic(k) for k in i)
    if isinstance(i, ndarray):
        return i.dtype == bool
    return i is None or i is Ellipsis or isinstance(i, (int, np.integer, slice))


def _owned(d, x):
    """``d`` as an array of x's shape the pullback owns (0.0 until then)."""
    if type(d) is ndarray and d.shape == np.shape(x) and d.flags.writeable:
        return d
    x = np.asarray(x)
    out = np.zeros(x.shape, x.dtype if x.dtype.kind in "fc" else float)
    out += d  # in place: a 0-d array stays an array (0-d + a scalar would be a scalar)
    return out


def scatter(d, x, i, c):
    """``d`` (the adjoint of ``x``) with ``c`` (the adjoint of ``x[i]``) added at ``i``; in place
    once the pullback owns d (O(1) per element). A container's adjoint is a Sparse. An adjoint
    nothing reached (0.0) adds nothing."""
    if _zero(c):
        return d
    if type(d) is ndarray and type(i) is int:  # the scalar loop's case: d is already the pullback's (x[i])
        d[i] += c
        return d
    if isinstance(x, _CONTAINERS):
        out = Sparse(d) if isinstance(d, Sparse) else sparse(d) + Sparse()
        if isinstance(i, slice) and not isinstance(x, dict):
            c = sparse(c)
            for k, j in enumerate(range(len(x))[i]):
                if k in c:
                    out[j] = out[j] + c[k] if j in out else c[k]
            return out
        key = int(i) if isinstance(i, np.integer) else i
        key = key % len(x) if isinstance(key, int) and not isinstance(x, dict) else key
        out[key] = out[key] + sparse(c) if key in out else sparse(c)
        return out
    d = _owned(d, x)
    if _basic(i):
        d[i] += c
    else:
        np.add.at(d, i, c)
    return d


def take(d, x, i):
    """``(d with zeros at i, d[i])``: the adjoint of the elements a write at ``i`` replaced goes
    to the written value, and none to the values they had before."""
    if isinstance(x, _CONTAINERS):
        out = Sparse(d) if isinstance(d, Sparse) else Sparse()
        key = i % len(x) if isinstance(i, (int, np.integer)) and not isinstance(x, dict) else i
        return out, out.pop(key, 0.0)
    d = _owned(d, x)
    c = d[i]
    c = c.copy() if type(c) is ndarray else c
    d[i] = 0.0
    return d, c


def _items(d) -> Sparse:
    """A list's adjoint that a NumPy function's VJP gave as one array (np.sum(xs): the list as
    an array), as its items' adjoints; each row copied out of a writeable array (a view of it
    could be written in place later, and change the array)."""
    return Sparse({k: d[k].copy() if d.flags.writeable and d.ndim > 1 else d[k] for k in range(len(d))})


def take_last(d, xs):
    """``(d without the last item's adjoint, that adjoint)``: an append undone."""
    if isinstance(d, numbers.Number) and d == 0:
        return d, 0.0
    out = sparse(d)
    if type(d) is ndarray and d.ndim >= 1 and len(d) == len(xs):
        out = _items(d)
    if not isinstance(out, Sparse):
        raise SynthesisError(f"the adjoint of a list is a {type(d).__name__}")
    out = Sparse(out)
    return out, out.pop(len(xs) - 1, 0.0)


def item(g, k):
    """The adjoint of item ``k`` of a list or tuple display whose adjoint is ``g``."""
    if isinstance(g, Sparse):
        return g.get(k, 0.0)
    if isinstance(g, numbers.Number) and g == 0:
        return 0.0
    return g[k]


def cotangent(d, x):
    """The cotangent returned for the argument ``x``: ``d`` with x's structure, shape and float
    dtype (a scalar 0.0 for an argument nothing reached becomes zeros), None where x holds no float."""
    if isinstance(x, _CONTAINERS):
        items = x.items() if isinstance(x, dict) else enumerate(x)
        out = {k: cotangent(item(d, k) if isinstance(d, (Sparse, numbers.Number)) else d[k], v) for k, v in items}
        return out if isinstance(x, dict) else tuple(out.values()) if isinstance(x, tuple) else list(out.values())
    if isinstance(d, Sparse):
        raise SynthesisError(f"the adjoint of a container for an argument of type {type(x).__name__}")
    if isinstance(x, ndarray):
        if x.dtype.kind not in "fc":
            return None
        c = unbroadcast(d, x)
        return c if type(c) is ndarray and c.dtype == x.dtype else np.asarray(c, dtype=x.dtype)
    if isinstance(x, (float, complex, np.floating, np.complexfloating)):
        return x.dtype.type(d) if isinstance(x, np.generic) and np.ndim(d) == 0 else d
    return None


# --- written adjoints' helpers (adjoints.py) ------------------------------------------------


def _zero(g) -> bool:
    """An adjoint nothing reached (0.0): the written adjoints pass it on as it is."""
    return type(g) is float and g == 0.0


def zero_passing(vjp):
    """``vjp`` (a generalized ufunc's, matmul's), passing an adjoint nothing reached (0.0) on as
    it is: it needs a cotangent with its core dimensions."""
    def passing(g, *args):
        return 0.0 if _zero(g) else vjp(g, *args)
    return passing


def spread(g, x, axis, keepdims: bool, mean: bool = False):
    """The cotangent of ``x`` for ``np.sum(x, axis, keepdims=...)`` (``np.mean`` with ``mean``):
    g spread back over the axes summed (a read-only broadcast: every use makes a new array)."""
    if _zero(g):
        return 0.0
    shape = np.shape(x)
    if axis is not None and not keepdims:
        g = np.expand_dims(g, axis)
    out = np.broadcast_to(g, shape)
    if mean:
        out = out * (np.size(g) / max(int(np.prod(shape)), 1))
    return out


def spread_moment(g, x, axis, keepdims: bool, ddof=0, std=None):
    """The cotangent of ``x`` for ``np.var(x, axis, ddof=...)``, or for ``np.std`` given its
    answer ``std``: g times the deviations from the mean, 2 / (n - ddof) (over 2 std for std)."""
    if _zero(g):
        return 0.0
    x = np.asarray(x)
    n = x.size if axis is None else int(np.prod([x.shape[a] for a in np.atleast_1d(axis)]))
    if axis is not None and not keepdims:
        g = np.expand_dims(g, axis)
        std = None if std is None else np.expand_dims(std, axis)
    d = (x - x.mean(axis=axis, keepdims=True)) * (2.0 / (n - ddof))
    return d * (g if std is None else g / (2.0 * std))


def to_extrema(g, ans, x, axis, keepdims: bool):
    """The cotangent of ``x`` for ``np.max``/``np.min`` along ``axis``: g to the extremal entries,
    split evenly between ties (as the engine's rule does)."""
    if _zero(g):
        return 0.0
    x = np.asarray(x)
    if axis is not None and not keepdims:
        ans, g = np.expand_dims(ans, axis), np.expand_dims(g, axis)
    mask = x == ans
    return mask * (g / mask.sum(axis=axis, keepdims=True))


def unstack(g, axis):
    """The adjoint of the list ``np.stack`` was given: g's slices along ``axis``."""
    if _zero(g):
        return 0.0
    if type(g) is ndarray and axis == 0:  # the common case, without moveaxis's argument handling
        return Sparse(enumerate(g))
    return Sparse(enumerate(np.moveaxis(g, axis, 0)))


def unconcatenate(g, parts, axis):
    """The adjoint of the sequence ``np.concatenate`` was given: g cut where the parts meet (with
    ``axis=None`` the parts were flattened first)."""
    if _zero(g):
        return 0.0
    if axis is None:
        cuts = np.cumsum([np.size(p) for p in parts])[:-1]
        return Sparse((k, np.reshape(c, np.shape(p))) for k, (c, p) in enumerate(zip(np.split(g, cuts), parts)))
    cuts = np.cumsum([np.shape(p)[axis] for p in parts])[:-1]
    return Sparse(enumerate(np.split(g, cuts, axis=axis)))


def fit(c, v):
    """The cotangent of a write's value ``v`` from the written elements' ``c``: NumPy's
    assignment drops v's leading axes of length 1 and broadcasts it over the elements, so c is
    given them back, then summed to v's shape."""
    if type(v) is ndarray and type(c) is ndarray and v.ndim > c.ndim:
        c = np.reshape(c, (1,) * (v.ndim - c.ndim) + c.shape)
    return unbroadcast(c, v)


def roll(x, shift, axis=None):
    """``np.roll(x, shift, axis)``, by the engine's kernel for one shift along one axis."""
    return _roll(x, shift, axis)


def roll_back(g, shift, axis=None):
    """The cotangent of ``x`` for ``np.roll(x, shift, axis)``: g rolled back."""
    return 0.0 if _zero(g) else _roll(g, np.negative(shift), axis)  # the kernel takes NumPy's other forms to np.roll


def reshape_back(g, x):
    """The cotangent of ``x`` for a reshape of it (``np.reshape``, ``np.squeeze``, ``x.ravel()``, ...)."""
    return 0.0 if _zero(g) else np.reshape(g, np.shape(x))


def transpose_back(g, axes=None):
    """The cotangent of ``x`` for ``np.transpose(x, axes)``: g transposed back."""
    return 0.0 if _zero(g) else np.transpose(g) if axes is None else np.transpose(g, np.argsort(axes))
