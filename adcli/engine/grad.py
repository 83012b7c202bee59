"""``grad``, ``value_and_grad`` and ``stop_gradient``: the public entry points of the engine."""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any, Callable

import numpy as np

from ..errors import GradInputError, TracingError, UnsupportedError
from . import allocator, hooks, library, lists
from .accumulate import Accumulator
from .core import ArrayTracer, Tracer, make_tracer
from .fills import Fill, unfill
from .mutation import copy_keep_layout
from .pytree import container, flatten, holds_numbers, paths
from .tape import Tape, backward
from .where import user_location

ndarray = np.ndarray
float64 = np.float64
_ONE = np.float64(1.0)  # the seed of a float64 output (immutable: one object serves every gradient)


def _argnums(argnums, argnum):
    """``argnum``: autograd's spelling of ``argnums`` (one int), accepted so ported code runs."""
    if argnum is None:
        return argnums
    if argnums != 0:
        raise GradInputError(f"give argnums={argnums!r} or autograd's argnum={argnum!r}, not both")
    return argnum


def value_and_grad(f: Callable, argnums: int | tuple = 0, *, argnum: int | None = None) -> Callable:
    """Return a function that computes ``(f(*args), gradient)``.

    ``argnums`` picks the argument(s) to differentiate: an int gives one gradient, a tuple gives
    a tuple of gradients. Each gradient has its argument's structure and types: a float for a
    float, an ndarray of the same shape and dtype for an array, the same dict/list/tuple nesting
    for a pytree. ``f`` must return a scalar (or an array of size 1). ``argnum=`` (autograd's
    spelling) is accepted for ``argnums``.

    >>> import numpy as np, adcli
    >>> adcli.value_and_grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
    (np.float64(5.0), array([2., 4.]))
    """
    return _differentiate(f, _argnums(argnums, argnum), None)


def vjp(f: Callable, argnums: int | tuple, cotangent: Any) -> Callable:
    """Like value_and_grad for a function with any output: the reverse pass starts from
    ``cotangent`` (a pytree of arrays shaped like the output) instead of 1.0. The profiler's
    replays use it to time a call's own forward + reverse, with no reduction added."""
    return _differentiate(f, argnums, cotangent)


def _differentiate(f: Callable, argnums, cotangent) -> Callable:
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    if not nums or not all(isinstance(k, int) for k in nums):
        raise GradInputError(f"argnums must be an int or a non-empty tuple of ints, not {argnums!r}")

    allocator.keep_gradient_memory()  # once per process: glibc keeps the memory gradients free
    positions: dict = {}  # len(args) -> the argnums as positions (checked once per arity)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        nums_pos = positions.get(len(args))
        if nums_pos is None:
            nums_pos = positions[len(args)] = _positions(f, argnums, nums, len(args))
        given = args  # the arguments as passed: what a profiler keys the gradient by (a tracer is described by its value)
        tape = Tape()
        args = list(args)
        inputs = []  # (leaves, unflatten, [(leaf position, tracer)]); leaves None for a plain float or array
        for k in nums_pos:
            a = args[k]
            t = type(a)
            if t is Fill:  # an array the calling (differentiated) code made with np.zeros & co.
                a = args[k] = a.now()
                t = type(a)
            if t is float or (t is ndarray and a.dtype.kind == "f"):  # the common case, without a pytree
                tracer = args[k] = make_tracer(a, tape.leaf(), tape)
                inputs.append((a, None, tracer))
                continue
            leaves, unflatten = flatten(a)
            traced = _trace_leaves(f, k, a, leaves, tape)
            new_leaves = list(leaves)
            for pos, tr in traced:
                new_leaves[pos] = tr
            args[k] = unflatten(new_leaves)
            inputs.append((leaves, unflatten, traced))
        session = outer = hooks._session
        depth = getattr(_running, "depth", 0)
        if depth and session is not None:
            # a gradient taken while another runs on this thread (odeint's adjoint takes one per
            # step of its reverse pass): the profiler sees only the outer one, whose stretch this
            # time belongs to; the session is out of the hook meanwhile
            hooks.uninstall()
        _running.depth = depth + 1
        library.enter()  # SciPy's Python functions with rules, patched from the first gradient on (engine.library)
        try:
            if depth:
                session = None
            if session is not None:
                session.start(tape, f, given, kwargs)
            lists.enter(getattr(f, "__globals__", None))  # np.array([...]) of traced values, while f records (engine.lists)
            try:
                out = f(*args, **kwargs)
                if type(out) is not Tracer and type(out) is not ArrayTracer:
                    out = unfill(out)  # an array made by np.zeros & co.: what it stands for
            finally:
                lists.leave()  # the pullbacks work on plain arrays: NumPy's own np.asarray
            if tape.escape is not None:
                raise tape.escape
            if cotangent is None:
                value, grads = _reverse(f, tape, out, session)
            else:
                value, grads = _reverse_from(tape, out, cotangent, session)
        finally:
            library.leave()
            tape.close(_escaped)
            _running.depth = depth
            if session is not None:
                session.finish(tape)
            elif depth and hooks._session is None and outer is not None:
                hooks.install(outer)
        results = []
        for leaves, unflatten, traced in inputs:
            if unflatten is None:  # leaves is the argument, traced its tracer
                results.append(_as_gradient(grads, traced.idx, leaves))
                continue
            new_leaves = [None if _passes_through(v) else v for v in leaves]
            for pos, tr in traced:
                new_leaves[pos] = _as_gradient(grads, tr.idx, leaves[pos])
            results.append(unflatten(new_leaves))
        return value, (results[0] if single else tuple(results))

    return wrapper


def grad(f: Callable, argnums: int | tuple = 0, *, argnum: int | None = None) -> Callable:
    """Return a function that computes the gradient of scalar-valued ``f`` (see value_and_grad).

    >>> import numpy as np, adcli
    >>> adcli.grad(lambda x: np.sum(np.sin(x)))(np.zeros(3))
    array([1., 1., 1.])
    """
    vg = value_and_grad(f, _argnums(argnums, argnum))

    @functools.wraps(f)
    def gradient(*args, **kwargs):
        return vg(*args, **kwargs)[1]

    return gradient


def stop_gradient(x: Any) -> Any:
    """``x`` as a constant: the plain value of a traced value (pytrees elementwise). An array
    is a copy with the same layout: the program may write into it, and the traced value's own
    memory is also what the tape's pullbacks read."""
    leaves, unflatten = flatten(x)
    return unflatten([_plain(v) if isinstance(v, Tracer) else v for v in leaves])


def _plain(t: Tracer):
    v = t.value
    return copy_keep_layout(v) if type(v) is ndarray else v


# --- internals --------------------------------------------------------------------------------


def _positions(f, argnums, nums: tuple, n: int) -> tuple:
    """``nums`` as positions among ``n`` positional arguments, or GradInputError."""
    for k in nums:
        if not -n <= k < n:
            raise GradInputError(
                f"argnums={argnums!r} but {getattr(f, '__name__', 'f')}() was called with {n} positional argument(s)"
            )
    pos = tuple(k % n for k in nums)
    if len(set(pos)) != len(pos):
        raise GradInputError(f"argnums={argnums!r} names the same argument twice")
    return pos


_running = threading.local()  # .depth: the gradients running on this thread, outermost first


def _escaped() -> Exception:
    return TracingError(
        f"a traced value was used at {user_location(3)} after its gradient computation finished "
        "(it escaped, e.g. into a global or a closure); compute with it inside the function being "
        "differentiated, or keep adcli.stop_gradient(x) of it instead"
    )


def _trace_leaves(f, k, arg, leaves, tape):
    traced = []
    where = paths(arg)
    for pos, v in enumerate(leaves):
        t = type(v)
        if isinstance(v, Tracer):
            raise UnsupportedError(
                "a traced value was passed to grad() inside another differentiated function: "
                "higher-order differentiation (grad of grad) is not supported"
            )
        name = getattr(f, "__name__", "f")
        loc = f"argument {k}{where[pos]}" if where[pos] else f"argument {k}"
        if isinstance(v, ndarray) and t is not ndarray:
            if t is not np.memmap:  # its operators and reductions are not ndarray's: never half followed
                raise GradInputError(f"{loc} of {name}() is a {t.__module__}.{t.__name__}: adcli differentiates plain "
                                     "ndarrays only (np.matrix multiplies with *, a masked array skips entries); "
                                     "pass np.asarray(...) of it (and apply the mask yourself)")
            v = leaves[pos] = np.asarray(v)  # a memory-mapped array: an ndarray view of its data
        kind = container(v)
        if kind is not None and holds_numbers(v):
            raise GradInputError(f"{loc} of {name}() is a {kind}: only dict, OrderedDict, defaultdict, list, tuple "
                                 "and namedtuple containers are differentiated (its arrays would get no gradient); "
                                 "convert it (dict(...), list(...), dataclasses.asdict(...)) or leave it out of argnums")
        if t is float or (isinstance(v, (np.floating, ndarray)) and np.result_type(v).kind == "f"):
            traced.append((pos, make_tracer(v, tape.leaf(), tape)))
        elif _passes_through(v) and v is not arg:
            continue
        else:
            kind = f"{type(v).__name__} {v!r}" if not isinstance(v, ndarray) else f"{v.dtype} array"
            raise GradInputError(
                f"{loc} of {name}() is {kind[:80]}: only floats and float arrays can be differentiated "
                f"(pass a float, e.g. {float(v) if isinstance(v, (int, np.integer)) else 'x.astype(float)'}, "
                "or leave it out of argnums)"
            )
    return traced


def _passes_through(v) -> bool:
    # Inside a differentiated pytree, non-numeric leaves (None, strings, callables, ...) are
    # carried along with gradient None; numbers that are not floats are refused as a likely slip.
    return not isinstance(v, (int, float, complex, np.number, np.bool_, ndarray))


def _reverse(f, tape: Tape, out, session):
    if not isinstance(out, Tracer):
        _check_scalar(f, out)
        return out, None  # the output does not depend on the inputs: all gradients are zero
    if out.tape is not tape:
        raise UnsupportedError(f"{getattr(f, '__name__', 'f')}() returned a value traced by a different gradient computation")
    value = out.value
    acc = Accumulator(len(tape.nodes))
    if type(value) is float64:  # the usual scalar output, without the checks' and np.result_type's calls
        acc.grads[out.idx] = _ONE
    else:
        _check_scalar(f, value)
        acc.grads[out.idx] = np.ones_like(value) if type(value) is ndarray else np.result_type(value).type(1.0)
    if session is not None:
        session.backward(tape, acc, out.idx)
    else:
        backward(tape.nodes, acc, out.idx)
    return value, acc


def _reverse_from(tape: Tape, out, cotangent, session):
    """The reverse pass seeded with ``cotangent`` at every traced leaf of the output."""
    leaves, cots = flatten(out)[0], flatten(cotangent)[0]
    if len(leaves) != len(cots):
        raise GradInputError(f"the cotangent has {len(cots)} leaves, the output {len(leaves)}")
    acc = Accumulator(len(tape.nodes))
    start = -1
    for leaf, c in zip(leaves, cots):
        if isinstance(leaf, Tracer) and leaf.tape is tape and c is not None:
            if np.shape(c) != np.shape(leaf.value):
                raise GradInputError(f"a cotangent of shape {np.shape(c)} for an output of shape {np.shape(leaf.value)}")
            acc.add(leaf.idx, c)
            start = max(start, leaf.idx)
    value = stop_gradient(out)
    if start < 0:
        return value, None
    if session is not None:
        session.backward(tape, acc, start)
    else:
        backward(tape.nodes, acc, start)
    return value, acc


def _check_scalar(f, value):
    if isinstance(value, (bool, int, np.bool_, np.integer)) or (
            isinstance(value, ndarray) and value.dtype.kind in "biu"):
        raise GradInputError(
            f"{getattr(f, '__name__', 'f')}() returned {np.result_type(value)} {value!r:.40}: only a float output can be "
            "differentiated (a comparison or a count has no gradient)"
        )
    shape = np.shape(value)
    if shape != () and np.size(value) != 1:  # a size-1 array (shape (1,), (1, 1)) counts, as in autograd
        raise GradInputError(
            f"grad needs a scalar output, but {getattr(f, '__name__', 'f')}() returned shape {shape}: "
            "reduce it (e.g. np.sum) or differentiate one element"
        )


# References to a cotangent held only by the accumulator's list: the list slot, the local
# name `g` and getrefcount's argument.
_ONLY_IN_GRADS = 3


def _as_gradient(acc, idx, leaf):
    g = None if acc is None else acc.grads[idx]
    if type(leaf) is float:
        return 0.0 if g is None else float(g)
    if isinstance(leaf, np.generic):
        return leaf.dtype.type(0.0 if g is None else g)
    if g is None:
        return np.zeros_like(leaf)
    # Hand the cotangent over without a copy when it is a fresh array nobody else holds: the
    # accumulator made it, or only the grads list refers to it (a pullback's new array; a
    # shared one, like add's g handed to both operands, has more references and is copied).
    fresh = type(g) is ndarray and g.dtype == leaf.dtype and g.base is None and g.flags.writeable
    if fresh and (idx in acc.owned or sys.getrefcount(g) <= _ONLY_IN_GRADS):
        out = g
    else:
        out = np.array(g, dtype=leaf.dtype, copy=True)
    if out.shape != leaf.shape:
        if out.size == leaf.size:
            out = out.reshape(leaf.shape)  # a scalar cotangent for a 0-d array
        else:
            raise AssertionError(f"internal error: gradient of shape {out.shape} for an input of shape {leaf.shape}")
    return out
