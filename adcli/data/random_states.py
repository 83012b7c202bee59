"""A random state argument (``np.random.Generator``, ``np.random.RandomState``) as profile data.

A sample records the state a generator had when the call began: its bit generator's name and
state, field by field, so that ``adcli check`` can draw the same numbers again. A profile is
untrusted, and NumPy's state setters do not check everything (an MT19937 ``pos`` beyond its key
reads past it), so a state is read only against the exact fields of its bit generator below:
names from a fixed table (no name is looked up), every number in its range, every list of its
length; anything else is refused with a one-line reason.
"""

from __future__ import annotations

import math
import re

import numpy as np

# a field's kind: ("uint", bits): an integer in [0, 2**bits), written as a hex string beyond 64
# bits (a profile's integers are at most 2**64); ("uints", bits, n): a list of n of them;
# ("upto", n): an integer in [0, n]; ("float",): a finite float
U32, U64, U128, FLAG = ("uint", 32), ("uint", 64), ("uint", 128), ("upto", 1)
_PCG = {"state": {"state": U128, "inc": U128}, "has_uint32": FLAG, "uinteger": U32}
SCHEMAS = {
    "PCG64": _PCG,
    "PCG64DXSM": _PCG,
    "MT19937": {"state": {"key": ("uints", 32, 624), "pos": ("upto", 624)}},
    "Philox": {"state": {"counter": ("uints", 64, 4), "key": ("uints", 64, 2)}, "buffer": ("uints", 64, 4),
               "buffer_pos": ("upto", 4), "has_uint32": FLAG, "uinteger": U32},
    "SFC64": {"state": {"state": ("uints", 64, 4)}, "has_uint32": FLAG, "uinteger": U32},
}
BIT_GENERATORS = {name: getattr(np.random, name) for name in SCHEMAS}
LEGACY = {"has_gauss": FLAG, "gauss": ("float",)}  # what a RandomState keeps besides its bit generator's state
KINDS = ("Generator", "RandomState")
_HEX = re.compile(r"0x[0-9a-f]{1,32}")


def encode_random_state(v) -> dict | None:
    """``{"kind", "bit_generator", "state"}`` for a Generator or RandomState of NumPy's own bit
    generators (not a subclass), else None."""
    if type(v) is np.random.Generator:
        kind, state = "Generator", dict(v.bit_generator.state)
        if BIT_GENERATORS.get(state.get("bit_generator")) is not type(v.bit_generator):
            return None
    elif type(v) is np.random.RandomState:
        kind, state = "RandomState", dict(v.get_state(legacy=False))
    else:
        return None
    name = state.pop("bit_generator", None)
    if name not in SCHEMAS:
        return None
    try:
        return {"kind": kind, "bit_generator": name, "state": _encode(_schema(kind, name), state)}
    except (KeyError, TypeError, ValueError):  # a state of another layout: not recorded
        return None


def _schema(kind: str, name: str) -> dict:
    return {**SCHEMAS[name], **LEGACY} if kind == "RandomState" else SCHEMAS[name]


def _encode(schema: dict, state: dict) -> dict:
    out = {}
    for key, kind in schema.items():
        v = state[key]
        if isinstance(kind, dict):
            out[key] = _encode(kind, v)
        elif kind[0] == "uints":
            out[key] = [int(x) for x in v]
        elif kind[0] == "float":
            out[key] = float(v)
        else:
            out[key] = hex(int(v)) if kind == U128 else int(v)
    return out


def decode_random_state(entry):
    """The Generator or RandomState an encoded entry stands for; ValueError (one line, naming the
    field) for anything ``encode_random_state`` could not have written."""
    if not isinstance(entry, dict) or set(entry) != {"kind", "bit_generator", "state"}:
        raise ValueError("a random state has exactly the fields kind, bit_generator and state")
    kind, name = entry["kind"], entry["bit_generator"]
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}")
    if not isinstance(name, str) or name not in SCHEMAS:
        raise ValueError(f"bit_generator must be one of {', '.join(SCHEMAS)}")
    state = {"bit_generator": name, **_decode(_schema(kind, name), entry["state"], "state")}
    try:
        bg = BIT_GENERATORS[name](0)
        if kind == "Generator":
            bg.state = state
            return np.random.Generator(bg)
        rs = np.random.RandomState(bg)
        rs.set_state(state)
        return rs
    except Exception as exc:  # noqa: BLE001 - NumPy's own refusal of a checked state, as one line
        raise ValueError(f"NumPy refuses the state: {type(exc).__name__}: {exc}") from None


def _decode(schema: dict, data, where: str) -> dict:
    if not isinstance(data, dict) or set(data) != set(schema):
        raise ValueError(f"{where} must have exactly the fields {', '.join(schema)}")
    out = {}
    for key, kind in schema.items():
        v, at = data[key], f"{where}.{key}"
        if isinstance(kind, dict):
            out[key] = _decode(kind, v, at)
        elif kind[0] == "uints":
            if not isinstance(v, list) or len(v) != kind[2] or not all(_is_uint(x, kind[1]) for x in v):
                raise ValueError(f"{at} must be a list of {kind[2]} integers from 0 to 2**{kind[1]} - 1")
            out[key] = np.array(v, dtype=np.uint32 if kind[1] == 32 else np.uint64)
        elif kind[0] == "float":
            if not isinstance(v, float) or not math.isfinite(v):
                raise ValueError(f"{at} must be a finite float")
            out[key] = v
        elif kind[0] == "upto":
            if not (_is_int(v) and 0 <= v <= kind[1]):
                raise ValueError(f"{at} must be an integer from 0 to {kind[1]}")
            out[key] = v
        elif kind == U128:
            if not (isinstance(v, str) and _HEX.fullmatch(v)):
                raise ValueError(f"{at} must be a hex string of at most 128 bits (0x...)")
            out[key] = int(v, 16)
        else:
            if not _is_uint(v, kind[1]):
                raise ValueError(f"{at} must be an integer from 0 to 2**{kind[1]} - 1")
            out[key] = v
    return out


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_uint(v, bits: int) -> bool:
    return _is_int(v) and 0 <= v < 2**bits
