"""Nested dict / list / tuple containers ("pytrees") of arrays and floats: flatten and rebuild."""

from __future__ import annotations

from typing import Any, Callable


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


def paths(tree, prefix: str = "") -> list[str]:
    """Human-readable paths of the leaves (``['W1']``, ``[0][2]``), in flatten order."""
    t = type(tree)
    if t is dict:
        return [p for k, v in tree.items() for p in paths(v, f"{prefix}[{k!r}]")]
    if t is list or isinstance(tree, tuple):
        return [p for i, v in enumerate(tree) for p in paths(v, f"{prefix}[{i}]")]
    return [prefix]
