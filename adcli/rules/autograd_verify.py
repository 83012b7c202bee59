"""Verifying an imported autograd rule before it is trusted (see autograd_import).

With ``w`` random weights, the gradient of ``sum(w * f(*args))`` computed by the engine *through
the imported rule* must match central finite differences and, where adcli has a native rule
or a verified derivation, the engine's gradient with the imported rule suspended.
"""

from __future__ import annotations

import numpy as np

from ..engine.grad import value_and_grad
from ..engine.registry import without_declared
from ..errors import AdcliError, NoRuleError, RuleDisagreement, RuleError
from ..gradcheck import GradientMismatch, check_grad
from .declare import suspended

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
    """Check ``rule`` on the example inputs; its verification note, or RuleError."""
    func = entry.func
    try:
        out = func(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001
        raise RuleError(f"cannot verify {signature}: {entry.name} fails on the example inputs: {exc}") from exc
    if isinstance(out, tuple):
        raise RuleError(multi_output(entry, signature))
    if np.result_type(out).kind != "f":
        raise RuleError(f"cannot verify {signature}: its result is {np.result_type(out)}, not a float")
    w = np.random.default_rng(seed + 1).uniform(0.5, 1.5, np.shape(out))
    sym = _SYMMETRIC.get(entry.name, ())

    def weighted_sum(*a):
        a = list(a)
        for i in sym:
            a[i] = (a[i] + np.swapaxes(a[i], -1, -2)) / 2  # the symmetric subspace (quirk table)
        return np.sum(w * func(*a, **kwargs))

    weighted_sum.__name__ = f"weighted_{entry.name.rsplit('.', 1)[-1]}"
    before = rule.served
    try:
        check_grad(weighted_sum, *args, argnums=diff, seed=seed)
    except GradientMismatch as exc:
        raise RuleDisagreement(
            f"imported rule {signature} disagrees with central finite differences: {exc}; the rule was removed"
        ) from None
    except AdcliError as exc:
        raise RuleError(f"imported rule {signature} failed verification: {exc}; the rule was removed") from exc
    if rule.served == before:
        raise RuleError(
            f"imported rule {signature} was not used by the engine for a call of that signature; the rule was removed"
        )
    mine = value_and_grad(weighted_sum, diff)(*args)[1]
    done = f"finite differences on {_shapes(args)}"
    status = without_declared(entry.func)
    if status is None:
        return done
    fallback = f"{status} rule" if status == "native" else "verified derivation"
    try:
        with suspended(rule):
            theirs = value_and_grad(weighted_sum, diff)(*args)[1]
    except (NoRuleError, AdcliError):
        return done + f" (adcli's {fallback} does not serve this call)"
    low = any(np.result_type(args[i]).itemsize < 8 for i in diff)
    for i, a, b in zip(diff, mine, theirs):
        _agree(signature, i, a, b, f"adcli's {fallback}", rtol=1e-4 if low else 1e-6, atol=1e-6 if low else 1e-9)
    return done + f"; agrees with adcli's {fallback}" + (" on the symmetric subspace" if sym else "")


def _shapes(args) -> str:
    return ", ".join(
        str(np.shape(a)) if isinstance(a, (np.ndarray, float, np.generic)) else type(a).__name__ for a in args
    )


def _agree(signature, argnum: int, mine, theirs, what: str, rtol: float = 1e-6, atol: float = 1e-9) -> None:
    """Raise RuleError naming both numbers where the imported gradient and ``what`` differ."""
    a = np.asarray(mine, dtype=np.float64)
    b = np.asarray(theirs, dtype=np.float64)
    if a.shape != b.shape:
        raise RuleError(
            f"imported rule {signature}: gradient w.r.t. argument {argnum} has shape {a.shape}, {what}'s "
            f"{b.shape}; the rule was removed"
        )
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    err = np.abs(a - b) - (atol * scale + rtol * np.abs(b))
    if a.size and (np.max(err) > 0 or not np.all(np.isfinite(a))):
        k = int(np.argmax(np.where(np.isfinite(a), err, np.inf)))
        idx = np.unravel_index(k, a.shape) if a.shape else ()
        at = f"[{', '.join(map(str, idx))}]" if idx else ""
        raise RuleDisagreement(
            f"imported rule {signature} disagrees with {what}: gradient w.r.t. argument {argnum}{at} is "
            f"{float(a.flat[k])!r} (autograd) vs {float(b.flat[k])!r} ({what}); the rule was removed"
        )


