"""``adcli suggest``: load profiles, resolve the thresholds once, ask the advisor."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..advisor import KEEP_DERIVED, AdviceSummary, Suggestion, suggest
from ..advisor.config import Thresholds, thresholds
from ..data.schema import ProfileError
from ..data.store import load
from ..errors import AdcliError
from .compare import superseded

DEFAULT_PROFILE = "adcli-profile.json"


@dataclass
class Advice:
    """The advisor's ranked suggestions for some profiles (keep-derived ones included)."""

    suggestions: list[Suggestion]
    summary: AdviceSummary
    thresholds: Thresholds
    show_all: bool = False
    tier: str | None = None  # only this tier's suggestions ("library" or "user"), None: both
    notes: list = field(default_factory=list)  # how the profiles were taken (a before and its after), in words

    @property
    def _in_tier(self) -> list[Suggestion]:
        return [s for s in self.suggestions if self.tier is None or s.tier == self.tier]

    @property
    def shown(self) -> list[Suggestion]:
        """What to print: every suggestion with ``show_all``, else only the actionable ones."""
        return self._in_tier if self.show_all else self.actionable

    @property
    def actionable(self) -> list[Suggestion]:
        return [s for s in self._in_tier if s.action != KEEP_DERIVED]


def advise(paths=(), options: dict | None = None, sort: str = "saving", show_all: bool = False,
           start: str = ".", tier: str | None = None) -> Advice:
    """Suggestions for the profiles at ``paths`` (default: adcli-profile.json). ``options``:
    threshold values given on the command line (None: from [tool.adcli] in the nearest
    pyproject.toml above ``start``, else the defaults)."""
    th = thresholds(options or {}, start)  # bad options fail before any file is read
    paths = tuple(paths or (DEFAULT_PROFILE,))
    return advise_profiles([load(p) for p in paths], th, paths, sort=sort, show_all=show_all, tier=tier)


def advise_profiles(loaded: list, th: Thresholds, names=None, sort: str = "saving", show_all: bool = False,
                    tier: str | None = None) -> Advice:
    """Suggestions for profiles already in memory (``names``: how to call them in messages)."""
    paths = tuple(names or [f"profile {i + 1}" for i in range(len(loaded))])
    loaded, paths, notes = _afters(loaded, paths)
    if not any(p.signatures for p in loaded):
        raise ProfileError("the profile is empty: it recorded no signature (did the program take a gradient?)")
    if not sum(p.totals.gradient_s for p in loaded) > 0:
        raise ProfileError("the profile records no gradient time (did every gradient fail?): nothing to weigh a rule against")
    unreplayed = [p for p, prof in zip(paths, loaded) if not prof.replayed]
    if unreplayed:
        raise IncompleteProfileError(
            f"cannot advise from {', '.join(unreplayed)}: no call was replayed (profiled with --no-replay, or the run "
            "ended before the replays), so there are no primal times or measured costs to weigh rules against; "
            "run `adcli profile` again without --no-replay")
    suggestions, summary = suggest(loaded, th, sort=sort)
    summary.problems = [f"{path}: {problem}" if len(loaded) > 1 else problem
                           for path, prof in zip(paths, loaded) for problem in prof.problems()]
    return Advice(suggestions, summary, th, show_all, tier, notes)


def _afters(loaded: list, paths: tuple) -> tuple[list, tuple, list]:
    """The profiles to advise from: a profile whose program was profiled again with rules files
    is that program's before; its after (what remains with the rules) stands for it."""
    gone = superseded(loaded)
    notes = [f"{paths[j]} is {paths[i]}'s program profiled with --rules "
             f"{', '.join(r for r in loaded[j].rules if r not in loaded[i].rules)}: advice from {paths[j]} (what "
             f"remains with those rules), {paths[i]} taken as its before, not as a second workload "
             f"(`adcli compare {paths[i]} {paths[j]}` compares them)" for i, j in sorted(gone.items())]
    keep = [k for k in range(len(loaded)) if k not in gone]
    return [loaded[k] for k in keep], tuple(paths[k] for k in keep), notes


class IncompleteProfileError(AdcliError):
    """A profile too incomplete to advise from (no replays): a finding, exit status 1."""
