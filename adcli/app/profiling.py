"""``adcli profile`` and ``adcli show``: run a program under the profiler; read a saved profile."""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..data.model import Profile
from ..data.store import load, sidecar
from ..fileio import OutputError, check_writable, refuse_inputs, same_file, write_text
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


def profile_files(paths) -> list:
    """The files a command reading the profiles at ``paths`` takes as input: each profile and
    its sample file (an output path must be none of them, --force or not)."""
    return [f for p in paths for f in (p, sidecar(p))]


def check_output(out: str, inputs: list, force: bool) -> None:
    """Refuse before any work or output: never over an input, never over a file without ``force``."""
    refuse_inputs(out, inputs)
    check_writable(out, force)


def check_speedscope_target(out: str, profile: str, force: bool) -> None:
    """Refuse before anything is printed: never over the profile or its samples, never over a
    file without ``force``."""
    if same_file(out, profile):
        raise OutputError(f"refusing to write the speedscope file over the profile itself ({out})")
    check_output(out, profile_files([profile]), force)


def write_speedscope(out: str, document: dict, force: bool = False) -> None:
    write_text(out, json.dumps(document), force=force)
