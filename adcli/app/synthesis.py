"""The rules ``adcli export`` synthesizes for hand-write suggestions on the user's functions
(the profiled script's, and those of the modules named with ``--module``), each verified on the
profile's sample (its arguments and keyword arguments) before it is written.

Only the files the user names are loaded: the script (``--script``), its definitions without
its main block (profiler.script.load_script), and the modules (``--module``), imported from
those files. The script the profile records is a name from the profile, read as a syntax tree
and never run, so with it alone the script's skeletons stay TODOs and the export says why. A
rule that cannot be synthesized, or fails verification, is not written: its skeleton is, with
the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..advisor import HAND_WRITE
from ..advisor.choose import LIBRARY
from ..errors import AdcliError
from ..gradcheck import GradientMismatch
from ..profiler.script import ScriptError, load_module, load_script
from ..rules.dispatch import original
from ..synth import Synthesis, synthesize, verify
from .targets import defining_file


@dataclass
class Synthesized:
    """One hand-write target's outcome: ``synthesis`` when it was synthesized and verified (the
    checks ``checks`` names passed on the profile's sample), else None and ``reason``."""

    synthesis: Synthesis | None
    reason: str = ""
    checks: tuple = ()


def synthesize_targets(chosen, samples: dict, script: str | None, *, given: bool, traced: dict | None = None,
                       modules: tuple = ()) -> dict:
    """``{Signature: Synthesized}`` for the hand-write suggestions on the user's functions: the
    script's (``__main__``) and those of the modules the user named (``modules``: imported from
    those files). ``samples``: Signature -> (arguments, keyword arguments) or None.
    ``given``: the user named ``script`` (else it is the profile's record: not run).
    ``traced``: Signature -> the positions of the arguments the run traced (the rule
    differentiates those)."""
    targets = [s for s in chosen if s.action == HAND_WRITE and s.tier != LIBRARY]
    files = {s.signature: defining_file(s.signature, script if given else None, modules) for s in targets}
    out = {}
    mains = [s for s in targets if s.signature.module == "__main__"]
    if mains and (script is None or not given):
        why = "not synthesized: export with --script SCRIPT to have it written for you (the script the profile " \
              "records is not run)"
        out.update({s.signature: Synthesized(None, why) for s in mains})
    elif mains:
        try:
            load_script(script, reload=True)
        except ScriptError as exc:
            out.update({s.signature: Synthesized(None, f"not synthesized: {exc}") for s in mains})
    for s in targets:
        sig = s.signature
        if sig in out:
            continue
        if sig.module != "__main__":
            if files[sig] is None:  # never imported unless the user named its file
                out[sig] = Synthesized(None, "not synthesized: pass --module FILE with the file that defines it")
                continue
            try:
                load_module(files[sig], sig.module)
            except ScriptError as exc:
                out[sig] = Synthesized(None, f"not synthesized: {exc}")
                continue
        out[sig] = _one(sig, samples.get(sig), (traced or {}).get(sig))
    return out


def _one(sig, sample, traced=None) -> Synthesized:
    if sample is None or sample[0] is None and sig.args or sample[1] is None:
        why = "its keyword arguments" if sample is not None and sample[1] is None else "its arguments"
        return Synthesized(None, f"not synthesized: no sample of {why} in the profile (a rule is synthesized for the "
                                 f"sample's signature and verified on it)")
    args, kwargs = tuple(sample[0] or ()), sample[1] or {}
    try:
        func = original(sig.target)
        # for the signature the rule is declared for, and the arguments the run traced
        synthesis = synthesize(func, args, kwargs, wrt=tuple(traced) if traced else None)
    except AdcliError as exc:  # SynthesisError, or the target not found
        return Synthesized(None, f"not synthesized: {exc}")
    try:
        report = verify(synthesis, args, kwargs)
    except GradientMismatch as exc:
        return Synthesized(None, f"synthesized, but it failed verification, so not written: {exc}")
    except Exception as exc:  # noqa: BLE001 - any failure of the generated code: reported, the rule not written
        return Synthesized(None, f"synthesized, but it failed verification, so not written: "
                                 f"{type(exc).__name__}: {exc}")
    return Synthesized(synthesis, "", tuple(report.checks))
