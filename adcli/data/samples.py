"""A signature's sample inputs as profile data: arrays go to the ``.npz`` sidecar, numbers and
strings inline, containers item by item, random states by their bit generator's state
(random_states.py); anything else is described and left out."""

from __future__ import annotations

import numpy as np

from ..engine.descriptors import describe
from .random_states import decode_random_state, encode_random_state
from .schema import MAX_INT, MAX_NESTING

# NumPy scalars a sample stores inline: those whose .item() is a JSON number or bool
SCALAR_DTYPES = {np.dtype(c).name for c in "?bhilqBHILQefd"}


def encode(v, key: str, arrays: dict):
    """A sample value as JSON data: arrays into ``arrays`` (saved in the .npz) under ``key``,
    numbers and strings inline, containers item by item; anything else by its descriptor."""
    if isinstance(v, np.ndarray) and v.dtype.kind in "biufc":
        arrays[key] = v
        return {"array": key}
    if isinstance(v, np.generic) and v.dtype.name in SCALAR_DTYPES and v.dtype.kind in "biuf":
        return {"value": v.item(), "dtype": v.dtype.name}
    if isinstance(v, (bool, int, float, str)) or v is None:
        return {"value": v}
    if isinstance(v, (list, tuple)):
        return {type(v).__name__: [encode(x, f"{key}_{i}", arrays) for i, x in enumerate(v)]}
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        # keys by position, not by name: names could make two paths collide
        return {"dict": {k: encode(x, f"{key}_{j}", arrays) for j, (k, x) in enumerate(v.items())}}
    state = encode_random_state(v)
    if state is not None:
        return {"random": state}
    return {"unsupported": describe(v)}


def decode(entry, arrays: dict, missing=None):
    """The value an encoded sample stands for (arrays from the .npz, containers rebuilt), or
    ``missing`` for one that was not saved (too big, unsupported, or its array is absent)."""
    if not isinstance(entry, dict):
        return missing
    if "array" in entry:
        return arrays.get(entry["array"], missing)
    if "value" in entry:
        v = entry["value"]
        if "dtype" not in entry:
            return v
        try:
            with np.errstate(over="raise", invalid="raise"):
                x = np.dtype(entry["dtype"]).type(v)
        except (OverflowError, ValueError, TypeError, FloatingPointError):  # a value its dtype cannot hold
            return missing
        back = x.item()
        # only what encode wrote: the value its dtype holds exactly (1.5 as int64 is not 1)
        return x if v is not None and (back == v or (back != back and v != v)) else missing
    for kind, build in (("list", list), ("tuple", tuple)):
        if kind in entry:
            items = [decode(x, arrays, missing) for x in entry[kind]]
            return missing if any(x is missing for x in items) else build(items)
    if "dict" in entry:
        items = {k: decode(x, arrays, missing) for k, x in entry["dict"].items()}
        return missing if any(x is missing for x in items.values()) else items
    if "random" in entry:
        try:
            return decode_random_state(entry["random"])
        except ValueError:
            return missing
    return missing


def malformed(e) -> str | None:
    """None if ``e`` is a value ``encode`` could have written, else the path (``[2].x``) of
    the first part that is not: containers nested at most MAX_NESTING deep (``decode`` and
    the rule writer recurse once per level), integers at most MAX_INT in magnitude. Iterative:
    nested containers must not exhaust the stack."""
    stack = [(e, "", 0)]
    while stack:
        e, where, depth = stack.pop()
        if not isinstance(e, dict) or len(e) not in (1, 2) or depth > MAX_NESTING:
            return where
        if "array" in e:
            ok = isinstance(e["array"], str) and len(e) == 1
        elif "value" in e:
            v = e["value"]
            ok = v is None or isinstance(v, (bool, float, str)) or isinstance(v, int) and -MAX_INT <= v <= MAX_INT
            ok = ok and (isinstance(e["dtype"], str) and e["dtype"] in SCALAR_DTYPES if "dtype" in e else len(e) == 1)
        elif "list" in e or "tuple" in e:
            items = e.get("list", e.get("tuple"))
            ok = isinstance(items, list) and len(e) == 1
            stack.extend((x, f"{where}[{i}]", depth + 1) for i, x in enumerate(items if ok else []))
        elif "dict" in e:
            ok = isinstance(e["dict"], dict) and len(e) == 1
            stack.extend((x, f"{where}.{k}", depth + 1) for k, x in (e["dict"].items() if ok else []))
        elif "unsupported" in e:
            ok = isinstance(e["unsupported"], str) and len(e) == 1
        elif "random" in e:
            ok = len(e) == 1 and _random_state_reads(e["random"])
        else:
            ok = False
        if not ok:
            return where
    return None


def _random_state_reads(entry) -> bool:
    try:
        decode_random_state(entry)
    except ValueError:
        return False
    return True
