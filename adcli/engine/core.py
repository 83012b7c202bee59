"""Tracers, primitives and recording: the engine's hot path.

A :class:`Tracer` stands for one value while a function is being differentiated. It wraps the
value (it is *not* an ndarray subclass), so every way NumPy could read the raw numbers
(``__float__``, ``__array__``, ...) is visible and raises a clear error instead of silently
dropping the gradient.

A :class:`Primitive` is an operation with a rule: a forward function on plain values and one
vector-Jacobian product (VJP) per differentiable argument, ``vjp(g, ans, *args) -> cotangent``.
``apply`` runs the forward function on the unwrapped values and records one tape node.
"""

from __future__ import annotations

import numpy as np

from ..errors import UnsupportedError
from . import hooks
from .escapes import hidden_tracer, refuse_subclass
from .keep import kept, node_trim, vjp_reads
from .sums import unbroadcast
from .tape import Tape, node_kind, parent_at, parents_at

ndarray = np.ndarray
# Tracer construction without __init__: assigning the slots directly is ~40% cheaper, and
# it happens once per primitive.
_new = object.__new__


class Tracer:
    """A traced value: ``value`` (float, NumPy scalar or ndarray), its index on ``tape``.

    ``_root``, ``_redo`` and ``_views`` are set only on some tracers (view bookkeeping for in-place
    writes, see engine.mutation), in an instance dict made when the first is set; the class's
    None answers for the others. (As unset slots, each read of one went through
    ``__getattr__`` and an exception, twice per view made.)
    """

    __slots__ = ("value", "idx", "tape", "__weakref__", "__dict__")
    _root = _redo = _views = None
    # Higher than ndarray's, so mixed binary operators defer to us.
    __array_priority__ = 100.0

    def __init__(self, value, idx: int, tape: Tape) -> None:
        self.value = value
        self.idx = idx
        self.tape = tape

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"


class ArrayTracer(Tracer):
    """A tracer whose value is an ndarray: it adds the sequence protocol (indexing, len,
    iteration, assignment; see tracer_api).

    Scalar tracers must *not* have ``__getitem__``: NumPy treats any object with it as a
    sequence, so ``plain[i] = scalar_tracer`` would fail with NumPy's own misleading message
    instead of reaching ``__float__``, which raises our explanation.
    """

    __slots__ = ()


FILL = None  # engine.fills.Fill, once that module is loaded (it builds on this one)


def make_tracer(value, idx: int, tape: Tape) -> Tracer:
    """A tracer of the right class for ``value`` (the hot paths inline the same choice)."""
    t = _new(ArrayTracer if type(value) is ndarray else Tracer)
    t.value = value
    t.idx = idx
    t.tape = tape
    return t


class Primitive:
    """An operation with a native rule: ``fwd`` on plain values, one VJP per argument.

    ``vjps[k]`` is ``None`` for an argument that is not differentiable (an index, an axis).
    """

    __slots__ = ("name", "fwd", "vjps", "reads", "trim", "reads_each", "joint", "binary_pullback", "lean",
                 "closed_form", "generalised")

    def __init__(self, name: str, fwd, *vjps, reads: bool = True, joint=None, lean: bool | None = None,
                 closed_form=None) -> None:
        self.name = name
        self.fwd = fwd
        self.vjps = vjps
        # For a two-argument primitive: ``joint(g, ans, x, y) -> (x's, y's)``, both cotangents
        # at once, for when both arguments are traced and share work (maximum's masks); its
        # nodes then have their own kind (pb_joint, the binary layout).
        self.joint = joint
        self.binary_pullback = pb_binary if joint is None else pb_joint
        # Whether the VJPs read the values of the arguments (add's and subtract's only need
        # their shapes): a plain array argument is then kept as a copy (see kept).
        self.reads = reads
        # For the elementwise fast paths (apply1, apply2): what a node needs to keep, by which
        # arguments are traced (see engine.keep); None: everything.
        self.trim = node_trim(vjps)
        # For any other node (record_general): the positions each VJP reads; None: everything.
        self.reads_each = vjp_reads(vjps) if reads else None
        # Cost hints for a profiler, declared with the rule (engine.introspect.lean, .closed_form
        # and .generalised say what they mean): not read on any hot path.
        self.lean = lean
        self.closed_form = closed_form
        self.generalised = isinstance(fwd, np.ufunc) and fwd.signature is not None  # matmul & co.

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"


def mixed_tapes(a: Tracer, b: Tracer):
    raise UnsupportedError(
        "values from two different gradient computations met in one operation "
        f"({a!r} and {b!r}): higher-order differentiation (grad of grad) is not supported"
    )


def shape_only(v):
    """What a node keeps of an array whose pullbacks read only its shape and dtype (an argument
    no VJP reads, see engine.keep; the arguments of rules declared ``reads=False``: sums, roll): a
    read-only stride-0 array of the same shape and dtype, one element of memory, shared by every
    node of that shape. The array itself can then be freed as soon as the program drops it,
    rather than at the end of the gradient. Small arrays are kept as they are (cheaper than the
    look-up)."""
    if type(v) is not ndarray or v.size < _SHAPE_ONLY_MIN:
        return v
    key = (v.shape, v.dtype)
    stand_in = _STAND_INS.get(key)
    if stand_in is None:
        stand_in = np.broadcast_to(np.zeros((), v.dtype), v.shape)
        if len(_STAND_INS) < 1024:
            _STAND_INS[key] = stand_in
    return stand_in


_SHAPE_ONLY_MIN = 256
_STAND_INS: dict = {}


# --- recording ------------------------------------------------------------------------------
#
# Node layouts (first element is always the pullback, see tape.backward):
#   unary:   (pb_unary,   prim, parent_idx, ans, x)
#   binary:  (pb_binary,  prim, parents, ans, x, y)       parents: (x's idx or None, y's idx or None)
#            (pb_joint for a primitive with a joint VJP, pb_passes for x + y of two numbers:
#            the same layout)
#   general: (pb_general, prim, parents, ans, vals, kwargs)


@node_kind(output=3, parents=parent_at(2))
def pb_unary(node, g, acc):
    _, prim, p, ans, x = node
    c = prim.vjps[0](g, ans, x)
    grads = acc.grads
    if grads[p] is None:  # the common first contribution, without a method call
        grads[p] = c
    else:
        acc.add(p, c)


def passes(g, ans, x, y):
    """The VJP of an argument whose cotangent is the output's (x + y, x - y in x): pb_binary
    hands ``g`` on without calling it (the scalar loops' additions)."""
    return g


@node_kind(output=3, parents=parents_at(2))
def pb_binary(node, g, acc):
    _, prim, (px, py), ans, x, y = node
    vjps = prim.vjps
    grads = acc.grads
    # x's share, then y's, unrolled (the scalar loops' hot path: no loop, no pairs)
    if px is not None:
        vjp = vjps[0]
        if vjp is not None:
            c = g if vjp is passes else vjp(g, ans, x, y)
            if type(x) is ndarray or type(c) is ndarray:  # numbers (scalar loops) need no unbroadcast
                c = unbroadcast(c, x)
            if grads[px] is None:
                grads[px] = c
            else:
                acc.add(px, c)
    if py is not None:
        vjp = vjps[1]
        if vjp is not None:
            c = g if vjp is passes else vjp(g, ans, x, y)
            if type(y) is ndarray or type(c) is ndarray:
                c = unbroadcast(c, y)
            if grads[py] is None:
                grads[py] = c
            else:
                acc.add(py, c)


@node_kind(output=3, parents=parents_at(2))
def pb_passes(node, g, acc):
    """A binary node of two numbers whose VJPs both pass the cotangent on (x + y in a scalar
    loop, recorded by tracer_api's operators): pb_binary's work without its look-ups (~200 ->
    ~110 ns a node). An array cotangent (a number's can be 0-d) goes to pb_binary."""
    if type(g) is ndarray:
        pb_binary(node, g, acc)
        return
    px, py = node[2]
    grads = acc.grads
    if px is not None:
        if grads[px] is None:
            grads[px] = g
        else:
            acc.add(px, g)
    if py is not None:
        if grads[py] is None:
            grads[py] = g
        else:
            acc.add(py, g)


@node_kind(output=3, parents=parents_at(2))
def pb_joint(node, g, acc):
    """A binary node whose primitive has a joint VJP: both cotangents from one call when both
    arguments are traced, else pb_binary's."""
    _, prim, (px, py), ans, x, y = node
    if px is None or py is None:
        pb_binary(node, g, acc)
        return
    cx, cy = prim.joint(g, ans, x, y)
    acc.add(px, unbroadcast(cx, x))
    acc.add(py, unbroadcast(cy, y))


BINARY_KINDS = (pb_binary, pb_joint, pb_passes)  # the node kinds of the binary layout


def binary_parents(node) -> tuple:
    """A binary node's ((argnum, idx), ...), as the general nodes list them."""
    return tuple((k, p) for k, p in enumerate(node[2]) if p is not None)


@node_kind(output=3, parents=parents_at(2))
def pb_general(node, g, acc):
    _, prim, parents, ans, vals, kwargs = node
    vjps = prim.vjps
    for argnum, p in parents:
        vjp = vjps[argnum]
        if vjp is not None:
            acc.add(p, vjp(g, ans, *vals, **kwargs))


def unary_node(prim: Primitive, idx: int, ans, xv) -> tuple:
    """A one-argument elementwise node keeping what its VJP reads (see engine.keep). The callers
    call it only for a primitive with a ``trim`` and an array output of _SHAPE_ONLY_MIN
    elements or more (inline checks: scalar loops pay nothing more)."""
    if hooks._session is not None:  # a profiler counts the outputs: all kept
        return (pb_unary, prim, idx, ans, xv)
    keep_ans, keep_x = prim.trim
    return (pb_unary, prim, idx, ans if keep_ans else None, xv if keep_x else None)


def apply1(prim: Primitive, x: Tracer):
    """Apply a one-argument primitive to a tracer (the elementwise fast path)."""
    xv = x.value
    ans = prim.fwd(xv)
    tape = x.tape
    nodes = tape.nodes
    big = prim.trim is not None and type(ans) is ndarray and ans.size >= _SHAPE_ONLY_MIN
    nodes.append(unary_node(prim, x.idx, ans, xv) if big else (pb_unary, prim, x.idx, ans, xv))
    t = _new(ArrayTracer if type(ans) is ndarray else Tracer)
    t.value = ans
    t.idx = len(nodes) - 1
    t.tape = tape
    return t


def apply2(prim: Primitive, a, b):
    """Apply a two-argument elementwise primitive; at least one of a, b is a Tracer."""
    plain = False  # a plain ndarray operand whose values the pullback reads (see kept)
    if isinstance(a, Tracer):
        tape = a.tape
        av = a.value
        if isinstance(b, Tracer):
            if b.tape is not tape:
                mixed_tapes(a, b)
            bv = b.value
            parents = (a.idx, b.idx)
        else:
            bv = b
            parents = (a.idx, None)
            tb = type(b)
            plain = tb is ndarray
            if not plain and tb is not float and tb is not int:  # (numbers first: the common operands)
                if tb is FILL:  # an array made by np.zeros & co. (engine.fills): what it stands for
                    return apply2(prim, a, b.now())
                if isinstance(b, ndarray):
                    refuse_subclass(prim.name, b)
    else:
        ta = type(a)
        plain = ta is ndarray
        if not plain and ta is not float and ta is not int:
            if ta is FILL:
                return apply2(prim, a.now(), b)
            if isinstance(a, ndarray):
                refuse_subclass(prim.name, a)
        tape = b.tape
        av = a
        bv = b.value
        parents = (None, b.idx)
    ans = prim.fwd(av, bv)
    kept_ans = ans
    trim = prim.trim
    # keep what the VJPs read, when the output is an array big enough for that to matter (a
    # profiler counts the outputs: all kept)
    if trim is not None and type(ans) is ndarray and ans.size >= _SHAPE_ONLY_MIN and hooks._session is None:
        px, py = parents
        keep_ans, keep_x, keep_y = trim[0 if py is None else 1 if px is None else 2]  # x traced, y traced, both
        if not keep_ans:
            kept_ans = None
        if not keep_x:
            av = shape_only(av)
        if not keep_y:
            bv = shape_only(bv)
    else:
        keep_x = keep_y = True
    if plain and prim.reads:  # a plain operand the VJPs read: a copy (see kept)
        if parents[0] is not None:  # x traced, y the plain operand
            if keep_y:
                bv = kept(bv, tape)
        elif keep_x:
            av = kept(av, tape)
    nodes = tape.nodes
    nodes.append((prim.binary_pullback, prim, parents, kept_ans, av, bv))
    t = _new(ArrayTracer if type(ans) is ndarray else Tracer)
    t.value = ans
    t.idx = len(nodes) - 1
    t.tape = tape
    return t


def apply(prim: Primitive, *args, **kwargs):
    """Apply a primitive whose tracers may sit at any positional argument.

    Keyword arguments are parameters (axis, keepdims, ...), never traced.
    """
    tape, parents, vals = _parents(prim, args)
    ans = prim.fwd(*vals, **kwargs)
    if tape is None or not parents:
        return ans
    return record_general(prim, tape, parents, ans, args, vals, kwargs)


def record_result(prim: Primitive, ans, args: tuple, kwargs: dict):
    """Like :func:`apply` for a result ``ans`` computed already from the plain values of
    ``args`` (a rule that calls the library's own function, which returns more than the traced
    value): records ``prim``'s node and returns ``ans`` traced, or ``ans`` if nothing is."""
    tape, parents, vals = _parents(prim, args)
    hidden = next((k for k, v in kwargs.items() if has_tracer(v)), None)  # parameters: never traced
    if hidden is not None:
        raise hidden_tracer(prim.name, hidden)
    if tape is None or not parents:
        return ans
    return record_general(prim, tape, parents, ans, args, vals, kwargs)


def _parents(prim, args):
    """(tape, [(argnum, node index)] of the traced arguments with a VJP, plain values)."""
    tape = None
    parents = []
    vals = list(args)
    for i, a in enumerate(args):
        if isinstance(a, Tracer):
            if tape is None:
                tape = a.tape
            elif a.tape is not tape:
                mixed_tapes(a, next(t for t in args if isinstance(t, Tracer)))
            vals[i] = a.value
            if i < len(prim.vjps) and prim.vjps[i] is not None:
                parents.append((i, a.idx))
        else:  # a plain value: an array or a number (first, cheap), or what must not pass as one
            t = type(a)
            if t is ndarray or t is float or t is int or a is None:
                continue
            if (t is list or t is tuple or t is dict) and has_tracer(a):
                raise hidden_tracer(prim.name, i)
            if t is FILL or isinstance(a, ndarray):  # (FILL: unwrapped at the doors)
                refuse_subclass(prim.name, a)
    return tape, parents, vals


def record_general(prim, tape, parents, ans, args, vals, kwargs):
    kept_ans = ans
    if prim.reads:
        each = prim.reads_each
        if each is None or hooks._session is not None:  # (a profiler counts the outputs: all kept)
            vals = [kept(v, tape) if v is a else v for v, a in zip(vals, args)]  # the plain ones
        else:  # what the traced arguments' VJPs read (see engine.keep): the rest as stand-ins
            read = each[parents[0][0]] if len(parents) == 1 else frozenset().union(*(each[k] for k, _ in parents))
            if 1 not in read:
                kept_ans = None
            vals = [(kept(v, tape) if v is a else v) if i + 2 in read else shape_only(v)
                    for i, (v, a) in enumerate(zip(vals, args))]
    elif hooks._session is None:  # the pullbacks read shapes only (see shape_only)
        vals, kept_ans = [shape_only(v) for v in vals], None
    nodes = tape.nodes
    nodes.append((pb_general, prim, tuple(parents), kept_ans, tuple(vals), kwargs))
    return make_tracer(ans, len(nodes) - 1, tape)


def output_of(node):
    """The value a node made, if its kind records it (see node_kind), else None. A pullback
    that was not declared with ``node_kind`` raises AttributeError here: an undeclared kind
    would silently under-count the allocations the advisor ranks by."""
    at = node[0].output_at
    return None if at is None else node[at]


def record(tape: Tape, node: tuple, ans) -> Tracer:
    """Append a hand-built node (rules with their own pullback) and wrap its value."""
    nodes = tape.nodes
    nodes.append(node)
    return make_tracer(ans, len(nodes) - 1, tape)


def has_tracer(x) -> bool:
    """Whether ``x`` is a tracer or a (nested) tuple, list or dict holding one."""
    if isinstance(x, Tracer):
        return True
    t = type(x)
    if t is tuple or t is list:
        return any(has_tracer(v) for v in x)
    if t is dict:
        return any(has_tracer(v) for v in x.values())
    return False


def unwrap(x):
    """The plain value of a tracer; containers are unwrapped one level deep (lists of tracers)."""
    if isinstance(x, Tracer):
        return x.value
    t = type(x)
    if t is list or t is tuple:
        return t(unwrap(v) for v in x)
    return x
