"""The checks a profile's JSON fields pass (``model._Reader``): types, and bounds on every
number a reader computes with, so that no sum, product or ratio of them can overflow."""

from __future__ import annotations

import math

MAX_COUNT = 2**53  # counts and bytes: exact in a float
MAX_SECONDS = 1e9  # times: 31 years
KIND_NAMES = {int: f"a count (an integer from 0 to {MAX_COUNT})", float: f"a time (seconds from 0 to {MAX_SECONDS:g})",
              str: "a string", bool: "true or false", dict: "an object", list: "a list"}


def is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def is_count(x) -> bool:
    return is_int(x) and 0 <= x <= MAX_COUNT


def is_seconds(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and 0 <= x <= MAX_SECONDS


def is_pair(x) -> bool:
    """A [count, bytes] pair."""
    return isinstance(x, list) and len(x) == 2 and all(is_count(v) for v in x)


CHECKS = {int: is_count, float: is_seconds, str: lambda x: isinstance(x, str), bool: lambda x: isinstance(x, bool),
          dict: lambda x: isinstance(x, dict), list: lambda x: isinstance(x, list)}
