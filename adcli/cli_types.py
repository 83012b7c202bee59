"""The command line's own option types: a size in bytes, a number of seconds or "auto"."""

from __future__ import annotations

import click

from .app import AUTO
from .units import parse_bytes


class Size(click.ParamType):
    """A number of bytes written as "100MB", "1.5GB", "2GiB" or "0"."""

    name = "SIZE"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        try:
            return parse_bytes(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class Seconds(click.ParamType):
    """A positive number of seconds, or "auto"."""

    name = "SECONDS"

    def convert(self, value, param, ctx):
        if value == AUTO or isinstance(value, float):
            return value
        try:
            seconds = float(value)
        except ValueError:
            self.fail(f"{value!r} is not a number of seconds or {AUTO!r}", param, ctx)
        if not seconds > 0 or seconds == float("inf"):
            self.fail(f"{value!r} is not a positive number of seconds", param, ctx)
        return seconds
