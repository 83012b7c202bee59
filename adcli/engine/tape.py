"""The tape: the record of one forward pass, and the reverse pass over it.

This module knows nothing of NumPy (its tests run it on plain floats). A tape is a list of
nodes, one per traced value, in the order the values were made. A *leaf* (an input of the
differentiated function) is the node ``None``. Any other node is a tuple whose first element
is its pullback, called as ``node[0](node, g, acc)``: it receives the cotangent ``g`` of the
node's value and adds its parents' shares into the accumulator ``acc`` (``acc.add(parent, c)``,
or by writing into ``acc.buffer(...)`` for rules that accumulate in place). Keeping the rest of
the tuple opaque lets every rule store exactly what its pullback needs, and nothing more; each
pullback declares (:func:`node_kind`) which slot holds the value its node made and where its
parents' indices are, so that a reader (the profiler) can ask a node what it made and what it
depends on without knowing its layout (engine.introspect asks it).

The reverse pass is :func:`backward`, the only one: a profiler that times or charges its
pullbacks passes a visitor to it rather than running a copy of the loop.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol


def node_kind(output: int | None, parents: Callable[[tuple], tuple], closed_form: Callable | None = None):
    """Decorator for a pullback, which names a kind of tape node (its first slot): ``output``
    is the index in the node tuple of the value the node made, for a profiler counting the
    arrays a forward pass allocates (None when the node made a view, or nothing new);
    ``parents(node)`` gives the indices of the values the node was computed from (those its
    pullback can send a cotangent to): see the helpers below. ``closed_form``: a cost hint
    declared with the rule, what a hand-written pullback of such a node still does
    (engine.introspect.closed_form says how it is called)."""

    def declare(pullback):
        pullback.output_at = output
        pullback.parents_of = parents
        pullback.closed_form = closed_form
        return pullback

    return declare


def parent_at(*slots: int) -> Callable[[tuple], tuple]:
    """A kind whose node holds a parent index at each of ``slots`` (None: not traced)."""
    if len(slots) == 1:
        (slot,) = slots
        return lambda node: (node[slot],)
    return lambda node: tuple(node[s] for s in slots if node[s] is not None)


def parents_at(slot: int) -> Callable[[tuple], tuple]:
    """A kind whose node holds at ``slot`` a tuple of parent entries: indices (None for an
    argument that is not traced), or tuples ending with the index ((argnum, index), ...)."""
    def of(node: tuple) -> tuple:
        return tuple(p[-1] if type(p) is tuple else p for p in node[slot] if p is not None)
    return of


def no_parents(node: tuple) -> tuple:
    """A kind whose node depends on nothing traced (a constant)."""
    return ()


def node_parents(node: tuple) -> tuple:
    """The indices of the values ``node`` was computed from (a leaf, None, has none)."""
    return () if node is None else node[0].parents_of(node)


class ClosedTapeError(RuntimeError):
    """Raised when something records onto a tape whose gradient computation has finished."""


class _ClosedNodes(list):
    # Swapped in for a finished tape's node list, so that a traced value which escaped its
    # gradient computation fails loudly on its next use without a check on the hot path.
    __slots__ = ("error",)

    def __init__(self, nodes: list, error: Callable[[], Exception] | None) -> None:
        super().__init__(nodes)
        self.error = error

    def append(self, node: Any) -> None:  # noqa: D102
        if self.error is not None:
            raise self.error()
        raise ClosedTapeError(
            "a traced value was used after its gradient computation finished "
            "(it escaped, e.g. into a global or a closure); compute with it inside the function "
            "being differentiated"
        )


class Tape:
    """An append-only list of nodes; ``nodes[i]`` made the traced value with index ``i``."""

    __slots__ = ("nodes", "escape", "copies")

    def __init__(self) -> None:
        self.nodes: list = []
        # The copies of plain arrays the pullbacks read, by the array's id (see core.kept).
        self.copies: dict | None = None
        # An error to raise when the differentiated function returns: an escape that could only
        # be noticed, not stopped, where it happened (see tracer_api, plain[i] = 0-d tracer).
        self.escape: Exception | None = None

    def leaf(self) -> int:
        """Record an input of the differentiated function and return its index."""
        self.nodes.append(None)
        return len(self.nodes) - 1

    def refuse_if_closed(self) -> None:
        """Raise what a closed tape raises on use (its traced value escaped its gradient), if it
        is closed: for the conversions, which append nothing."""
        if type(self.nodes) is _ClosedNodes:
            self.nodes.append(None)

    def close(self, error: Callable[[], Exception] | None = None) -> None:
        """End recording: further use of this tape's traced values raises ``error()`` (the
        engine passes one that names the user's file:line), or ClosedTapeError."""
        self.nodes = _ClosedNodes(self.nodes, error)


class Visitor(Protocol):
    """What :func:`backward` calls for each node whose pullback it runs, in its place: the
    node's index ``i`` on the tape, the node, its complete cotangent ``g``, its pullback (the
    node's kind) and the accumulator. It must call ``pullback(node, g, acc)`` once; what it does
    around the call is its own (profiler/stretches.py charges each stretch of the tape to the
    call that recorded it, profiler/decompose.py times each pullback and its VJPs)."""

    def __call__(self, i: int, node: tuple, g: Any, pullback: Callable, acc: Any) -> None: ...


class SumAccumulator:
    """The simplest accumulator: gradients add with ``+``. The engine's own accumulator
    adds NumPy arrays in place where it owns them (see engine.accumulate)."""

    __slots__ = ("grads",)

    def __init__(self, n: int) -> None:
        self.grads: list = [None] * n

    def add(self, p: int, c: Any) -> None:
        old = self.grads[p]
        self.grads[p] = c if old is None else old + c


def backward(nodes: list, acc: Any, start: int, visit: Visitor | None = None) -> None:
    """Propagate cotangents from node ``start`` back to the leaves.

    ``acc.grads[i]`` holds the cotangent of value ``i`` (``None`` = nothing flowed there).
    The caller seeds ``acc.grads[start]``; on return the leaves' slots hold the gradients.

    Each node is dropped from ``nodes`` (replaced by False, which is not a leaf's None) once its
    pullback has run, so the forward values it kept are freed as the pass goes rather than at
    its end: a gradient's peak memory is then the forward pass's, not the forward pass's plus
    the cotangents'.

    Nodes are visited in reverse recording order. That is a valid reverse topological order
    because a node can only refer to parents recorded before it, so by the time we reach node
    ``i`` every consumer of value ``i`` (all recorded later) has already added its share into
    ``grads[i]``: the cotangent is complete and can be pushed to the parents.

    ``visit``: a profiler's hand on the pass (a :class:`Visitor`). For each node whose pullback
    the pass runs, it is called as ``visit(i, node, g, pullback, acc)`` in place of
    ``pullback(node, g, acc)``, and must make that call itself, once: so it can time it, charge
    it to whoever recorded the node, or measure the node's work around it. Everything else
    (which nodes run, in which order, what is freed when) is this loop's, the same with a
    visitor as without.
    """
    grads = acc.grads
    if visit is None:
        for i in range(start, -1, -1):
            g = grads[i]
            if g is None:
                continue  # nothing depends on this value through a differentiable path
            node = nodes[i]
            if node is None:
                continue  # a leaf: its cotangent is the answer, leave it in place
            grads[i] = None  # consumed: drop the reference so big cotangents are freed early
            nodes[i] = False  # and the node: the values it kept for its pullback go with it
            node[0](node, g, acc)  # the node's pullback adds its parents' shares into acc
        return
    # The same loop with the visitor in the pullback's place. Two copies of eight lines, because
    # choosing once per pass keeps the plain gradient's loop free of a test per node.
    for i in range(start, -1, -1):
        g = grads[i]
        if g is None:
            continue
        node = nodes[i]
        if node is None:
            continue
        grads[i] = None
        nodes[i] = False
        visit(i, node, g, node[0], acc)
