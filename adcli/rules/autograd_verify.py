"""Verifying an imported autograd rule before it is trusted (see autograd_import).

An imported rule passes the checks every rule passes (adcli.testing.check_rule, as ``adcli
check`` runs them): with random weights ``w``, the gradient of ``sum(w * f(*args))`` computed by
the engine *through the imported rule* must match central finite differences and, where adcli
has a native rule or a verified derivation, the engine's gradient with the imported rule
suspended; the rule must serve every traced call, leave its inputs alone, repeat exactly and
accumulate into a cotangent already recorded.
"""

from __future__ import annotations

import numpy as np

from ..errors import AdcliError, RuleDisagreement, RuleError
from ..testing import GradientMismatch, RuleNotServed, check_rule

# Functions whose input is symmetric by contract: verified on the symmetric subspace (see the
# quirk table in autograd_import).
_SYMMETRIC = {"numpy.linalg.cholesky": (0,)}


def multi_output(entry, signature) -> str:
    if entry.name == "numpy.linalg.svd":
        return (
            f"imported rule {signature}: svd with compute_uv=True returns three arrays, which an adcli rule cannot "
            "(and autograd's VJP refuses full_matrices=True); import it for compute_uv=False only"
        )
    return f"imported rule {signature}: {entry.name} returned a tuple; an adcli rule returns one array per call"



def verify_import(entry, rule, signature, args, kwargs, diff, seed) -> str:
    """Check ``rule`` on the example inputs with :func:`adcli.testing.check_rule` (finite
    differences, output, inputs unchanged, repeatable, accumulation, served every call, and
    agreement with the native rule or verified derivation it replaces); its verification note,
    or RuleError (RuleDisagreement when a gradient disagrees)."""
    try:
        out = entry.func(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001
        raise RuleError(f"cannot verify {signature}: {entry.name} fails on the example inputs: {exc}") from exc
    if isinstance(out, tuple):
        raise RuleError(multi_output(entry, signature))
    if np.result_type(out).kind != "f":
        raise RuleError(f"cannot verify {signature}: its result is {np.result_type(out)}, not a float")
    sym = _SYMMETRIC.get(entry.name, ())

    def symmetric(a):  # the symmetric subspace (the quirk table in autograd_import)
        for i in sym:
            a[i] = (a[i] + np.swapaxes(a[i], -1, -2)) / 2
        return a

    try:
        report = check_rule(entry.func, *args, kwargs=kwargs, seed=seed, timing=False, rule=rule, argnums=tuple(diff),
                            domain=symmetric if sym else None)
    except RuleNotServed as exc:
        raise RuleError(f"imported rule {signature} was not used by the engine for every call of that signature "
                        f"({exc}); the rule was removed") from None
    except GradientMismatch as exc:
        what = "central finite differences" if "finite differences" in exc.against else f"adcli's {exc.against[4:]}" \
            if exc.against.startswith("the ") else exc.against
        raise RuleDisagreement(f"imported rule {signature} disagrees with {what}: {exc}; the rule was removed") from None
    except AdcliError as exc:
        raise RuleError(f"imported rule {signature} failed verification: {exc}; the rule was removed") from exc
    done = f"finite differences on {_shapes(args)}"
    if report.fallback is None:
        return done
    agreed = f"agrees with {report.fallback}" in report.checks
    return done + (f"; agrees with adcli's {report.fallback}" + (" on the symmetric subspace" if sym else "") if agreed
                   else f" (adcli's {report.fallback} does not serve this call)")


def _shapes(args) -> str:
    return ", ".join(
        str(np.shape(a)) if isinstance(a, (np.ndarray, float, np.generic)) else type(a).__name__ for a in args
    )
