"""``adcli export``: the suggested rules as one Python module (app/stubs.py writes the text)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..advisor import HAND_WRITE, IMPORT
from ..advisor.choose import LIBRARY
from ..data.samples import decode
from ..data.store import Samples, load, sidecar
from ..fileio import OutputError, refuse_inputs
from ..version import __version__
from .advice import advise
from .output import check_output, write_output
from .stubs import rules_module
from .synthesis import synthesize_targets
from .targets import export_target, parameters, recorded_script

KINDS = (IMPORT, HAND_WRITE)


@dataclass
class Export:
    """What ``export`` wrote (``path`` None: nothing was suggested, nothing written)."""

    path: str | None
    imports: int
    handwritten: int
    left_out: int = 0  # suggested, but naming a callable the module may not name (app/targets.py)
    recorded_script: str | None = None  # the script the profile records, used for want of --script
    missing_script: str | None = None  # the script the profile records, not found (profile text)
    synthesized: int = 0  # hand-written rules synthesized and verified (the others are skeletons)
    not_synthesized: tuple = ()  # (signature text, why) for each hand-write skeleton synthesis did not fill


def samples_of(path: str, data, wanted: set) -> dict:
    """``{Signature: (its sample's decoded arguments or None, its keyword arguments)}`` for the
    signatures in ``wanted`` that the profile ``data`` (read from ``path``) has a sample of (the
    keyword arguments None where the sample lacks one of the signature's); only their arrays are
    read, each once."""
    with Samples(path, data) as arrays:
        out = {}
        for s in data.signatures:
            if s.sample is None or s.signature not in wanted:
                continue
            args = [decode(a, arrays) for a in s.sample.args] or None
            names = {k for k, _ in s.signature.kwargs}
            kwargs = {k: decode(v, arrays) for k, v in s.sample.kwargs.items() if k in names}
            out[s.signature] = (args, kwargs if set(kwargs) == names else None)
        return out


def export(profile: str, output: str, *, top: int | None = None, only: str | None = None, force: bool = False,
           options: dict | None = None, tier: str | None = None, script: str | None = None,
           modules: tuple = (), synthesize: bool = True) -> Export:
    """Write the rules ``adcli suggest`` (with the same ``options``) advises for ``profile``.
    ``script``: the profiled script, as the user names it: the tests of rules on its functions
    load it. Without it, the script the profile records when that ``.py`` file is found, read
    like ``script`` (its syntax tree: nothing is run here) and named in the result; the tests
    of rules on a recorded script not found fail saying so (app/targets.py). ``modules``: the user's
    other files; a rule for a user function is written only for one they (or ``script``, for
    ``__main__``) define, and one for a library function only for the engine's catalog's
    callables (app/targets.py). ``synthesize``: write the hand-write suggestions on the script's
    functions as synthesized rules, each verified on the profile's sample first (app/synthesis.py;
    with ``script`` only: the recorded script is never run); the others stay skeletons."""
    given = script is not None
    check_output(output, [profile, sidecar(profile), script, *modules], force)
    for path, what in [(script, "--script names the profiled script")] + [(m, "--module names a module of yours")
                                                                             for m in modules]:
        if path is not None and not os.path.isfile(path):
            raise OutputError(f"no file at {path} ({what})")
    advice = advise([profile], options, tier=tier)
    # a lighter alternative stands in for the rule suggested for its caller: one or the other, and
    # the caller's is the one exported (with both, the caller's rule would run the other's function
    # plainly in its forward pass, where no rule serves)
    chosen = [s for s in advice.actionable if (only is None or s.action == only) and s.alternative_to is None]
    chosen = chosen[:top] if top is not None else chosen
    if not chosen:
        return Export(None, 0, 0)
    data = load(profile)
    full = samples_of(profile, data, {s.signature for s in chosen})
    samples = {sig: args for sig, (args, _) in full.items()}
    recorded = missing = None
    if script is None and any(s.tier != LIBRARY and s.signature.module == "__main__" for s in chosen):
        recorded, missing = recorded_script(profile, data.command)  # read (its syntax tree), never run
        refuse_inputs(output, [recorded])
        script = recorded
    targets = {s.signature: export_target(s.signature, s.tier == LIBRARY, script, tuple(modules)) for s in chosen}
    names = {s.signature: parameters(s.signature, s.tier == LIBRARY, script, tuple(modules)) for s in chosen
             if s.action == HAND_WRITE and targets[s.signature][0] is not None}
    rel = os.path.relpath(os.path.abspath(script), os.path.dirname(os.path.abspath(output))) if script else None
    named_hand = [s for s in chosen if s.action == HAND_WRITE and targets[s.signature][0] is not None]
    traced = {s.signature: s.traced for s in data.signatures}
    if synthesize:
        synthesized = synthesize_targets(named_hand, full, script, given=given, traced=traced, modules=tuple(modules))
    else:
        synthesized = {}
    text = rules_module(chosen, samples, targets, source=profile, version=__version__, script=rel, names=names,
                        missing=missing, synthesized=synthesized)
    write_output(output, text, force=force)
    named = [s for s in chosen if targets[s.signature][0] is not None]
    done = sum(v.synthesis is not None for v in synthesized.values())
    why = tuple((str(sig), v.reason) for sig, v in synthesized.items() if v.synthesis is None)
    return Export(output, sum(s.action == IMPORT for s in named), sum(s.action == HAND_WRITE for s in named),
                  len(chosen) - len(named), recorded, missing, done, why)

