"""``profile_program``: the library function behind ``adcli profile``."""

from __future__ import annotations

import datetime
import os
import platform
import sys
import time

import numpy as np

from .. import __version__
from ..errors import AdcliError
from ..fileio import check_writable
from . import replay
from .build import build
from .model import Profile, Replay
from .runner import RunResult, ScriptError, find_module, load_rules, run_module, run_script
from .session import Session
from .store import save


class NoGradientError(AdcliError):
    """The program ran but took no gradient: nothing to profile."""


def profile_program(target: str, argv: list, *, module: bool = False, output: str = "adcli-profile.json",
                    rules: tuple = (), include: tuple = (), exclude: tuple = (), replays: bool = True,
                    replay_budget: float = 0.2, force: bool = False, progress=None) -> tuple[Profile, RunResult]:
    """Run ``target`` (a script path, or a module with ``module=True``) under the profiler,
    replay its costly signatures, and save the profile to ``output`` (+ ``.npz``).

    Returns the profile and how the program ended. The profile is written even when the
    program raised, called sys.exit, or was interrupted (then it says ``partial``); a program
    that took no gradient raises NoGradientError and writes nothing.
    """
    if module:
        find_module(target)
    elif not os.path.isfile(target):
        raise ScriptError(f"no such script: {target}")
    check_writable(output, force, what=", or -o to write elsewhere")
    load_rules(rules)
    root = os.getcwd() if module else os.path.dirname(os.path.abspath(target))
    session = Session(include=include, exclude=exclude, root_dir=root)
    started = datetime.datetime.now(datetime.timezone.utc)
    run = run_module(session, target, argv) if module else run_script(session, target, argv)
    if session.gradients == 0:
        raise NoGradientError(
            f"{target} took no gradient through adcli (adcli.grad / adcli.value_and_grad): nothing to profile"
        )
    meta = {
        "command": [("-m " if module else "") + target, *argv],
        "created": started.isoformat(timespec="seconds"),
        "adcli_version": __version__, "python": platform.python_version(), "numpy": np.__version__,
        "platform": platform.platform(), "exit_status": run.exit_status,
        "partial": run.interrupted, "replay_s": 0.0,
    }
    profile, samples = build(session, meta)
    if replays and not run.interrupted:
        t0 = time.perf_counter()
        try:
            _replays(profile, session, replay_budget, progress)
        except KeyboardInterrupt:
            profile.partial = True
        profile.replay_s = time.perf_counter() - t0
    save(profile, output, samples)
    return profile, run


def _replays(profile: Profile, session: Session, budget: float, progress) -> None:
    chosen = replay.choose(profile)
    for n, stats in enumerate(chosen):
        if progress is not None:
            progress(n, len(chosen), str(stats.signature))
        try:
            stats.replay = replay.replay(session.by_id[stats.id], budget)
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # noqa: BLE001 - a replay that fails is reported, not fatal
            stats.replay = Replay(error=f"{type(exc).__name__}: {exc}")
    if progress is not None:
        progress(len(chosen), len(chosen), "")


def report_error(run: RunResult) -> None:
    if run.error:
        sys.stderr.write(run.error)
