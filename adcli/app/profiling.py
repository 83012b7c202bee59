"""``adcli profile`` and ``adcli show``: run a program under the profiler; read a saved profile."""

from __future__ import annotations

from dataclasses import dataclass

from ..data.model import Profile
from ..data.store import load
from ..profiler.api import DEFAULT_REPLAYS_TOTAL, DEFAULT_SAMPLE_BUDGET, profile_program
from ..profiler.runner import RunResult

SORTS = ("time", "allocations")


@dataclass
class ProfileView:
    """A profile to print: its ``top`` signatures by ``sort``."""

    profile: Profile
    top: int = 10
    sort: str = "time"


@dataclass
class FlameGraph:
    """A profile's call tree, forward and reverse, as flame graphs (``adcli show --speedscope``
    writes it for https://www.speedscope.app)."""

    profile: Profile


@dataclass
class ProfileRun:
    """A finished ``adcli profile``: what was measured, how the program ended, where it went."""

    view: ProfileView
    run: RunResult
    output: str


def profile(target: str, argv: list, *, module: bool = False, output: str = "adcli-profile.json", rules=(),
            include=(), exclude=(), replays: bool = True, force: bool = False, top: int = 10, sort: str = "time",
            sample_budget: int = DEFAULT_SAMPLE_BUDGET, progress=None,
            replays_total: float | str | None = DEFAULT_REPLAYS_TOTAL, every_gradient: bool = False) -> ProfileRun:
    """Run ``target`` under the profiler and save its profile (see profiler.api.profile_program)."""
    data, run = profile_program(target, argv, module=module, output=output, rules=rules, include=include,
                                exclude=exclude, replays=replays, force=force, sample_budget=sample_budget,
                                progress=progress, replays_total=replays_total, every_gradient=every_gradient)
    return ProfileRun(ProfileView(data, top, sort), run, output)


def show(path: str, top: int = 10, sort: str = "time") -> ProfileView:
    """A saved profile, to print."""
    return ProfileView(load(path), top, sort)
