"""``profile_program``: the library function behind ``adcli profile``."""

from __future__ import annotations

import datetime
import os
import platform
import sys

import numpy as np

from .. import __version__
from ..errors import AdcliError
from . import model, replay
from .runner import RunResult, ScriptError, load_rules, run_module, run_script
from .session import Session


class NoGradientError(AdcliError):
    """The program ran but took no gradient: nothing to profile."""


def profile_program(target: str, argv: list, *, module: bool = False, output: str = "adcli-profile.json",
                    rules: tuple = (), include: tuple = (), exclude: tuple = (), replays: bool = True,
                    replay_budget: float = 0.2, force: bool = False, progress=None) -> tuple[dict, RunResult]:
    """Run ``target`` (a script path, or a module with ``module=True``) under the profiler,
    replay its costly signatures, and save the profile to ``output`` (+ ``.npz``).

    Returns the profile and how the program ended. The profile is written even when the
    program raised, called sys.exit, or was interrupted (then it says ``partial``); a program
    that took no gradient raises NoGradientError and writes nothing.
    """
    if module:
        from .runner import find_module

        find_module(target)
    elif not os.path.isfile(target):
        raise ScriptError(f"no such script: {target}")
    if os.path.exists(output) and not force:
        raise model.ProfileError(f"{output} exists; pass --force to overwrite it, or -o to write elsewhere")
    model.check_writable(output)
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
    profile = model.build(session, meta)
    samples = _attach_samples(profile, session)
    if replays and not run.interrupted:
        t0 = __import__("time").perf_counter()
        try:
            _replays(profile, session, replay_budget, progress)
        except KeyboardInterrupt:
            profile["partial"] = True
        profile["replay_s"] = __import__("time").perf_counter() - t0
    model.save(profile, output, samples)
    return profile, run


def _replays(profile: dict, session: Session, budget: float, progress) -> None:
    chosen = replay.choose(profile)
    for n, entry in enumerate(chosen):
        sig = session.by_id[entry["id"]]
        if progress is not None:
            progress(n, len(chosen), entry["signature"])
        try:
            entry["replay"] = replay.replay(sig, budget)
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # noqa: BLE001 - a replay that fails is reported, not fatal
            entry["replay"] = {"error": f"{type(exc).__name__}: {exc}"}
    if progress is not None:
        progress(len(chosen), len(chosen), "")


def _attach_samples(profile: dict, session: Session) -> dict:
    """Store each signature's sample inputs: arrays in the .npz (``s<id>_<path>``), numbers and
    strings inline; anything else is described and left out."""
    arrays: dict = {}
    for entry in profile["signatures"]:
        sig = session.by_id[entry["id"]]
        if not isinstance(sig.sample, list):
            entry["sample"] = None
            continue
        prefix = f"s{sig.id}"
        entry["sample"] = {
            "args": [_encode(a, f"{prefix}_a{i}", arrays) for i, a in enumerate(sig.sample)],
            "kwargs": {k: _encode(v, f"{prefix}_k{j}", arrays) for j, (k, v) in enumerate((sig.sample_kwargs or {}).items())},
        }
    return arrays


def _encode(v, key: str, arrays: dict):
    if isinstance(v, np.ndarray) and v.dtype.kind in "biufc":
        arrays[key] = v
        return {"array": key}
    if isinstance(v, np.generic):
        return {"value": v.item(), "dtype": str(v.dtype)}
    if isinstance(v, (bool, int, float, str)) or v is None:
        return {"value": v}
    if isinstance(v, (list, tuple)):
        return {type(v).__name__: [_encode(x, f"{key}_{i}", arrays) for i, x in enumerate(v)]}
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        # keys by position, not by name: names could make two paths collide
        return {"dict": {k: _encode(x, f"{key}_{j}", arrays) for j, (k, x) in enumerate(v.items())}}
    from ..engine.signature import describe

    return {"unsupported": describe(v)}


def decode(entry, arrays: dict, missing=None):
    """The value a sample entry written by ``_encode`` stands for (arrays from the .npz), or
    ``missing`` for an entry that was not saved (too big, unsupported, or a container)."""
    if isinstance(entry, dict):
        if "array" in entry:
            return arrays.get(entry["array"], missing)
        if "value" in entry:
            v = entry["value"]
            return np.dtype(entry["dtype"]).type(v) if "dtype" in entry else v
    return missing


def report_error(run: RunResult) -> None:
    if run.error:
        sys.stderr.write(run.error)
