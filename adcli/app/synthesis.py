"""The rules ``adcli export`` synthesizes for hand-write suggestions on the profiled script's
functions, each verified on the profile's sample before it is written.

Only the script the user names (``--script``) is loaded, its definitions without its main block
(profiler.script.load_script): the script the profile records is a name from the profile, read
as a syntax tree and never run, so with it alone the skeletons stay TODOs and the export says
why. A rule that cannot be synthesized, or fails verification, is not written: its skeleton is,
with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..advisor import HAND_WRITE
from ..advisor.choose import LIBRARY
from ..errors import AdcliError
from ..gradcheck import GradientMismatch
from ..profiler.script import ScriptError, load_script
from ..rules.dispatch import original
from ..synth import Synthesis, synthesize, verify


@dataclass
class Synthesized:
    """One hand-write target's outcome: ``synthesis`` when it was synthesized and verified (the
    checks ``checks`` names passed on the profile's sample), else None and ``reason``."""

    synthesis: Synthesis | None
    reason: str = ""
    checks: tuple = ()


def synthesize_targets(chosen, samples: dict, script: str | None, *, given: bool, traced: dict | None = None) -> dict:
    """``{Signature: Synthesized}`` for the hand-write suggestions on ``__main__``'s functions.
    ``given``: the user named ``script`` (else it is the profile's record: not run). ``traced``:
    Signature -> the positions of the arguments the run traced (the rule differentiates those)."""
    targets = [s for s in chosen if s.action == HAND_WRITE and s.tier != LIBRARY and s.signature.module == "__main__"]
    if not targets:
        return {}
    if script is None or not given:
        why = "not synthesized: export with --script SCRIPT to have it written for you (the script the profile " \
              "records is not run)"
        return {s.signature: Synthesized(None, why) for s in targets}
    try:
        load_script(script, reload=True)
    except ScriptError as exc:
        return {s.signature: Synthesized(None, f"not synthesized: {exc}") for s in targets}
    return {s.signature: _one(s.signature, samples.get(s.signature), (traced or {}).get(s.signature)) for s in targets}


def _one(sig, sample, traced=None) -> Synthesized:
    if sample is None or sig.kwargs:
        why = "keyword arguments" if sig.kwargs else "no sample of its arguments"
        return Synthesized(None, f"not synthesized: {why} in the profile (a rule is synthesized for the sample's "
                                 f"signature and verified on it)")
    try:
        func = original(sig.target)
        # for the signature the rule is declared for, and the arguments the run traced
        synthesis = synthesize(func, tuple(sample), wrt=tuple(traced) if traced else None)
    except AdcliError as exc:  # SynthesisError, or the target not found
        return Synthesized(None, f"not synthesized: {exc}")
    try:
        report = verify(synthesis, tuple(sample))
    except GradientMismatch as exc:
        return Synthesized(None, f"synthesized, but it failed verification, so not written: {exc}")
    except Exception as exc:  # noqa: BLE001 - any failure of the generated code: reported, the rule not written
        return Synthesized(None, f"synthesized, but it failed verification, so not written: "
                                 f"{type(exc).__name__}: {exc}")
    return Synthesized(synthesis, "", tuple(report.checks))
