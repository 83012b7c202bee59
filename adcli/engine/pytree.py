"""Nested dict / list / tuple containers ("pytrees") of arrays and floats: flatten and rebuild.

The containers opened are dict, OrderedDict, defaultdict, list, tuple and namedtuples (as
autograd and JAX do, plus the two dict kinds programs build parameters with). Any other
container (a dict or list subclass, a dataclass) is a leaf here; the engine refuses such a leaf
where it would hide arrays to differentiate (:func:`container`, :func:`hidden_in`)."""

from __future__ import annotations

import dataclasses
from collections import OrderedDict, defaultdict
from collections.abc import Mapping
from typing import Any, Callable

import numpy as np

from .core import Tracer


def flatten(tree) -> tuple[list, Callable[[list], Any]]:
    """Return the leaves of ``tree`` in order and a function that rebuilds the same structure
    from a list of new leaves. Dicts keep their insertion order; namedtuples keep their type."""
    leaves: list = []
    build = _flatten(tree, leaves)

    def unflatten(new_leaves: list):
        it = iter(new_leaves)
        return build(it)

    return leaves, unflatten


def _flatten(node, leaves: list):
    t = type(node)
    if t is dict:
        keys = list(node)
        builders = [_flatten(node[k], leaves) for k in keys]
        return lambda it: {k: b(it) for k, b in zip(keys, builders)}
    if t is OrderedDict or t is defaultdict:
        keys = list(node)
        builders = [_flatten(node[k], leaves) for k in keys]
        if t is OrderedDict:
            return lambda it: OrderedDict((k, b(it)) for k, b in zip(keys, builders))
        factory = node.default_factory
        return lambda it: defaultdict(factory, ((k, b(it)) for k, b in zip(keys, builders)))
    if t is list:
        builders = [_flatten(v, leaves) for v in node]
        return lambda it: [b(it) for b in builders]
    if isinstance(node, tuple):
        builders = [_flatten(v, leaves) for v in node]
        if t is tuple:
            return lambda it: tuple(b(it) for b in builders)
        return lambda it: t(*[b(it) for b in builders])  # namedtuple
    leaves.append(node)
    return lambda it: next(it)


def container(v) -> str | None:
    """The kind of ``v`` when it is a container :func:`flatten` does not open (a dict or list
    subclass, a dataclass, a set), else None: a leaf that may hold arrays the caller cannot see."""
    t = type(v)
    if t is dict or t is list or t is tuple or t is OrderedDict or t is defaultdict:
        return None
    if isinstance(v, tuple) and hasattr(t, "_fields"):  # a namedtuple (flatten opens it)
        return None
    if isinstance(v, (Mapping, list, tuple, set, frozenset)):
        return t.__name__
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return f"dataclass {t.__name__}"
    return None


def holds(v, leaf: Callable[[Any], bool], depth: int = 0) -> bool:
    """Whether ``leaf`` is true of ``v`` or of anything in its containers (mappings, lists,
    tuples and sets of any class, dataclasses), looked into 100 levels deep."""
    if leaf(v):
        return True
    if depth > 100:
        return False
    if isinstance(v, Mapping):
        return any(holds(x, leaf, depth + 1) for x in v.values())
    if isinstance(v, (list, tuple, set, frozenset)):
        return any(holds(x, leaf, depth + 1) for x in v)
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return any(holds(getattr(v, f.name, None), leaf, depth + 1) for f in dataclasses.fields(v))
    return False


def _traced(v) -> bool:
    return isinstance(v, Tracer)


def _number(v) -> bool:
    return isinstance(v, (float, np.floating, np.ndarray))


def hidden_in(v) -> bool:
    """Whether ``v`` holds a traced value anywhere in its containers (dict and list subclasses,
    dataclasses and sets included)."""
    return holds(v, _traced)


def holds_numbers(v) -> bool:
    """Whether a container :func:`flatten` does not open holds floats or arrays (which would go
    without a gradient), as opposed to settings (strings, ints, callables)."""
    return holds(v, _number)


def paths(tree, prefix: str = "") -> list[str]:
    """Human-readable paths of the leaves (``['W1']``, ``[0][2]``), in flatten order."""
    t = type(tree)
    if t is dict or t is OrderedDict or t is defaultdict:
        return [p for k, v in tree.items() for p in paths(v, f"{prefix}[{k!r}]")]
    if t is list or isinstance(tree, tuple):
        return [p for i, v in enumerate(tree) for p in paths(v, f"{prefix}[{i}]")]
    return [prefix]
