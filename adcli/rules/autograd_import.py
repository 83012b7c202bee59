"""Importing autograd's rules: one catalog entry -> one adcli rule for exact concrete types.

``import_rule(np.kron, "f64[2d]", "f64[2d]")`` registers (``source="imported"``) a rule whose
forward calls the raw NumPy callable on plain values and whose pullback calls autograd's VJP
(``vjpmaker(argnums, ans, args, kwargs)(g)``, see autograd_catalog) for the arguments that are
traced in that call, then hands back new arrays. Nothing is cached or fused: the cost of going
through autograd (building its VJP closure at every reverse pass, its Python-level bodies, its
``autograd.numpy`` wrappers, the copy of each cotangent) is real and shows in a profile next to
a native rule's.

Before a rule is trusted (``verify=True``, the default) it is checked on inputs of the declared
types (generated from the descriptors with the per-function domains of ``_DOMAINS`` /
``_EXAMPLES``, or the caller's ``example_args=`` / ``example_kwargs=``): with ``w`` random
weights, the gradient of ``sum(w * f(*args))`` computed by the engine *through the imported
rule* must match central finite differences (``adcli.testing.check_grad``) and, where adcli has
a native rule or a verified derivation, the engine's gradient with the imported rule suspended.
A disagreement raises RuleError naming both numbers, and the rule is removed again (a rule it
replaced is restored).

Keyword arguments: a rule serves the calls whose signature key matches exactly, and the key of a
call lists its keyword arguments' descriptors, sorted by name (engine.signature.signature_key).
Declare them as ``"name=descriptor"`` strings among the types, in any order:
``import_rule(np.sum, "f64[2d]", "axis=int")`` serves ``np.sum(x, axis=1)`` (every int value:
the values are passed on to NumPy and to autograd's VJP) but not ``np.sum(x, 1)``, which needs
``import_rule(np.sum, "f64[2d]", "int")``, nor ``np.sum(x)``. Ufuncs take no keyword types:
the engine looks their rules up by positional signature only.

Known autograd quirks (autograd 1.9.1), and what adcli does about each:

=============================  ================================================================
function(s)                    quirk -> handling
=============================  ================================================================
linalg.cholesky                autograd returns the *symmetrised* gradient (S + S.T) / 2;
                               adcli's native rule returns the gradient w.r.t. the lower
                               triangle NumPy reads. Both agree on every symmetric perturbation
                               but differ as arrays -> verification runs both on the symmetric
                               subspace: the checked function is f((A + A.T) / 2) with A SPD,
                               so finite differences and both gradients are compared through
                               sym(G). Imported, cholesky keeps autograd's convention.
linalg.svd                     autograd raises NotImplementedError for full_matrices=True (the
                               default), and with compute_uv=True svd returns three arrays,
                               which an adcli rule cannot (one traced result per call) ->
                               only ``"compute_uv=bool"`` signatures are importable, and a call
                               with compute_uv=True raises RuleError.
linalg.eigh, eig, slogdet,     several outputs -> refused (adcli's native rules cover eigh,
split/array_split/[vhd]split   slogdet and svd).
fft.fft, rfft, irfft, ...      complex values -> refused (the engine does not differentiate
                               complex values); fftshift / ifftshift are real and importable.
where, jn/yn/iv/ive, polygamma autograd registers ``None`` (a VJP returning zeros) for the
                               condition / the order n or v. Zero is wrong for a float order
                               -> these arguments count as not differentiable: tracing one
                               raises RuleError instead of returning a silent zero.
gammainc, gammaincc, betainc,  VJP for some arguments only (x, not a or b; the array, not the
clip, full, solve_banded ...   bounds) -> a traced argument without a VJP raises RuleError
                               naming the arguments autograd can differentiate.
diagonal                       autograd's VJP calls make_diagonal, which only supports
                               offset=0, axis1=-1, axis2=-2 -> verification refuses the other
                               calls; ``diagonal(x, 0, -1, -2)`` ("int", "int", "int") imports.
pad                            autograd's VJP takes ``mode`` as a required argument although
                               np.pad defaults it -> only signatures passing mode ("str" or
                               "mode=str") verify; others are refused with autograd's TypeError.
sinc                           autograd's VJP divides by x**2: nan at x == 0 (adcli's derived
                               rule is finite) -> verified away from 0; do not import it for
                               inputs that hit 0.
sum/mean/... of a 0-d array,   autograd returns a Python/NumPy scalar (or float64 for float32
where, linalg.norm             input) -> cast to the argument's dtype and 0-d shape. Only that:
                               a cotangent of another shape is never broadcast, the engine
                               raises.
full, scipy.special.logsumexp  not NumPy array functions or ufuncs: NumPy converts traced
scipy.linalg.*, scipy.stats.*  arguments with np.asarray, never asking adcli -> refused
odeint, polygamma, ...         (catalog entry ``dispatchable=False``).
concatenate, stack, hstack,    not autograd primitives (autograd routes them through its own
array, ``x[i]``                concatenate_args / ArrayBox.__getitem__) -> not in the catalog.
traced keyword argument        adcli's rule protocol traces positional arguments only -> a
                               traced keyword argument raises RuleError (a silent zero
                               gradient otherwise).
=============================  ================================================================
"""

from __future__ import annotations

import contextvars
import itertools
from typing import Any, Callable

import numpy as np

from ..engine.core import has_tracer
from ..engine.descriptors import is_float
from ..engine.registry import declared_rules, remove_rule
from ..engine.signature import Signature
from ..errors import AdcliError, RuleError
from .autograd_catalog import CatalogEntry, _version, find
from .autograd_examples import examples
from .autograd_verify import multi_output as _multi_output
from .autograd_verify import verify_import
from .declare import Rule, install
from .declare import parse_types as _parse_types

__all__ = ["import_rule", "unimport", "imported_rules", "ImportedRule"]

# Traced positional arguments of the call being served (set around Rule.__call__, read by fwd).
_TRACED: contextvars.ContextVar = contextvars.ContextVar("adcli_autograd_traced", default=None)



class ImportedRule(Rule):
    """A rule whose pullback is autograd's VJP. ``served`` counts the calls it served;
    ``verification`` says how it was checked."""

    __slots__ = ("entry", "diff", "served", "verification")

    def __call__(self, *args, **kwargs):
        traced = tuple(i for i, a in enumerate(args) if has_tracer(a))
        for k, v in kwargs.items():
            if has_tracer(v):
                raise RuleError(
                    f"{self.signature}: keyword argument {k}= is traced; adcli rules differentiate positional "
                    f"arguments only: pass it positionally (and import the rule for that signature)"
                )
        self.served += 1
        token = _TRACED.set(traced)
        try:
            return Rule.__call__(self, *args, **kwargs)
        finally:
            _TRACED.reset(token)


# --- the adapter ---------------------------------------------------------------------------


def _make_fwd(entry: CatalogEntry, diff: tuple, signature: Signature) -> Callable:
    func = entry.func

    def fwd(*args, **kwargs):
        traced = _TRACED.get()
        wrt = diff if traced is None else traced
        bad = [i for i in wrt if i not in diff]
        if bad:
            raise RuleError(_not_differentiable(entry, signature, bad, diff))
        ans = func(*args, **kwargs)
        if isinstance(ans, tuple):
            raise RuleError(_multi_output(entry, signature))

        def pullback(g):
            cots = [None] * len(args)
            if wrt:
                try:
                    # entry.vjpmaker is read here, at every reverse pass, exactly as autograd does
                    # when it records a node: the cost of the import stays visible.
                    out = tuple(entry.vjpmaker(tuple(wrt), ans, args, kwargs)(g))
                except AdcliError:
                    raise
                except Exception as exc:  # autograd's own refusals (NotImplementedError, asserts, ...)
                    raise RuleError(f"autograd's VJP for {signature} failed: {type(exc).__name__}: {exc}") from exc
                for i, c in zip(wrt, out):
                    cots[i] = _as_cotangent(c, args[i])
            return tuple(cots)

        return ans, pullback

    return fwd


def _as_cotangent(c, primal):
    """A new array (or scalar) for argument ``primal``: dtype and 0-d casts only, never a
    broadcast or reshape (a cotangent of the wrong shape goes on to the engine, which raises)."""
    if isinstance(primal, np.ndarray):
        a = np.asarray(c)
        if a.shape != primal.shape or a.dtype.kind not in "fiub":
            return c
        return np.array(a, dtype=primal.dtype, copy=True)
    if np.shape(c) != () or np.asarray(c).dtype.kind not in "fiub":
        return c
    if isinstance(primal, np.generic):
        return primal.dtype.type(c)
    if type(primal) is float:
        return float(c)
    return c


def _not_differentiable(entry, signature, bad, diff) -> str:
    zero = [i for i in bad if i in entry.zero_argnums]
    why = (
        f"autograd defines its gradient w.r.t. argument(s) {', '.join(map(str, zero))} as zero, "
        "which adcli does not trust"
        if zero else f"autograd has no VJP for argument(s) {', '.join(map(str, bad))}"
    )
    ok = ", ".join(map(str, diff)) or "none"
    return f"imported rule {signature}: {why}; it differentiates argument(s) {ok} only (trace only those)"


# --- import / remove ---------------------------------------------------------------------------


def import_rule(target, *types, verify: bool = True, replace: bool = False,
                example_args: tuple | None = None, example_kwargs: dict | None = None,
                seed: int = 0) -> list[ImportedRule]:
    """Import autograd's rule for ``target`` as an adcli rule for the given concrete types.

    ``types``: one descriptor per positional argument (or a tuple of them, a finite union),
    then ``"name=descriptor"`` for keyword arguments. Returns the registered rules, one per
    signature. Raises RuleError if autograd has no rule for ``target`` (with close matches), if
    a descriptor is unknown, if the function cannot be imported (see the quirk table) or if
    verification fails.

    >>> import numpy as np
    >>> rules = import_rule(np.kron, "f64[2d]", "f64[2d]")
    >>> rules[0]
    <imported rule numpy.kron(f64[2d], f64[2d])>
    >>> unimport(*rules)
    1
    """
    entry = find(target)
    if entry.refusal:
        raise RuleError(f"cannot import autograd's rule for {entry.name}: {entry.refusal}")
    positional, keywords = _parse_types(types)
    if keywords and isinstance(entry.func, np.ufunc):
        raise RuleError(
            f"{entry.name} is a ufunc: its rules are looked up by positional signature only, without keyword types"
        )
    module, qualname = entry.name.rsplit(".", 1)
    if entry.name == "numpy.linalg.svd" and "compute_uv" not in keywords:
        raise RuleError(_multi_output(entry, Signature(module, qualname, tuple(p[0] for p in positional))))
    kw = tuple(sorted(keywords.items()))
    sigs = [tuple(s) for s in itertools.product(*positional)]
    if len(sigs) > 64:
        raise RuleError(f"these types expand to {len(sigs)} signatures; import rules for concrete types")
    installed: list[tuple[ImportedRule, Any]] = []
    try:
        for sig in sigs:
            diff = _differentiable(entry, sig)
            signature = Signature(module, qualname, sig, kw)
            if not diff:
                raise RuleError(
                    f"nothing to import for {signature}: autograd differentiates argument(s) "
                    f"{_argnum_text(entry)} of {entry.name}, and none of those is a float type here"
                )
            rule, old = _install(entry, signature, _make_fwd(entry, diff, signature), diff, replace)
            installed.append((rule, old))
            if verify:
                args, kwargs = examples(entry, sig, keywords, example_args, example_kwargs, seed, frozenset(sigs))
                rule.verification = verify_import(entry, rule, signature, args, kwargs, diff, seed)
            else:
                rule.verification = "not verified (verify=False)"
    except BaseException:
        for rule, old in reversed(installed):
            _uninstall(rule, old)
        raise
    return [r for r, _ in installed]


def _argnum_text(entry) -> str:
    return "any" if entry.argnums is None else ", ".join(map(str, entry.argnums)) or "none"


def _differentiable(entry: CatalogEntry, sig: tuple) -> tuple:
    ok = range(len(sig)) if entry.argnums is None else entry.argnums
    return tuple(i for i in ok if i < len(sig) and is_float(sig[i]))


def _install(entry: CatalogEntry, signature: Signature, fwd, diff, replace: bool):
    origin = f"autograd {_version()}: {entry.name}"
    rule = ImportedRule(entry.func, signature, fwd, "imported", False, origin)
    rule.entry, rule.diff, rule.served, rule.verification = entry, diff, 0, ""
    [old] = install([rule], replace=replace, name=entry.name)
    return rule, old


def _uninstall(rule: Rule, old=None) -> bool:
    return remove_rule(rule, old)


def unimport(*rules: Rule) -> int:
    """Remove the given imported rules (all imported rules if none are given); returns how many."""
    rules = rules or tuple(imported_rules())
    return sum(_uninstall(r) for r in rules)


def imported_rules() -> list[ImportedRule]:
    """The imported rules currently registered."""
    return [r for r in declared_rules() if isinstance(r, ImportedRule)]


