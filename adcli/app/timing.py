"""``adcli compare --script SCRIPT --rules RULES``: each side of a comparison timed with repeats.

Two profiles are one run of the program each: a rule's effect on them is within a shared
machine's noise (the same rule measured +86% on one pair of runs and -22% on the next). Here
the gradients of the functions the program handed to ``grad`` (the call tree's roots) are run
again on their recorded samples, without the profiler: "before" with the rules out of the
registry, "after" with them in, the two in turn, round after round (``measure.interleaved``),
so that a machine slowing down for a while slows both. Each side is a :class:`Spread` of
seconds per run (each root's time per gradient times its gradients per run), and the change
a range: from the fastest "after" against the slowest "before" of the two sides' noise
ranges to the reverse. "Within noise" when the ranges overlap.

Only what the user names is run: the script's definitions (not its main block) and the rules
files; a root that is not a function of the script or of a ``--module`` file is not timed.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from types import SimpleNamespace

from threadpoolctl import threadpool_limits

from ..data.model import Profile
from ..data.records import Replay
from ..data.samples import decode
from ..data.store import Samples
from ..engine.registry import add_rule, remove_rule, suspended
from ..engine.signature import Signature
from ..errors import AdcliError
from ..measure import Spread, interleaved
from ..profiler.callsite import CallSiteError, first_call
from ..profiler.replay import setup
from ..profiler.runner import ScriptError
from ..rules.dispatch import original
from .check import load_rules_file, load_script_definitions
from .targets import export_target

DEFAULT_BUDGET_S = 2.0  # seconds of timing, both sides and every root together


def change_range(before: Spread, after: Spread) -> tuple[float, float]:
    """The relative change from ``before`` to ``after`` as a range: the least and the most it
    can be within the two noise ranges (negative: faster). It holds 0 when they overlap."""
    return after.low / before.high - 1.0, after.high / before.low - 1.0


@dataclass
class TimedGradient:
    """One function handed to ``grad``, timed on both sides: seconds per gradient."""

    signature: Signature
    gradients: int  # per run of the program
    before: Spread
    after: Spread

    def to_json(self) -> dict:
        low, high = change_range(self.before, self.after)
        return {"signature": str(self.signature), "gradients": self.gradients, "before": self.before.to_json(),
                "after": self.after.to_json(), "change_low": low, "change_high": high,
                "within_noise": self.before.overlaps(self.after)}


@dataclass
class Timing:
    """Both sides timed: per root, and in all (seconds per run of the program)."""

    rules: list  # the rules files "after" has and "before" has not
    gradients: list[TimedGradient]
    before: Spread
    after: Spread
    untimed: list = field(default_factory=list)  # the roots not timed, and why

    @property
    def change(self) -> tuple[float, float]:
        return change_range(self.before, self.after)

    @property
    def within_noise(self) -> bool:
        return self.before.overlaps(self.after)

    def to_json(self) -> dict:
        low, high = self.change
        return {"rules": list(self.rules), "before": self.before.to_json(), "after": self.after.to_json(),
                "change_low": low, "change_high": high, "within_noise": self.within_noise,
                "gradients": [g.to_json() for g in self.gradients], "untimed": list(self.untimed)}


class TimingError(AdcliError):
    """The sides cannot be timed: no root to time, or nothing that differs between them."""


def _real(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


def _roots(before: Profile, after: Profile) -> list:
    """(stats with a sample, gradients per run) of each function handed to grad, by signature."""
    out: dict = {}
    for profile in (before, after):
        by_id = profile.by_id()
        for node in profile.tree.children:
            stats = by_id.get(node.sig)
            if stats is not None and stats.signature not in out:
                out[stats.signature] = (profile, stats, node.calls)
    return list(out.values())


def _arguments(stats, samples: Samples):
    missing = object()
    if stats.sample is None:
        return None
    args = [decode(a, samples, missing) for a in stats.sample.args]
    kwargs = {k: decode(v, samples, missing) for k, v in stats.sample.kwargs.items()}
    if not args or any(a is missing for a in [*args, *kwargs.values()]):
        return None
    return args, kwargs


def _function(sig: Signature, files: list, script: str, modules: tuple, declared: list):
    """The user's function a root names, if a file the user passed defines it, and the
    arguments of its call at the program's call site when it was found there (a closure, a
    method: profiler/callsite.py); else why not."""
    try:
        func = original(sig.target)
    except AdcliError:
        return _at_call_site(sig, script, modules, declared)
    code = getattr(func, "__code__", None) if inspect.isfunction(func) else None
    if code is None or _real(code.co_filename) not in {_real(f) for f in files}:
        return None, f"{sig.function} is not defined in the script or a --module file"
    return (func, None), ""


def _at_call_site(sig: Signature, script: str, modules: tuple, declared: list):
    """A closure or method handed to ``grad``, found where the program calls it: only when a file
    the user passed defines it (read from its syntax before anything runs, app/targets.py), with
    the rules out of the registry while the program runs to the call."""
    _, why = export_target(sig, False, script, tuple(modules))
    if why:
        return None, f"{sig.function} cannot be found again without running the program, and {why}"
    try:
        with suspended(*declared):
            site = first_call(script, sig, tuple(modules))
    except (CallSiteError, ScriptError) as exc:
        return None, f"{sig.function}: {exc}"
    return (site.func, site), ""


def time_sides(before: Profile, after: Profile, paths: tuple, script: str, rules: tuple, modules: tuple = (),
               budget: float = DEFAULT_BUDGET_S) -> Timing:
    """Time the gradients of the profiles' roots with and without the rules files ``rules``
    (``paths``: where the profiles are, for their samples)."""
    if not rules:
        recorded = ", ".join(after.rules)
        raise TimingError("nothing differs between the sides to time: give --rules FILE, the rules the after profile "
                          + (f"was profiled with ({recorded})" if recorded else "is to be timed with"))
    load_script_definitions(script)
    declared = []
    for path in rules:
        declared += load_rules_file(path)[1]
    files = [script, *modules, *rules]
    gradients, untimed = [], []
    samples = {id(p): Samples(path, p) for p, path in zip((before, after), paths)}
    try:
        runs = []
        for profile, stats, calls in _roots(before, after):
            found, why = _function(stats.signature, files, script, tuple(modules), declared)
            func, site = found if found is not None else (None, None)
            arguments = _arguments(stats, samples[id(profile)]) if func is not None else None
            if func is not None and arguments is None and site is None:  # an object the profile could not record
                found, why = _at_call_site(stats.signature, script, tuple(modules), declared)
                site = None if found is None else found[1]
            if arguments is None and site is not None:  # (a method's self, a model object: the call site's)
                arguments = list(site.args), dict(site.kwargs)
            if func is not None and arguments is None:
                why = f"{stats.signature.function} has no complete sample inputs in the profile"
            if why:
                untimed.append(why)
                continue
            done = setup(SimpleNamespace(func=func, sample=arguments[0], sample_kwargs=arguments[1], kind=stats.kind,
                                         traced=stats.traced, signature=stats.signature))
            if isinstance(done, Replay):
                untimed.append(f"{stats.signature.function}: {done.error}")
                continue
            runs.append((stats.signature, calls, done[4], done[1]))
        if not runs:
            raise TimingError("no function handed to grad could be timed: " + "; ".join(untimed))
        fns, hooks = [], []
        for _, _, grad, args in runs:
            fns += [lambda grad=grad, args=args: grad(*args)] * 2
            hooks += [lambda: [remove_rule(r) for r in declared], lambda: [add_rule(r) for r in declared]]
        with threadpool_limits(1):
            times = interleaved(fns, budget, before=hooks)
    finally:
        for s in samples.values():
            s.close()
        for r in declared:
            remove_rule(r)
    for k, (sig, calls, _, _) in enumerate(runs):
        gradients.append(TimedGradient(sig, calls, Spread.of(times[2 * k]), Spread.of(times[2 * k + 1])))
    per_run = [[sum(calls * times[2 * k + side][i] for k, (_, calls, _, _) in enumerate(runs))
                for i in range(len(times[0]))] for side in (0, 1)]
    return Timing(list(rules), gradients, Spread.of(per_run[0]), Spread.of(per_run[1]), untimed)
