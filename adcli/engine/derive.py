"""Derived rules for NumPy's Python-level functions: run the function's own body with tracers.

Many NumPy functions are Python code over a few C primitives (``kron`` is ``expand_dims`` +
``multiply`` + ``reshape``); ``func._implementation`` is that body without the dispatch layer.
The bodies start with ``asanyarray(a)``, which only an ndarray subclass survives, so inside a
body each tracer is presented as a :class:`TracedArray`: a private ndarray subclass that views
the tracer's value and carries the tracer. Its ufunc and array-function hooks, and the C-level
methods the bodies use (``reshape``, ``__getitem__``, ``diagonal``, ...), hand the tracer back
to the engine and wrap the traced result again. Any *other* way NumPy makes a new array from
it goes through ``__array_finalize__``, which raises: a loud error instead of a silent copy.

Some routes cannot be seen at all (``np.asarray(sub)`` strips the subclass; ``plain[i] = sub``
copies raw numbers). That is why only functions on the explicit VERIFIED list are derived, each
for the arguments and ranks its tests check against finite differences, and why a body that
returns an untraced result from traced inputs is an error.
"""

from __future__ import annotations

import numpy as np
import numpy._core.numeric as numeric  # where np.asarray/np.array live (patched with them)

from ..errors import NoRuleError, UnsupportedError
from . import lists as _lists
from .core import Tracer, has_tracer
from .mutation import setitem
from .registry import entry
from .signature import Signature
from .where import user_location

ndarray = np.ndarray
_constructing = 0  # > 0 while wrap() makes a TracedArray on purpose


class TracedArray(ndarray):
    """A tracer seen as an ndarray, alive only while a NumPy body runs (see module doc)."""

    _adcli_own = True  # the engine's own subclass (core.refuse_subclass lets it pass)

    _tracer: Tracer

    def __array_finalize__(self, obj):
        if _constructing or obj is None:
            return
        raise UnsupportedError(
            "a NumPy function body made a new array from a traced value through a route the engine cannot "
            f"follow (at {user_location(2)}); this function is not derivable here: import or write a rule for it"
        )

    # -- NumPy protocols: unwrap, let the engine dispatch, wrap the answer --
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.pop("out", None)
        if isinstance(out, tuple) and len(out) == 1:
            out = out[0]
        if out is Ellipsis:
            out = None
        result = getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs))
        if out is not None:
            return _into(out, result, ufunc)
        return _wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    # -- escape routes --
    def __float__(self):
        raise _escape("float()")

    def __int__(self):
        raise _escape("int()")

    def __index__(self):
        raise _escape("use as an index")

    def item(self, *args):
        raise _escape(".item()")

    def tolist(self):
        raise _escape(".tolist()")

    @property
    def flat(self):
        raise _escape(".flat")

    def __iter__(self):
        # ndarray's C iterator would hand out raw numbers; give traced elements instead.
        for i in range(len(self)):
            yield self[i]

    # -- C-level methods used by NumPy's bodies, routed to the tracer --
    def __getitem__(self, idx):
        return _wrap(self._tracer[_unwrap(idx)])

    def __setitem__(self, idx, value):
        self._tracer[_unwrap(idx)] = _unwrap(value)

    def reshape(self, *shape, order="C"):
        return _wrap(self._tracer.reshape(*shape, order=order))

    def transpose(self, *axes):
        return _wrap(self._tracer.transpose(*axes))

    @property
    def T(self):
        return _wrap(self._tracer.T)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        if out is not None:
            raise _escape(".trace(out=...)")
        d = np.diagonal(self._tracer, offset, axis1, axis2)
        return _wrap(np.sum(d, axis=-1, dtype=dtype))


def _method(name):
    def method(self, *args, **kwargs):
        return _wrap(getattr(self._tracer, name)(*_unwrap(args), **_unwrap(kwargs)))

    method.__name__ = name
    return method


for _name in ("ravel", "flatten", "squeeze", "swapaxes", "diagonal", "copy", "astype", "dot", "take", "repeat",
              "conj", "conjugate", "sum", "prod", "max", "min", "mean", "cumsum", "cumprod", "clip"):
    setattr(TracedArray, _name, _method(_name))


def wrap(t: Tracer) -> TracedArray:
    global _constructing
    _constructing += 1
    try:
        a = np.asarray(t.value).view(TracedArray)
    finally:
        _constructing -= 1
    a._tracer = t
    return a


def _tree_map(leaf, x):
    """``x`` with ``leaf(v)`` for each of its leaves, through tuples, lists, dicts and named
    tuples (the results of slogdet, eigh, ...): how values cross between a NumPy body and the
    engine, in both directions."""
    t = type(x)
    if t is tuple or t is list:
        return t(_tree_map(leaf, v) for v in x)
    if t is dict:
        return {k: _tree_map(leaf, v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return t(*[_tree_map(leaf, v) for v in x])
    return leaf(x)


def _wrap_leaf(x):
    return wrap(x) if isinstance(x, Tracer) else x


def _unwrap_leaf(x):
    return x._tracer if type(x) is TracedArray else x


def _wrap(x):
    """Tracers as the arrays a NumPy body sees (TracedArray), wherever they are in ``x``."""
    return _tree_map(_wrap_leaf, x)


def _unwrap(x):
    """TracedArrays back to the engine's tracers, wherever they are in ``x``."""
    return _tree_map(_unwrap_leaf, x)


def _into(out, result, ufunc):
    """``ufunc(..., out=o)`` inside a body, for a traced ``o``: an assignment ``o[...] = result``
    with the engine's semantics (the tracer is updated, so every alias and every view sees it,
    and a write into a view reaches the array it views), and NumPy returns ``out``."""
    if type(out) is TracedArray:
        if type(out._tracer.value) is not ndarray:
            # a NumPy scalar presented as a 0-d array (var's `true_divide(ret, n, out=ret)`):
            # scalars are immutable, nothing else can see it change, so rebind the wrapper
            if isinstance(result, Tracer) and np.result_type(result.value) != out.dtype:
                result = result.astype(out.dtype)
            if not isinstance(result, Tracer):
                return _wrap(result)
            out._tracer = result
            return out
        setitem(out._tracer, Ellipsis, result)
        return out
    if isinstance(result, Tracer):
        raise UnsupportedError(
            f"a NumPy function body writes a traced result of np.{ufunc.__name__} into a plain array "
            f"(at {user_location(3)}); this function is not derivable here: import or write a rule for it"
        )
    out[...] = result
    return out


def _escape(what):
    return UnsupportedError(
        f"a NumPy function body takes {what} of a traced value (at {user_location(3)}); the gradient would be "
        "lost, so this function is not derivable here: import or write a rule for it"
    )


# --- asarray / array inside bodies ---------------------------------------------------------
#
# Bodies such as outer, polyval and cov start with ``asarray(a)`` / ``array(a, ndmin=2)``, which
# would strip the subclass and silently turn a traced value into a constant. For derivations
# marked ``asarray=True`` these names are swapped, for the duration of the body, for versions
# that keep a TracedArray traced (applying dtype / ndmin / copy through the engine) and behave
# exactly like NumPy's for everything else, so other code running meanwhile is unaffected.

_real_asarray = np.asarray
_real_array = np.array
_patch_depth = 0


def _asarray(a, dtype=None, order=None, **kwargs):
    if type(a) is TracedArray:
        return a if dtype is None or np.dtype(dtype) == a.dtype else _wrap(a._tracer.astype(dtype))
    return _real_asarray(a, dtype, order, **kwargs)


def _array(obj, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, **kwargs):
    if type(obj) is not TracedArray:
        return _real_array(obj, dtype, copy=copy, order=order, subok=subok, ndmin=ndmin, **kwargs)
    t = obj._tracer
    if dtype is not None and np.dtype(dtype) != obj.dtype:
        t, copy = t.astype(dtype), False
    if ndmin > obj.ndim:
        t = t.reshape((1,) * (ndmin - obj.ndim) + obj.shape)
    if copy:
        t = np.copy(t)
    return _wrap(t) if t is not obj._tracer else obj


def _patch_targets(body):
    return [(body.__globals__, "asarray", _asarray), (body.__globals__, "array", _array),
            (vars(np), "asarray", _asarray), (vars(np), "array", _array),
            (vars(numeric), "asarray", _asarray), (vars(numeric), "array", _array)]


class _KeepTraced:
    def __init__(self, body):
        self.targets = [(ns, name, new) for ns, name, new in _patch_targets(body) if name in ns]

    def __enter__(self):
        global _patch_depth
        if _patch_depth == 0:
            self.saved = [(ns, name, ns[name]) for ns, name, _ in self.targets]
            for ns, name, new in self.targets:
                ns[name] = new
        _patch_depth += 1

    def __exit__(self, *exc):
        global _patch_depth
        _patch_depth -= 1
        if _patch_depth == 0:
            for ns, name, old in self.saved:
                ns[name] = old


class Derivation:
    """Run ``func``'s NumPy body with tracers, for the calls ``accepts`` allows.

    ``accepts(traced, args, kwargs)`` returns None when the derivation is verified for this
    call, else a short reason; ``traced`` is the set of positional indices / keyword names that
    hold tracers. ``asarray=True``: the body's asarray/array calls keep traced values traced.
    """

    def __init__(self, func, accepts=None, note: str = "", asarray: bool = False, lists: tuple = ()) -> None:
        self.func = func
        self.body = func._implementation
        self.accepts = accepts
        self.note = note
        self.asarray = asarray
        self.lists = lists  # positions of array-like arguments: a list holding traced values becomes an array

    def __call__(self, args: tuple, kwargs: dict):
        if self.lists:
            args = tuple(_lists.traced_list(a) if i in self.lists else a for i, a in enumerate(args))
        traced = {i for i, a in enumerate(args) if has_tracer(a)} | {k for k, v in kwargs.items() if has_tracer(v)}
        if self.accepts is not None:
            reason = self.accepts(traced, args, kwargs)
            if reason:
                e = entry(self.func)
                raise NoRuleError(
                    f"no rule and no verified derivation for {Signature.of_call(e.module, e.qualname, args, kwargs)} at "
                    f"{user_location(3)}: the derivation is verified only {reason}; import a rule "
                    "(`adcli rules list`) or write one (`adcli export`)"
                )
        if self.asarray:
            with _KeepTraced(self.body):
                result = self.body(*_wrap(args), **_wrap(kwargs))
        else:
            result = self.body(*_wrap(args), **_wrap(kwargs))
        out = _unwrap(result)
        if traced and not has_tracer(out):
            raise UnsupportedError(
                f"{entry(self.func).name}'s NumPy body returned an untraced result from traced inputs (at "
                f"{user_location(2)}): it lost track of the gradient; import or write a rule for it"
            )
        return out


def derive(func, accepts=None, note: str = "", asarray: bool = False, lists: tuple = ()) -> Derivation:
    """Put ``func`` on the verified list (its tests live in tests/test_derived.py)."""
    d = Derivation(func, accepts, note, asarray, lists)
    entry(func).derivation = d
    return d
