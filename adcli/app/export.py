"""``adcli export``: the suggested rules as one Python module (app/stubs.py writes the text)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..advisor import HAND_WRITE, IMPORT
from ..fileio import OutputError, check_writable, write_text
from ..profiler.samples import decode
from ..profiler.store import Samples, load
from ..version import __version__
from .advice import advise
from .stubs import rules_module

KINDS = (IMPORT, HAND_WRITE)


@dataclass
class Export:
    """What ``export`` wrote (``path`` None: nothing was suggested, nothing written)."""

    path: str | None
    imports: int
    handwritten: int


def export(profile: str, output: str, *, top: int | None = None, only: str | None = None, force: bool = False,
           options: dict | None = None, tier: str | None = None, script: str | None = None) -> Export:
    """Write the rules ``adcli suggest`` (with the same ``options``) advises for ``profile``.
    ``script``: the profiled script, as the user names it: the tests of rules on its functions
    load it (nothing the profile says is written as a path to run)."""
    check_writable(output, force)
    if script is not None and not os.path.isfile(script):
        raise OutputError(f"no script at {script} (--script names the profiled script)")
    advice = advise([profile], options, tier=tier)
    chosen = [s for s in advice.actionable if only is None or s.action == only]
    chosen = chosen[:top] if top is not None else chosen
    if not chosen:
        return Export(None, 0, 0)
    data = load(profile)
    wanted = {s.signature for s in chosen}
    with Samples(profile, data) as arrays:  # only the chosen signatures' arrays are read
        samples = {s.signature: [decode(a, arrays) for a in s.sample.args] or None
                   for s in data.signatures if s.sample is not None and s.signature in wanted}
    rel = os.path.relpath(os.path.abspath(script), os.path.dirname(os.path.abspath(output))) if script else None
    write_text(output, rules_module(chosen, samples, source=profile, version=__version__, script=rel))
    return Export(output, sum(s.action == IMPORT for s in chosen), sum(s.action == HAND_WRITE for s in chosen))

