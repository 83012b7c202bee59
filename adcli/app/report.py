"""``adcli report``: the profiles and their advice, for one self-contained HTML page."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..data.model import Profile
from ..data.store import load
from .advice import DEFAULT_PROFILE, Advice, IncompleteProfileError, advise
from .compare import Comparison, compare_profiles, superseded


@dataclass
class Report:
    """What a report shows: the profiles, and the advice (None, with ``no_advice`` saying why)."""

    paths: tuple
    profiles: list[Profile]
    advice: Advice | None
    no_advice: str = ""
    # each program profiled again with rules files: (before path, after path, the rules files
    # added, the comparison of the two profiles: one run each, not timed)
    comparisons: list[tuple[str, str, list, Comparison]] = field(default_factory=list)


def report(paths=(), options: dict | None = None) -> Report:
    """The profiles at ``paths`` (default: adcli-profile.json), their advice with ``options``
    (as ``advise``), and each program profiled again with rules files compared with its before."""
    paths = tuple(paths or (DEFAULT_PROFILE,))
    profiles = [load(p) for p in paths]
    try:
        advice, why = advise(paths, options), ""
    except IncompleteProfileError as exc:  # the page still shows what was measured, and says why not more
        advice, why = None, str(exc)
    pairs = [(paths[i], paths[j], [r for r in profiles[j].rules if r not in profiles[i].rules],
              compare_profiles(profiles[i], profiles[j]))
             for i, j in sorted(superseded(profiles).items())]
    return Report(paths, profiles, advice, why, pairs)
