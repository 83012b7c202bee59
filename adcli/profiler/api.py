"""``profile_program``, the library function behind ``adcli profile``, and the ``Recording`` it
shares with ``adcli.profile()`` (app/notebook.py): one session, profile, replays and save for both."""

from __future__ import annotations

import contextlib
import datetime
import io
import os
import platform
import sys
import tempfile
import time

import numpy as np
from threadpoolctl import threadpool_limits

from ..data.model import Profile
from ..data.records import Replay
from ..data.store import save, sidecar
from ..engine import hooks
from ..errors import AdcliError
from ..fileio import OutputError, check_writable, refuse_inputs
from ..measure import ON_CALL
from ..version import __version__
from . import replay
from .build import build
from .runner import RunResult, ScriptError, find_module, load_rules, run_module, run_script
from .session import Session

# The replays of one run take at most as long as the program itself took (REPLAY_SHARE of its run
# time, --replay-budget auto), but at least REPLAY_FLOOR_S and at most REPLAY_CAP_S; a number of
# seconds given instead is used as it is. The floor is what the advice needs on a short program:
# the bundled one-gradient profiles replay their ~10 signatures and try their rules in the
# program in 4-8 s; with 3 s the what-ifs in the program were cut, and a nested function's saving
# was then estimated from replays timed at other moments (rk4_ode: 118% of the gradient time).
AUTO = "auto"
DEFAULT_REPLAYS_TOTAL = AUTO
REPLAY_SHARE = 1.0
REPLAY_FLOOR_S = 10.0
REPLAY_CAP_S = 120.0
# The replays proper may take this share of the budget; the what-ifs in the program, which the
# advice's predictions rest on, have the rest (and whatever the replays left).
REPLAYS_SHARE_OF_BUDGET = 0.7
# Each measurement of a replay (primal, derived, an import, a what-if in the program) is timed for
# about this long, less when the chosen signatures would not fit in the budget so (not under
# MEASURE_FLOOR_S); a signature's replay makes about MEASURES_PER_SIGNATURE of them.
MEASURE_FLOOR_S = 0.02
MEASURES_PER_SIGNATURE = 3
DEFAULT_SAMPLE_BUDGET = 100_000_000  # bytes of sample inputs kept in all (docs/profiler.md)


class NoGradientError(AdcliError):
    """The program ran but took no gradient: nothing to profile. ``run``: how it ended (its
    traceback, when it raised before its first gradient)."""

    def __init__(self, message: str, run: RunResult | None = None):
        super().__init__(message)
        self.run = run


def profile_program(target: str, argv: list, *, module: bool = False, output: str = "adcli-profile.json",
                    rules: tuple = (), include: tuple = (), exclude: tuple = (), replays: bool = True,
                    replay_budget: float = 0.2, force: bool = False, progress=None,
                    replays_total: float | str | None = DEFAULT_REPLAYS_TOTAL,
                    sample_budget: int = DEFAULT_SAMPLE_BUDGET, every_gradient: bool = False) -> tuple[Profile, RunResult]:
    """Run ``target`` (a script path, or a module with ``module=True``) under the profiler,
    replay its costly signatures, and save the profile to ``output`` (+ ``.npz``).

    Returns the profile and how the program ended. The profile is written even when the
    program raised, called sys.exit or os._exit, or was interrupted (then it says ``partial``);
    a program that took no gradient raises NoGradientError and writes nothing. The output
    paths are checked, and made absolute, before the program runs (it may change folder); if
    they cannot be written after all, the profile is saved to a temporary file and
    ProfileSavedElsewhere says where.
    """
    if module:
        find_module(target)
    elif not os.path.isfile(target):
        raise ScriptError(f"no such script: {target}")
    output = os.path.abspath(output) if output else output
    check_profile_output(output, force, [None if module else target, *rules], ", or -o to write elsewhere")
    load_rules(rules)
    root = os.getcwd() if module else os.path.dirname(os.path.abspath(target))
    recording = Recording([("-m " if module else "") + target, *argv], root, include=include, exclude=exclude,
                          rules=rules, sample_budget=sample_budget, every_gradient=every_gradient)

    def finished(run: RunResult) -> tuple[Profile, dict]:
        if recording.session.gradients == 0:
            if run.error:
                why = f"raised before its first gradient ({run.summary})"
            elif run.interrupted:
                why = "was interrupted before its first gradient"
            elif run.exit_status:
                why = f"exited with status {run.exit_status} before its first gradient"
            else:
                why = "took no gradient through adcli (adcli.grad / adcli.value_and_grad)"
            raise NoGradientError(f"{target} {why}: nothing to profile", run)
        return recording.profile(run.exit_status, run.interrupted or run.hard_exit)

    def hard_exit(status) -> None:  # the program called os._exit: save what there is, no replays
        run = RunResult(exit_status=status if isinstance(status, int) else 1, hard_exit=True)
        try:
            profile, samples = finished(run)
            where, problem = save_or_fallback(profile, output, samples, force)
            sys.stderr.write(f"adcli: the program called os._exit({status!r}): profile written to {where} "
                             f"(partial, no replays){'; ' + problem if problem else ''}\n")
        except NoGradientError as exc:
            sys.stderr.write(f"adcli: the program called os._exit({status!r}): {exc}\n")
        sys.stderr.flush()

    session = recording.session
    t_run = time.perf_counter()
    run = run_module(session, target, argv, hard_exit) if module else run_script(session, target, argv, hard_exit)
    run_s = time.perf_counter() - t_run
    profile, samples = finished(run)
    if replays and not run.interrupted:
        try:
            recording.replay(profile, run_s, replays_total, replay_budget, progress)
        except KeyboardInterrupt:  # Ctrl-C during the replays: keep what was measured, exit as Ctrl-C does
            profile.partial = True
            profile.replays = "interrupted"
            profile.exit_status = run.exit_status = 130
            run.interrupted = True
    save_profile(profile, output, samples, force)
    return profile, run


class Recording:
    """One recording of gradients, from the session the engine reports to, to the profile built
    from it and its replays: ``adcli profile`` records a program through one (profile_program
    above), ``adcli.profile()`` a block of Python code (app/notebook.py), so that the two make
    the same profile of the same gradients. ``command``: what ran, as the profile names it."""

    def __init__(self, command: list, root_dir: str, *, include=(), exclude=(), rules=(),
                 sample_budget: int = DEFAULT_SAMPLE_BUDGET, every_gradient: bool = False) -> None:
        self.session = Session(include=include, exclude=exclude, root_dir=root_dir, sample_budget=sample_budget,
                               every_gradient=every_gradient)
        self.command = command
        self.rules = rules
        self.started = datetime.datetime.now(datetime.timezone.utc)

    def start(self) -> None:
        """Have the engine report every gradient to this recording, in every thread, until
        ``stop`` (a block of code; runner.py installs the session around a program it runs).
        Recordings do not nest."""
        if hooks.current() is not None:
            raise AdcliError("a profile is already being recorded (profiles do not nest)")
        hooks.install(self.session)

    def stop(self) -> None:
        hooks.uninstall()

    def profile(self, exit_status: int, partial: bool) -> tuple[Profile, dict]:
        """The profile of what was recorded, before replays, and its sample arrays."""
        return build(self.session, run_meta(self.session, self.command, self.started, exit_status, partial,
                                            self.rules))

    def replay(self, profile: Profile, run_s: float, replays_total: float | str | None = DEFAULT_REPLAYS_TOTAL,
               replay_budget: float = 0.2, progress=None) -> None:
        """Replay ``profile``'s costly signatures within ``replay_allowance(replays_total,
        run_s)`` seconds; ``profile.replay_s`` records how long they took, interrupted or not
        (a Ctrl-C goes on to the caller, which decides what an interrupted profile is)."""
        t0 = time.perf_counter()
        try:
            _replays(profile, self.session, replay_budget, progress, replay_allowance(replays_total, run_s))
            profile.replays = "done"
        finally:
            profile.replay_s = time.perf_counter() - t0


def check_profile_output(output: str, force: bool, inputs=(), elsewhere: str = "") -> None:
    """Refuse before any work to write a profile at ``output``: over its own sample file, over
    one of ``inputs`` (its script, its rules files), over a file without ``force`` (``elsewhere``:
    how else to write it, for the message), or where it cannot be written."""
    if output and sidecar(output) == output:
        raise OutputError(f"cannot write the profile to {output}: that is the name of its own sample file (.npz); "
                          "name the profile .json")
    refuse_inputs(output, inputs)
    refuse_inputs(sidecar(output), inputs)
    check_writable(output, force, what=elsewhere)
    check_writable(sidecar(output), force, what=f" (the sample file of {output}){elsewhere}")


def save_profile(profile: Profile, output: str, samples: dict, force: bool = False) -> None:
    """Save the profile and its samples at ``output``, or, if that fails, to a temporary file
    and raise ProfileSavedElsewhere saying where (save_or_fallback)."""
    where, problem = save_or_fallback(profile, output, samples, force)
    if problem:
        raise ProfileSavedElsewhere(f"{problem}; the profile was saved to {where} instead", where)


def run_meta(session: Session, command: list, started, exit_status: int, partial: bool, rules=()) -> dict:
    """A profile's description of its run (before replays): what ran, with which rules files,
    where, and how it ended."""
    return {
        "command": command, "created": started.isoformat(timespec="seconds"),
        "adcli_version": __version__, "python": platform.python_version(), "numpy": np.__version__,
        "platform": platform.platform(), "exit_status": exit_status, "partial": partial, "replay_s": 0.0,
        "failed_gradients": session.failed_gradients, "replays": "skipped", "rules": list(rules),
    }


class ProfileSavedElsewhere(AdcliError):
    """The profile could not be written where asked; it was saved to a temporary file."""

    def __init__(self, message: str, where: str):
        super().__init__(message)
        self.where = where


def save_or_fallback(profile: Profile, output: str, samples: dict, force: bool = True) -> tuple[str, str | None]:
    """Save the profile to ``output``, or, if that fails (a full disk, a folder gone), to a new
    temporary file: a finished run is never lost. Returns where it went, and why not to
    ``output`` (None if it did)."""
    try:
        save(profile, output, samples, force)
        return output, None
    except (OutputError, OSError) as exc:
        problem = str(exc) if isinstance(exc, OutputError) else f"cannot write {output}: {exc.strerror or exc}"
        fd, fallback = tempfile.mkstemp(prefix="adcli-profile-", suffix=".json")
        os.close(fd)
        save(profile, fallback, samples)
        return fallback, problem


def replay_allowance(total: float | str | None, run_s: float) -> float | None:
    """Seconds all the replays of a run may take: ``total`` as given, or for ``"auto"`` the
    program's own run time (``run_s``) within [REPLAY_FLOOR_S, REPLAY_CAP_S]; None: no limit."""
    if total != AUTO:
        return total
    return min(max(REPLAY_SHARE * run_s, REPLAY_FLOOR_S), REPLAY_CAP_S)


def measure_budget(budget: float, total_budget: float | None, signatures: int) -> float:
    """Seconds per measurement: ``budget``, less when ``signatures`` replays of about
    MEASURES_PER_SIGNATURE measurements each would not fit in ``total_budget``."""
    if total_budget is None or not signatures:
        return budget
    fits = total_budget / (signatures * MEASURES_PER_SIGNATURE)
    return max(min(budget, fits), min(budget, MEASURE_FLOOR_S))


def _replays(profile: Profile, session: Session, budget: float, progress, total_budget: float | None = None) -> None:
    chosen = replay.choose(profile)
    first = None if total_budget is None else REPLAYS_SHARE_OF_BUDGET * total_budget
    budget = measure_budget(budget, first, len(chosen))
    deadline = None if total_budget is None else time.perf_counter() + total_budget
    out, err = io.StringIO(), io.StringIO()
    # the replays re-run the program's functions: what they print is not the program's output
    with threadpool_limits(1), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        _replay_each(profile, chosen, session, budget, progress, first, total_budget)
        try:
            replay.in_program(profile, session.by_id, budget, deadline)
        except KeyboardInterrupt:
            raise
        except Exception:  # noqa: BLE001 - the what-ifs refine the advice; the replays stand without them
            for s in profile.signatures:
                if s.replay is not None:
                    s.replay.forget_program()
    hidden = (out.getvalue() + err.getvalue()).count("\n")
    if hidden:
        profile.notes.append(f"the replays re-ran your functions; the {hidden} line(s) they printed were hidden")


def _replay_each(profile: Profile, chosen: list, session: Session, budget: float, progress,
                 total_budget: float | None, named_budget: float | None = None) -> None:
    """Replay ``chosen`` in order until ``total_budget`` seconds have gone (the note names
    ``named_budget``, the whole run's budget, when given)."""
    started = time.perf_counter()
    calls = [0]

    def tick() -> None:  # after every timed call: the display moves while a signature is replayed
        calls[0] += 1
        if progress is not None and calls[0] % 8 == 0:
            progress(n, len(chosen), label, calls[0])

    ON_CALL.append(tick)
    try:
        for n, stats in enumerate(chosen):
            label = str(stats.signature)
            if total_budget is not None and time.perf_counter() - started > total_budget:
                profile.unreplayed = len(chosen) - n
                profile.unreplayed_s = sum(s.gradient_s for s in chosen[n:])
                left = ", ".join(str(s.signature) for s in chosen[n:n + 3]) + (", ..." if len(chosen) - n > 3 else "")
                profile.notes.append(f"replays stopped at the {named_budget or total_budget:g} s budget: {profile.unreplayed} of "
                                     f"{len(chosen)} signature(s) not replayed, the smallest ({left}); the advice "
                                     "weighs the others (--replay-budget to allow more)")
                break
            if progress is not None:
                progress(n, len(chosen), label, calls[0])
            _replay_one(stats, session, budget)
    finally:
        ON_CALL.remove(tick)
    if progress is not None:
        progress(len(chosen), len(chosen), "", calls[0])


def _replay_one(stats, session: Session, budget: float) -> None:
    try:
        stats.replay = replay.replay(session.by_id[stats.id], budget)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a replay that fails (even by SystemExit) is reported, not fatal
        stats.replay = Replay(error=f"{type(exc).__name__}: {exc}")


def report_error(run: RunResult) -> None:
    if run.error:
        sys.stderr.write(run.error)
