"""Containers as differentiated arguments (pytrees beyond plain dict / list / tuple), and the
helpers the generator, the oracle and finding scripts use to treat a container argument leaf by
leaf: ``leaves``, ``rebuild``, ``tmap``, ``literal`` and the access paths statements unpack.

The container types here are importable (``from tests.fuzz.trees import *``), so a finding's
script can rebuild its arguments.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict, namedtuple

import numpy as np

__all__ = ["OrderedDict", "Pair", "Point", "Params", "Layers", "Scaled"]


@dataclasses.dataclass
class Pair:
    w: object
    b: object


Point = namedtuple("Point", ["a", "b"])


class Params(dict):
    """A dict subclass (a model's parameters)."""


class Layers(list):
    """A list subclass (a model's layers)."""


@dataclasses.dataclass
class Scaled:
    """A dataclass holding a container."""

    values: object
    scale: object


TYPES = (OrderedDict, Pair, Point, Params, Layers, Scaled, dict, list, tuple)


def is_tree(a) -> bool:
    return isinstance(a, (dict, list, tuple)) or dataclasses.is_dataclass(a) and not isinstance(a, type)


def children(a) -> list:
    """``(access suffix, child)`` pairs, in order."""
    if isinstance(a, dict):
        return [(f"[{k!r}]", v) for k, v in a.items()]
    if isinstance(a, tuple) and hasattr(a, "_fields"):
        return [(f".{f}", getattr(a, f)) for f in a._fields]
    if isinstance(a, (list, tuple)):
        return [(f"[{i}]", v) for i, v in enumerate(a)]
    return [(f".{f.name}", getattr(a, f.name)) for f in dataclasses.fields(a)]


def leaves(a) -> list:
    """The non-container values of ``a`` in order (``[a]`` for a non-container)."""
    if not is_tree(a):
        return [a]
    return [leaf for _, c in children(a) for leaf in leaves(c)]


def paths(a, prefix: str = "") -> list:
    """``(access expression suffix, leaf)`` for every leaf: ``("['w'][0].b", leaf)``."""
    if not is_tree(a):
        return [(prefix, a)]
    return [p for suffix, c in children(a) for p in paths(c, prefix + suffix)]


def rebuild(a, new: list):
    """``a``'s structure (the same types) with its leaves replaced, in order, by ``new``."""
    it = iter(new)
    out = _rebuild(a, it)
    return out


def _rebuild(a, it):
    if not is_tree(a):
        return next(it)
    kids = [_rebuild(c, it) for _, c in children(a)]
    if isinstance(a, dict):
        return type(a)(zip(a.keys(), kids))
    if isinstance(a, tuple) and hasattr(a, "_fields"):
        return type(a)(*kids)
    if isinstance(a, (list, tuple)):
        return type(a)(kids)
    return dataclasses.replace(a, **{f.name: k for f, k in zip(dataclasses.fields(a), kids)})


def tmap(fn, a):
    return rebuild(a, [fn(leaf) for leaf in leaves(a)])


def structure(a) -> tuple:
    """The containers' types and keys, to compare a gradient's structure with its argument's."""
    if not is_tree(a):
        return ()
    return (type(a), tuple(s for s, _ in children(a)), tuple(structure(c) for _, c in children(a)))


def literal(a, leaf_literal) -> str:
    """Source text that rebuilds ``a`` (leaves by ``leaf_literal``)."""
    if not is_tree(a):
        return leaf_literal(a)
    kids = [literal(c, leaf_literal) for _, c in children(a)]
    t = type(a)
    if isinstance(a, dict):
        body = "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(a.keys(), kids)) + "}"
        return body if t is dict else f"{t.__name__}({body})"
    if isinstance(a, tuple) and hasattr(a, "_fields"):
        return f"{t.__name__}({', '.join(kids)})"
    if t is list:
        return "[" + ", ".join(kids) + "]"
    if t is tuple:
        return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
    if isinstance(a, list):
        return f"{t.__name__}([{', '.join(kids)}])"
    return f"{t.__name__}({', '.join(f'{f.name}={k}' for f, k in zip(dataclasses.fields(a), kids))})"


def wrap(r, values: list):
    """A random container (nested, of the types above) holding ``values`` as its leaves."""
    vals = list(values)
    kind = r.choice(["OrderedDict", "Params", "Layers", "Pair-in-dict", "Pair-in-list", "Point", "Scaled",
                     "dict-of-list", "nested"])
    if len(vals) == 1:
        vals.append(0.5 + 0.25 * r.random())  # a second (Python float) leaf
    a, b, rest = vals[0], vals[1], vals[2:]
    if kind == "OrderedDict":
        out = OrderedDict([("w", a), ("b", b)])
    elif kind == "Params":
        out = Params(w=a, b=b)
    elif kind == "Layers":
        out = Layers([a, b])
    elif kind == "Pair-in-dict":
        out = {"layer": Pair(a, b)}
    elif kind == "Pair-in-list":
        out = [Pair(a, b)]
    elif kind == "Point":
        out = Point(a, b)
    elif kind == "Scaled":
        out = Scaled([a], b)
    elif kind == "dict-of-list":
        out = {"ws": [a], "b": b}
    else:
        out = {"outer": OrderedDict([("inner", Layers([a])), ("p", Point(b, 0.75))])}
    for k, v in enumerate(rest):  # more leaves: a Params holding the first container
        out = Params(main=out, **{f"extra{k}": v}) if k == 0 else Params(out, **{f"extra{k}": v})
    return out


def float_leaf(v) -> bool:
    return type(v) is float or isinstance(v, np.ndarray) and v.dtype.kind == "f"
