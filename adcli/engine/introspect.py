"""The tape as a cost model reads it: the engine's public questions about a recorded node, so
that no tool outside the engine reads a node's tuple or imports a pullback's private name.

A node is what :func:`adcli.engine.core.record` (or ``apply``) puts on the tape. The profiler
(profiler/stretches.py, profiler/decompose.py) asks of it:

* what it is: :func:`kind` (its pullback), :func:`primitive` (the rule's Primitive, when one
  recorded it), :func:`name`, :func:`operation` (a key for "the same operation");
* what it depends on: :func:`parents`, :func:`carried` (the edges that are no step of a chain);
* what it made and reads: :func:`output`, :func:`allocated`, :func:`reads`, :func:`argnums`,
  :func:`data`;
* its kind of work: :func:`elementwise`, :func:`generalised`, :func:`lean`;
* what to measure: :func:`forward` (its forward again), :func:`vjp_work` (its VJP expressions
  alone), :func:`with_values` (the node on other values: one-element ones), :func:`closed_form`
  (what a hand-written pullback of it still does).

The answers come from the rule's own declarations, not from names matched here (as JAX keeps a
primitive's rules in tables keyed by the primitive, and PyTorch's derivatives.yaml marks a
formula elementwise): ``Primitive(lean=..., closed_form=...)``, ``node_kind(closed_form=...)``
beside the rule, and a generalised ufunc's signature (``Primitive.generalised``).

A node keeps the values its VJPs read; under a profiler's session it keeps every value (core:
nothing trimmed), which the answers about values assume. Outside one, an argument no VJP reads
is kept as a stand-in of its shape (core.shape_only), or not at all.
"""

from __future__ import annotations

import functools
from typing import Callable, Iterable

import numpy as np

from .core import BINARY_KINDS, Primitive, output_of, pb_binary, pb_general, pb_joint, pb_passes, pb_unary
from .mutation import _pb_setitem
from .sums import unbroadcast
from .tape import node_parents

ndarray = np.ndarray

parents = node_parents  # the indices of the values a node was computed from (tape.node_kind declares them)
output = output_of  # the value a node made, or None (a view, or nothing new); raises for an undeclared kind


def kind(node) -> Callable:
    """The node's kind: its pullback, which declared its layout (``tape.node_kind``)."""
    return node[0]


def primitive(node) -> Primitive | None:
    """The Primitive whose rule recorded ``node`` (``core.apply1``, ``apply2``, ``apply``): its
    name, forward, VJPs and cost hints. None for a node a rule built itself (indexing, a
    reshape, an in-place write, np.linalg.solve, a hand-written rule's)."""
    k = node[0]
    return node[1] if k is pb_unary or k is pb_general or k in BINARY_KINDS else None


def name(node) -> str:
    """The primitive's name (``numpy.sin``), else the name of the node's pullback (``_pb_getitem``)."""
    prim = primitive(node)
    return prim.name if prim is not None else node[0].__name__


def operation(node):
    """A hashable key for the node's operation: ``(kind, primitive)`` for a primitive's node (one
    pullback serves every ufunc), else its kind. Nodes with the same key are the same operation
    (a loop repeats one)."""
    prim = primitive(node)
    return (node[0], prim) if prim is not None else node[0]


def carried(node) -> tuple:
    """The parents whose edge to ``node`` is no step of a chain of dependence: both operands of
    an addition or a subtraction (the accumulator of a sum), the earlier version of an array
    written into. What tells a recurrence (each step needs the last) from a map or a reduction."""
    k = node[0]
    if k is pb_passes or (k is pb_binary and node[1].name in ("add", "subtract")):
        return node[2]
    if k is _pb_setitem:
        return (node[1],)
    return ()


def allocated(nodes: Iterable) -> tuple[int, int]:
    """(count, bytes) of the new arrays ``nodes`` made (:func:`output`; views and numbers allocate
    nothing counted): the forward pass's allocations, for a run of a tape at once."""
    count = size = 0
    for node in nodes:  # (inline output_of: a profiler runs this over every node it records)
        at = node[0].output_at
        if at is not None:
            v = node[at]
            if type(v) is ndarray and v.base is None:
                count += 1
                size += v.nbytes
    return count, size


def argnums(node) -> tuple | None:
    """The positions of a primitive's arguments the node sends cotangents to (traced, with a
    VJP, for a general node; traced, for the elementwise layouts); None for other nodes."""
    k = node[0]
    if k is pb_unary:
        return (0,)
    if k in BINARY_KINDS:
        return tuple(i for i, p in enumerate(node[2]) if p is not None)
    if k is pb_general:
        return tuple(argnum for argnum, _ in node[2])
    return None


def reads(node) -> tuple | None:
    """What a primitive's VJPs are called with after the cotangent: ``(ans, *operands)`` as the
    node kept them; None for other nodes (their layout is their rule's own)."""
    k = node[0]
    if k is pb_unary:
        return node[3], node[4]
    if k in BINARY_KINDS:
        return node[3], node[4], node[5]
    if k is pb_general:
        return (node[3], *node[4])
    return None


def data(node) -> tuple[int, int] | None:
    """(elements, bytes) of the arrays a primitive's node made and read (:func:`reads`): its data
    work, what a memory-bound operation's time scales with. None for other nodes."""
    values = reads(node)
    if values is None:
        return None
    arrays = [v for v in values if isinstance(v, (ndarray, np.generic))]
    return sum(v.size for v in arrays), sum(v.nbytes for v in arrays)


def forward(node) -> tuple | None:
    """``(fwd, operands, kwargs)``: a primitive's forward function and the values its node was
    recorded with, to run it again (``fwd(*operands, **kwargs)``); None for other nodes."""
    k = node[0]
    if k is pb_unary:
        return node[1].fwd, (node[4],), {}
    if k in BINARY_KINDS:
        return node[1].fwd, (node[4], node[5]), {}
    if k is pb_general:
        return node[1].fwd, node[4], node[5]
    return None


def vjp_work(node, g) -> Callable[[], None] | None:
    """A primitive node's NumPy work alone, to time: a function running its VJP expressions on
    ``g`` (and the sums that undo broadcasting) as its pullback would, without adding into any
    gradient. None for other nodes (rules, indexing, mutation: their pullback is their work)."""
    k = node[0]
    if k is pb_unary:
        _, prim, _, ans, x = node
        vjp = prim.vjps[0]
        return lambda: vjp(g, ans, x)
    if k in BINARY_KINDS:
        _, prim, pair, ans, x, y = node
        if k is pb_joint and None not in pair:  # both cotangents from one call, as pb_joint

            def joint():
                cx, cy = prim.joint(g, ans, x, y)
                unbroadcast(cx, x)
                unbroadcast(cy, y)
            return joint
        vjps = [(prim.vjps[argnum], y if argnum else x) for argnum in argnums(node)]

        def binary():
            for vjp, operand in vjps:
                if vjp is not None:
                    unbroadcast(vjp(g, ans, x, y), operand)
        return binary
    if k is pb_general:
        _, prim, pairs, ans, vals, kwargs = node
        vjps = [prim.vjps[argnum] for argnum, _ in pairs]

        def general():
            for vjp in vjps:
                if vjp is not None:
                    vjp(g, ans, *vals, **kwargs)
        return general
    return None


def with_values(node, f: Callable) -> tuple | None:
    """A copy of a primitive's node with ``f`` applied to each value its VJPs read (:func:`reads`;
    keywords as they are): the same operation on other values, e.g. arrays cut to one element
    per axis, whose VJP and forward costs are the operation's fixed cost. None for other nodes."""
    k = node[0]
    if k is pb_unary:
        return k, node[1], node[2], f(node[3]), f(node[4])
    if k in BINARY_KINDS:
        return k, node[1], node[2], f(node[3]), f(node[4]), f(node[5])
    if k is pb_general:
        return k, node[1], node[2], f(node[3]), tuple(f(v) for v in node[4]), node[5]
    return None


def elementwise(node) -> bool:
    """Whether ``node`` has an elementwise primitive's layout (``apply1``'s, ``apply2``'s: operands
    broadcast against each other) and is no generalised ufunc (matmul and its kin: their
    signature names core dimensions). np.dot on at most two dimensions shares that layout and
    counts here."""
    k = node[0]
    return k is pb_unary or (k in BINARY_KINDS and not node[1].generalised)


def generalised(node) -> bool:
    """Whether a primitive's node applied a generalised ufunc (``ufunc.signature``: np.matmul,
    np.vecdot, np.matvec, np.vecmat)."""
    prim = primitive(node)
    return prim is not None and prim.generalised


def lean(node) -> bool:
    """Whether a closed-form pullback of ``node`` needs no more data work than its forward per
    differentiated argument: what its primitive declares (``Primitive(lean=True)``: the
    memory-bound reductions, sum, mean, var, max, min, each one pass over the data either way),
    else whether it is :func:`elementwise`. A generic VJP often does more (divide's
    ``-g * ans / y``, a tie mask for maximum, var's mean again, broadcasts summed back)."""
    prim = primitive(node)
    if prim is None:
        return False
    return prim.lean if prim.lean is not None else elementwise(node)


def closed_form(node) -> Callable[[object, float | None, Callable], float] | None:
    """What a hand-written pullback of ``node`` still does, where the rule declared it
    (``node_kind(closed_form=...)``, ``Primitive(closed_form=...)``: np.linalg.solve, whose rule
    reuses the forward's factorization; np.linalg.cholesky, whose closed form is the inverse
    from the factor): ``share(g, work, fastest)``, the share of the node's pullback, in [0, 1],
    given its cotangent ``g``, its VJPs' measured time ``work`` (None: not measured) and
    ``fastest(fn) -> seconds``, the cost model's clock. None: nothing declared.

    The engine says *what* to run and how the times combine (that is knowledge of the rule:
    which part of its pullback a rule reuses, what its closed form computes); the profiler says
    *how* to time (its clock, repeats, what to do about a busy machine), so the engine never reads
    a clock and a test can give it a fake one."""
    k = node[0]
    prim = primitive(node)
    hint = prim.closed_form if prim is not None else k.closed_form
    return None if hint is None else functools.partial(hint, node)
