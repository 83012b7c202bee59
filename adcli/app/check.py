"""``adcli check RULES.py``: load a rules module and check every rule it declares."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..data.samples import decode
from ..data.store import Samples, load
from ..engine.registry import declared_rules, suspended
from ..errors import AdcliError
from ..profiler.callsite import first_calls
from ..profiler.runner import ScriptError, import_rules_file
from ..profiler.script import load_script
from ..rules.declare import Rule
from ..rules.dispatch import dispatch
from ..testing import GradientMismatch, RuleNotServed, RuleReport, check_rule, counting
from .evidence import argument_names_of, evidence
from .resolve import find_target, nearest_checkable, profile_mismatch
from .scaling import ScaleError, plan, unknown
from .targets import UntrustedTargetError, check_target, export_target

STATUSES = ("ok", "wrong", "fail", "todo", "error")  # fail: the rule did not serve the checked calls


@dataclass
class RuleCheck:
    """The check of one declared rule: ``status`` one of STATUSES; ``on`` what it ran on;
    ``report`` the text (the passed checks, or why it failed); ``result`` check_rule's
    RuleReport when the rule was checked on the profile's samples and passed."""

    rule: str
    source: str
    status: str
    on: str = ""
    report: str = ""
    result: RuleReport | None = None

    def to_json(self) -> dict:
        out = {"rule": self.rule, "source": self.source, "status": self.status, "on": self.on, "report": self.report,
               "served_by": None, "checks": [], "gradient_s": None, "peak_bytes": None, "replaces": None,
               "replaced_s": None, "replaced_peak_bytes": None, "nonsmooth": None}
        r = self.result
        if r is not None:
            out.update(served_by=r.rule, checks=list(r.checks), replaces=r.fallback, nonsmooth=r.nonsmooth or None)
            if r.cost is not None:
                out.update(gradient_s=r.cost.seconds, peak_bytes=r.cost.peak_bytes)
            if r.fallback_cost is not None:
                out.update(replaced_s=r.fallback_cost.seconds, replaced_peak_bytes=r.fallback_cost.peak_bytes)
        return out


@dataclass
class CheckReport:
    """Every rule a rules file declares, checked (``evidence``: with --sizes, per rule)."""

    path: str
    results: list
    evidence: list = field(default_factory=list)

    @property
    def failed(self) -> list:
        return [r for r in self.results if r.status != "ok"]

    def to_json(self) -> dict:
        return {"path": self.path, "rules": len(self.results), "ok": len(self.results) - len(self.failed),
                "results": [r.to_json() for r in self.results], "evidence": [e.to_json() for e in self.evidence]}


class RulesFileError(AdcliError):
    """A rules file that cannot be loaded: missing, a syntax error, an error while it runs."""


def _rules_snapshot() -> set:
    return {id(r) for r in declared_rules()}


def load_script_definitions(script: str) -> None:
    """Define a script's functions as ``__main__`` without running its main block
    (profiler.script.load_script); its errors as RulesFileError."""
    try:
        load_script(script, reload=True)
    except ScriptError as exc:
        raise RulesFileError(str(exc)) from None


def load_rules_file(path: str):
    """Import ``path`` (its folder first on ``sys.path``, as for a script); return the module and
    the rules it declared. A file that raises while it loads: RulesFileError, one line."""
    if not os.path.isfile(path):
        raise RulesFileError(f"no rules file at {path}")
    before = _rules_snapshot()
    try:
        module = import_rules_file(path, f"adcli_checked_{abs(hash(path))}")
    except ScriptError as exc:
        raise RulesFileError(str(exc)) from None
    declared = [r for r in declared_rules() if id(r) not in before]
    return module, declared


def check(path: str, profile: str | None = None, script: str | None = None, timing: bool = True,
          sizes: list | None = None, modules: tuple = (), scale: dict | None = None) -> CheckReport:
    """Check each rule ``path`` declares: on the profile's sample inputs (and keyword
    arguments) for the rule's signature when ``profile`` is given and has them, else by running
    the module's own ``test_*`` functions. ``script``: the program whose functions rules for
    ``"__main__:name"`` serve (its definitions are loaded, its folder put on ``sys.path``; a
    profile's ``command`` is never run). ``modules``: the user's other files whose functions
    rules may target. A rule whose callable is neither in adcli's catalog nor defined in the rules
    file, ``script`` or ``modules`` is refused before anything is checked (app/targets.py).

    One result per rule: ok (the rule served every checked call and every check passed), wrong,
    fail (the rule did not serve: its target is not found, its module is imported under another
    name, or the program calls the function with another signature; app/resolve.py), todo or
    error, and the report. ``sizes``: each rule that passed is also timed on its sample scaled to
    these sizes (app/evidence.py), the arguments scaled as ``scale`` says (``{name or position:
    axis or None}``; the others inferred from the shapes, app/scaling.py); ScaleError before any
    is timed when ``scale`` names an argument no such rule has."""
    if script is not None:
        load_script_definitions(script)
    data = load(profile) if profile is not None else None
    samples = Samples(profile, data) if profile is not None else None
    module, declared = load_rules_file(path)
    by_sig = {s.signature: s for s in data.signatures} if data is not None else {}
    sites = _call_sites(declared, by_sig, samples, script, modules)
    found = [_site_target(rule, sites[id(rule)], script, data) if id(rule) in sites else find_target(rule, script)
             for rule in declared]
    for rule, (func, _) in zip(declared, found):  # every callable is trusted before anything is called
        if func is not None:
            check_target(rule, func, [path, script, *modules])
    tests = {name: getattr(module, name) for name in dir(module) if name.startswith("test_")}
    try:
        report, timed = CheckReport(path, []), []
        for rule, (func, why) in zip(declared, found):
            stats = by_sig.get(rule.signature)
            why = why or (profile_mismatch(rule, data) if data is not None and stats is None else "")
            if why:
                report.results.append(RuleCheck(str(rule.signature), rule.source, "fail", "", why))
                continue
            call = dispatch(func) if isinstance(rule.target, tuple) else func
            site = sites.get(id(rule))
            sample = _sample(stats, samples) if site is None else _with_site(stats, samples, site)
            result = _check_one(rule, call, sample, tests, timing,
                                "profile samples" if site is None else "profile samples at the program's call site")
            report.results.append(result)
            if sizes and sample is not None and result.status == "ok":
                timed.append((rule, call, *sample))
        report.evidence = [evidence(rule, call, args, sizes, kwargs, scaled=scaled)
                           for (rule, call, args, kwargs), scaled in zip(timed, _scalings(timed, scale))]
        return report
    finally:
        if samples is not None:
            samples.close()


def _scalings(timed: list, scale: dict | None) -> list:
    """Which arguments of each timed rule's sample --sizes scales (app/scaling.py); ScaleError when
    ``scale`` names an argument none of them has."""
    plans, seen = [], set()
    for rule, call, args, kwargs in timed:
        names = argument_names_of(call, args, kwargs)
        seen.update(names, map(str, range(len(args))))
        plans.append(plan(names, [*args, *kwargs.values()], scale))
    missing = unknown(scale or {}, seen) if timed else []
    if missing:
        raise ScaleError(f"--scale names {', '.join(missing)}, which no rule checked with --sizes takes "
                         f"(their arguments: {', '.join(sorted(n for n in seen if not n.isdigit()))})")
    return plans


def _call_sites(declared: list, by_sig: dict, samples, script: str | None, modules: tuple) -> dict:
    """``{id(rule): CallSite or None}`` for the rules whose function is found only by running the
    program (profiler/callsite.py): a closure or nested function (created by running the function
    that defines it), a method whose ``self`` the profile could not record. Only with ``script``,
    and only for functions the user's files define (read from their syntax, before anything
    runs); the rules under check do not serve while the program runs to the calls."""
    wanted = [r for r in declared if _at_call_site(r, by_sig.get(r.signature), samples)]
    if script is None or not wanted:
        return {}
    for r in wanted:
        _, why = export_target(r.signature, False, script, modules)
        if why:
            raise UntrustedTargetError(
                f"refusing to check the rule for {r.signature}: finding it means running {script} to its call, and "
                f"{why}; pass --module FILE with the file that defines it if it is yours")
    keys = {id(r): (*r.target, r.key) for r in wanted}
    try:
        with suspended(*declared):
            found = first_calls(script, set(keys.values()), tuple(modules))
    except ScriptError as exc:
        raise RulesFileError(str(exc)) from None
    return {i: found.get(k) for i, k in keys.items()}


def _at_call_site(rule: Rule, stats, samples) -> bool:
    if not isinstance(rule.target, tuple) or stats is None or "." not in rule.target[1]:
        return False
    return "<locals>" in rule.target[1] or _sample(stats, samples) is None


def _site_target(rule: Rule, site, script: str, profile) -> tuple:
    """``find_target``'s answer for a rule looked for at the program's call site."""
    if site is not None:
        return site.func, ""
    nearest = nearest_checkable(profile, rule.signature)
    return None, (f"target not found: {script} ran to its end without calling {rule.signature} inside a gradient "
                  "(the profile's program may differ from it)" + (f"; the nearest checkable target is {nearest}, "
                                                                  "a caller of it" if nearest else ""))


def _with_site(stats, samples, site):
    """(args, kwargs): the profile's sample, each argument it could not record (a method's
    ``self``, an object) taken from the program's call site."""
    recorded = stats.sample if stats is not None else None
    args = [decode(a, samples, _MISSING) for a in recorded.args] if recorded is not None and samples is not None else []
    args = [args[i] if i < len(args) and args[i] is not _MISSING else a for i, a in enumerate(site.args)]
    kwargs = {k: decode(recorded.kwargs[k], samples, _MISSING) if recorded is not None and samples is not None and
              k in recorded.kwargs else _MISSING for k in site.kwargs}
    return args, {k: site.kwargs[k] if v is _MISSING else v for k, v in kwargs.items()}


def _sample(stats, samples):
    """(args, kwargs) of a signature's recorded sample (only its arrays are read), or None if
    incomplete: a call without its keyword arguments is another signature."""
    if stats is None or stats.sample is None or samples is None:
        return None
    args = [decode(a, samples, _MISSING) for a in stats.sample.args]
    kwargs = {k: decode(v, samples, _MISSING) for k, v in stats.sample.kwargs.items()}
    if not args or any(a is _MISSING for a in [*args, *kwargs.values()]):
        return None
    return args, kwargs


def _check_one(rule: Rule, call, sample, tests: dict, timing: bool, on: str = "profile samples") -> RuleCheck:
    sig = str(rule.signature)
    try:
        if sample is not None:
            # a rule synthesized for the arguments the run traced is checked for those (synth.declare's wrt)
            report = check_rule(call, *sample[0], kwargs=sample[1], timing=timing, rule=rule,
                                argnums=getattr(rule.fwd, "__adcli_wrt__", None))
            return RuleCheck(sig, rule.source, "ok", on, str(report), report)
        test = _test_for(rule, tests)
        if test is None:
            return RuleCheck(sig, rule.source, "error", "", "no sample inputs and no test_* function for it in the module")
        with counting(rule) as ran:
            test()
        if not ran[0]:
            return RuleCheck(sig, rule.source, "fail", f"{test.__name__}()",
                             f"{test.__name__}() never called the rule: nothing it ran checked it")
        return RuleCheck(sig, rule.source, "ok", f"{test.__name__}()")
    except NotImplementedError as exc:
        return RuleCheck(sig, rule.source, "todo", "", str(exc))
    except RuleNotServed as exc:
        return RuleCheck(sig, rule.source, "fail", "", str(exc))
    except GradientMismatch as exc:
        return RuleCheck(sig, rule.source, "wrong", "", str(exc))
    except Exception as exc:  # noqa: BLE001 - a rule that crashes is reported, not fatal to the check
        return RuleCheck(sig, rule.source, "error", "", f"{type(exc).__name__}: {exc}")


_MISSING = object()


def _test_for(rule: Rule, tests: dict):
    """The module's test for a rule: test_<name> where <name> is the target's last name part."""
    name = rule.target[1] if isinstance(rule.target, tuple) else getattr(rule.target, "__name__", "")
    short = name.rsplit(".", 1)[-1]
    candidates = [t for n, t in sorted(tests.items()) if n == f"test_{short}" or n.startswith(f"test_{short}_")]
    return candidates[0] if len(candidates) == 1 else None
