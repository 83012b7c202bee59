"""The profile document's vocabulary (docs/profile-format.md): its schema name and version, the
words its fields may hold, and the checks every field passes (``model._Reader``): types, and
bounds on every number a reader computes with, so that no sum, product or ratio of them can
overflow."""

from __future__ import annotations

import math

from ..errors import AdcliError

MAX_COUNT = 2**53  # counts and bytes: exact in a float
MAX_SECONDS = 1e9  # times: 31 years
MAX_INT = 2**64  # any integer in a profile, in magnitude (a uint64 sample scalar is the largest honest one)
MAX_NESTING = 100  # levels of containers in a signature's types or a sample's encoding
MAX_PROFILE_BYTES = 32 * 2**20  # the JSON document
MAX_JSON_VALUES = 4_000_000  # values and containers in it (each costs 50-70 bytes once parsed)


class Signed(float):
    """The kind of a field holding a difference of times (a rule that saves a negative time):
    seconds from -MAX_SECONDS to MAX_SECONDS."""


KIND_NAMES = {int: f"a count (an integer from 0 to {MAX_COUNT})", float: f"a time (seconds from 0 to {MAX_SECONDS:g})",
              Signed: f"a difference of times (seconds from -{MAX_SECONDS:g} to {MAX_SECONDS:g})", str: "a string",
              bool: "true or false", dict: "an object", list: "a list"}


def is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def is_count(x) -> bool:
    return is_int(x) and 0 <= x <= MAX_COUNT


def is_seconds(x) -> bool:
    if is_int(x):  # compared as an integer: a 400-digit one does not fit a float
        return 0 <= x <= MAX_SECONDS
    return isinstance(x, float) and math.isfinite(x) and 0 <= x <= MAX_SECONDS


def is_signed_seconds(x) -> bool:
    if is_int(x):
        return -MAX_SECONDS <= x <= MAX_SECONDS
    return isinstance(x, float) and math.isfinite(x) and -MAX_SECONDS <= x <= MAX_SECONDS


def nesting(text: str) -> int:
    """The deepest level of brackets in ``text`` (counted, not parsed: no recursion)."""
    depth = deepest = 0
    for ch in text:
        if ch in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]}":
            depth -= 1
    return deepest


def is_pair(x) -> bool:
    """A [count, bytes] pair."""
    return isinstance(x, list) and len(x) == 2 and all(is_count(v) for v in x)


CHECKS = {int: is_count, float: is_seconds, Signed: is_signed_seconds, str: lambda x: isinstance(x, str),
          bool: lambda x: isinstance(x, bool), dict: lambda x: isinstance(x, dict), list: lambda x: isinstance(x, list)}


SCHEMA = "adcli-profile"
VERSION = 2
KINDS = ("numpy", "user")
SOURCES = ("native", "derived", "imported", "hand-written")
OUTPUTS = ("value", "tuple", "list", "dict", "None", "object")  # session.output_kind; rules return the first two
REPLAYS = ("done", "skipped", "interrupted")


class ProfileError(AdcliError):
    """A profile file is missing, corrupt, truncated, foreign, or from a newer adcli."""
