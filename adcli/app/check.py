"""``adcli check RULES.py``: load a rules module and check every rule it declares."""

from __future__ import annotations

import importlib.util
import os
import traceback
from dataclasses import dataclass, field

from ..engine.registry import declared_rules
from ..errors import AdcliError
from ..profiler.runner import ScriptError
from ..profiler.samples import decode
from ..profiler.script import load_script
from ..profiler.store import Samples, load
from ..rules.declare import Rule
from ..rules.dispatch import dispatch, original
from ..testing import GradientMismatch, check_rule
from .evidence import evidence
from .targets import check_target

STATUSES = ("ok", "wrong", "todo", "error")


@dataclass
class RuleCheck:
    """The check of one declared rule: ``status`` one of STATUSES; ``on`` what it ran on."""

    rule: str
    source: str
    status: str
    on: str = ""
    report: str = ""

    def to_json(self) -> dict:
        return {"rule": self.rule, "source": self.source, "status": self.status, "on": self.on, "report": self.report}


@dataclass
class CheckReport:
    """Every rule a rules file declares, checked (``evidence``: with --sizes, per rule)."""

    path: str
    results: list
    evidence: list = field(default_factory=list)

    @property
    def failed(self) -> list:
        return [r for r in self.results if r.status != "ok"]


class RulesFileError(AdcliError):
    """A rules file that cannot be loaded: missing, a syntax error, a target that cannot be found."""


def _rules_snapshot() -> set:
    return {id(r) for r in declared_rules()}


def load_script_definitions(script: str) -> None:
    """Define a script's functions as ``__main__`` without running its main block
    (profiler.script.load_script); its errors as RulesFileError."""
    try:
        load_script(script, reload=True)
    except ScriptError as exc:
        raise RulesFileError(str(exc)) from None


def _line_in(exc: BaseException, path: str) -> str | None:
    """``file:line`` of the innermost frame of ``exc``'s traceback in ``path``."""
    frames = [fr for fr in traceback.extract_tb(exc.__traceback__) if os.path.abspath(fr.filename) == path]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else None


def load_rules_file(path: str):
    """Import ``path``; return the module and the rules it declared."""
    if not os.path.isfile(path):
        raise RulesFileError(f"no rules file at {path}")
    before = _rules_snapshot()
    spec = importlib.util.spec_from_file_location(f"adcli_checked_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise RulesFileError(f"{exc.filename}:{exc.lineno}: syntax error: {exc.msg}") from None
    except AdcliError as exc:
        raise RulesFileError(f"{_line_in(exc, os.path.abspath(path)) or path}: {exc}") from None
    declared = [r for r in declared_rules() if id(r) not in before]
    return module, declared


def _callable_for(rule: Rule):
    if isinstance(rule.target, tuple):
        return dispatch(original(rule.signature.target))
    return rule.target


def check(path: str, profile: str | None = None, script: str | None = None, timing: bool = True,
          sizes: list | None = None, modules: tuple = ()) -> CheckReport:
    """Check each rule ``path`` declares: on the profile's sample inputs for the rule's signature
    when ``profile`` is given and has them, else by running the module's own ``test_*``
    functions. ``script``: the program whose functions rules for ``"__main__:name"`` serve (its
    definitions are loaded; a profile's ``command`` is never run). ``modules``: the user's other
    files whose functions rules may target. A rule whose callable is neither in adcli's catalog
    nor defined in the rules file, ``script`` or ``modules`` is refused before anything is
    checked (app/targets.py). One result per rule: ok / wrong / todo / error, and the report."""
    if script is not None:
        load_script_definitions(script)
    data = load(profile) if profile is not None else None
    samples = Samples(profile, data) if profile is not None else None
    module, declared = load_rules_file(path)
    for rule in declared:  # every user-function target must be found before anything is checked
        if isinstance(rule.target, tuple):
            name = rule.signature.target
            try:
                original(name)
            except AdcliError:
                hint = (" (a function of the profiled script: pass --script SCRIPT to load its functions)"
                        if rule.target[0] == "__main__" and script is None else "")
                raise RulesFileError(f"{path}: the target {name} of a rule cannot be found{hint}") from None
    for rule in declared:
        check_target(rule, original(rule.signature.target) if isinstance(rule.target, tuple) else rule.target,
                     [path, script, *modules])
    tests = {name: getattr(module, name) for name in dir(module) if name.startswith("test_")}
    by_sig = {s.signature: s for s in data.signatures} if data is not None else {}
    try:
        args_of = [_sample_args(by_sig.get(rule.signature), samples) for rule in declared]
        report = CheckReport(path, [_check_one(rule, args, tests, timing) for rule, args in zip(declared, args_of)])
        for rule, args, result in zip(declared, args_of, report.results):
            if sizes and args is not None and result.status == "ok":
                report.evidence.append(evidence(rule, _callable_for(rule), args, sizes))
        return report
    finally:
        if samples is not None:
            samples.close()


def _sample_args(stats, samples):
    """The sample arguments of a signature (only its arrays are read), or None if incomplete."""
    if stats is None or stats.sample is None or samples is None:
        return None
    args = [decode(a, samples, _MISSING) for a in stats.sample.args]
    return args if args and all(a is not _MISSING for a in args) else None


def _check_one(rule: Rule, args, tests: dict, timing: bool) -> RuleCheck:
    sig = str(rule.signature)
    try:
        if args is not None:
            report = check_rule(_callable_for(rule), *args, timing=timing)
            return RuleCheck(sig, rule.source, "ok", "profile samples", str(report))
        test = _test_for(rule, tests)
        if test is None:
            return RuleCheck(sig, rule.source, "error", "", "no sample inputs and no test_* function for it in the module")
        test()
        return RuleCheck(sig, rule.source, "ok", f"{test.__name__}()")
    except NotImplementedError as exc:
        return RuleCheck(sig, rule.source, "todo", "", str(exc))
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
