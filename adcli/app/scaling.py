"""Which arguments ``adcli check --sizes`` scales, and along which axis.

A sample is scaled by repeating some of its arrays along one axis: the data grow, the parameters
stay (a model's ``theta`` of shape (2,) repeated to (8,) no longer fits it). Which is which is
read from the shapes: the size dimension is the length most array arguments share (ties: the
leading axis of the largest argument, then the longer), and each array argument that has an axis
of that length is repeated along its first such axis; the others are left as they are. The user
can say it instead, argument by argument: ``--scale x:0,theta:none``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..errors import AdcliError


class ScaleError(AdcliError):
    """A ``--scale`` that does not parse, or names an argument or axis the checked rules do not have."""


@dataclass(frozen=True)
class Scaled:
    """One argument of a scaled sample: its name, recorded shape, the axis repeated (None: left
    as it is) and who said so ("inferred" or "--scale")."""

    argument: str
    shape: tuple
    axis: int | None
    by: str

    def to_json(self) -> dict:
        return {"argument": self.argument, "shape": list(self.shape), "axis": self.axis, "by": self.by}


_ITEM = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*|\d+)\s*:\s*(none|\d+)\s*")


def parse_scale(text: str) -> dict:
    """``"x:0,theta:none"`` -> ``{"x": 0, "theta": None}`` (an argument by name or position);
    ScaleError naming the part that does not parse."""
    out: dict = {}
    for part in text.split(","):
        m = _ITEM.fullmatch(part)
        if m is None:
            raise ScaleError(f"--scale {part.strip()!r}: give NAME:AXIS or NAME:none, e.g. x:0,theta:none")
        if m[1] in out:
            raise ScaleError(f"--scale names {m[1]} twice")
        out[m[1]] = None if m[2] == "none" else int(m[2])
    return out


def plan(names: list, values: list, scale: dict | None = None) -> list:
    """One Scaled per array argument of at least one dimension (``names`` and ``values`` in
    order: positional arguments, then keyword arguments). ``scale``: the user's axes by name or
    position, which win over the inference; ScaleError for an axis the argument does not have."""
    scale = scale or {}
    arrays = [(i, np.shape(v)) for i, v in enumerate(values) if isinstance(v, np.ndarray) and v.ndim >= 1]
    length = size_dimension([shape for _, shape in arrays])
    out = []
    for i, shape in arrays:
        given = [key for key in (names[i], str(i)) if key in scale]
        if given:
            axis = scale[given[0]]
            if axis is not None and axis >= len(shape):
                raise ScaleError(f"--scale {given[0]}:{axis}: {names[i]} has shape {shape}, no axis {axis}")
            out.append(Scaled(names[i], shape, axis, "--scale"))
        else:
            out.append(Scaled(names[i], shape, shape.index(length) if length in shape else None, "inferred"))
    return out


def size_dimension(shapes: list) -> int | None:
    """The length most of ``shapes`` share (a length above 1 first; then the leading axis of the
    largest; then the longer), or None when there is no shape."""
    if not shapes:
        return None
    largest = max(shapes, key=lambda s: int(np.prod(s)))
    lengths = {n for s in shapes for n in s}
    return max(lengths, key=lambda n: (n > 1, sum(n in s for s in shapes), n == largest[0], n))


def unknown(scale: dict, names_seen: set) -> list:
    """The names (or positions) ``scale`` gives that no checked rule's arguments have."""
    return [key for key in scale if key not in names_seen]


def apply(values: list, scaled: list, names: list, size: int) -> list:
    """``values`` with each argument of ``scaled`` that has an axis repeated ``size`` times along it."""
    axes = {s.argument: s.axis for s in scaled}
    return [np.concatenate([v] * size, axis=axes[n]) if axes.get(n) is not None else v for n, v in zip(names, values)]


def describe_scaling(scaled: list) -> str:
    """``scaled x0 (6,), v0 (6,) along axis 0 (inferred); not scaled: theta (2,)``."""
    groups: dict = {}
    for s in scaled:
        if s.axis is not None:
            groups.setdefault((s.axis, s.by), []).append(f"{s.argument} {s.shape}")
    parts = [f"{', '.join(names)} along axis {axis} ({by})" for (axis, by), names in groups.items()]
    kept = [f"{s.argument} {s.shape}" for s in scaled if s.axis is None]
    text = f"scaled {'; '.join(parts)}" if parts else "no argument scaled"
    return text + (f"; not scaled: {', '.join(kept)}" if kept else "")
