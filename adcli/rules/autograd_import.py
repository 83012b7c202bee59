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
import re
from typing import Any, Callable

import numpy as np

from ..engine.core import has_tracer
from ..engine.grad import value_and_grad
from ..engine.registry import REGISTRY, Entry
from ..engine.signature import describe
from ..errors import AdcliError, NoRuleError, RuleError
from .autograd_catalog import CatalogEntry, _version, find
from .declare import Rule, register, suspended
from .declare import parse_types as _parse_types

__all__ = ["import_rule", "unimport", "imported_rules", "ImportedRule"]

# Traced positional arguments of the call being served (set around Rule.__call__, read by fwd).
_TRACED: contextvars.ContextVar = contextvars.ContextVar("adcli_autograd_traced", default=None)

# Functions whose input is symmetric by contract: verified on the symmetric subspace (see table).
_SYMMETRIC = {"numpy.linalg.cholesky": (0,)}

# The signatures of the union being imported (example_args serve the one they match).
_UNION: contextvars.ContextVar = contextvars.ContextVar("adcli_autograd_union", default=None)

_FLOAT_ARRAY = re.compile(r"^f(16|32|64|128)\[")


class ImportedRule(Rule):
    """A rule whose pullback is autograd's VJP. ``served`` counts the calls it served;
    ``verification`` says how it was checked."""

    __slots__ = ("entry", "diff", "served", "verification")

    def __call__(self, *args, **kwargs):
        traced = tuple(i for i, a in enumerate(args) if has_tracer(a))
        for k, v in kwargs.items():
            if has_tracer(v):
                raise RuleError(
                    f"{self.signature_string}: keyword argument {k}= is traced; adcli rules differentiate positional "
                    f"arguments only: pass it positionally (and import the rule for that signature)"
                )
        self.served += 1
        token = _TRACED.set(traced)
        try:
            return Rule.__call__(self, *args, **kwargs)
        finally:
            _TRACED.reset(token)


# --- the adapter ---------------------------------------------------------------------------


def _make_fwd(entry: CatalogEntry, diff: tuple, signature: str) -> Callable:
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


def _multi_output(entry, signature) -> str:
    if entry.name == "numpy.linalg.svd":
        return (
            f"imported rule {signature}: svd with compute_uv=True returns three arrays, which an adcli rule cannot "
            "(and autograd's VJP refuses full_matrices=True); import it for compute_uv=False only"
        )
    return f"imported rule {signature}: {entry.name} returned a tuple; an adcli rule returns one array per call"


# --- import / remove ---------------------------------------------------------------------------


def _is_float(desc: str) -> bool:
    return bool(_FLOAT_ARRAY.match(desc)) or desc in ("float", "f16", "f32", "f64", "f128")


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
    if entry.name == "numpy.linalg.svd" and "compute_uv" not in keywords:
        raise RuleError(_multi_output(entry, f"{entry.name}({', '.join(p[0] for p in positional)})"))
    kw_key = tuple(f"{k}={d}" for k, d in sorted(keywords.items()))
    sigs = [tuple(s) for s in itertools.product(*positional)]
    if len(sigs) > 64:
        raise RuleError(f"these types expand to {len(sigs)} signatures; import rules for concrete types")
    installed: list[tuple[ImportedRule, Any]] = []
    token = _UNION.set(frozenset(sigs))
    try:
        for sig in sigs:
            diff = _differentiable(entry, sig)
            full = sig + kw_key
            signature = f"{entry.name}({', '.join(full)})"
            if not diff:
                raise RuleError(
                    f"nothing to import for {signature}: autograd differentiates argument(s) "
                    f"{_argnum_text(entry)} of {entry.name}, and none of those is a float type here"
                )
            rule, old = _install(entry, sig, kw_key, _make_fwd(entry, diff, signature), diff, replace)
            installed.append((rule, old))
            if verify:
                args, kwargs = _examples(entry, sig, keywords, example_args, example_kwargs, seed)
                rule.verification = _verify(entry, rule, signature, args, kwargs, diff, seed)
            else:
                rule.verification = "not verified (verify=False)"
    except BaseException:
        for rule, old in reversed(installed):
            _uninstall(rule, old)
        raise
    finally:
        _UNION.reset(token)
    return [r for r, _ in installed]


def _argnum_text(entry) -> str:
    return "any" if entry.argnums is None else ", ".join(map(str, entry.argnums)) or "none"


def _differentiable(entry: CatalogEntry, sig: tuple) -> tuple:
    ok = range(len(sig)) if entry.argnums is None else entry.argnums
    return tuple(i for i in ok if i < len(sig) and _is_float(sig[i]))


def _install(entry: CatalogEntry, sig: tuple, kw_key: tuple, fwd, diff, replace: bool):
    func = entry.func
    e = REGISTRY.get(func)
    if e is None:  # name it as the catalog does (SciPy's ufuncs are not numpy.*)
        e = REGISTRY[func] = Entry(func, entry.name)
    full = sig + kw_key
    old = e.by_signature.get(full)
    origin = f"autograd {_version()}: {entry.name}"
    [base] = register(func, sig + kw_key, fwd, replace=replace, source="imported", origin=origin)
    rule = ImportedRule(base.target, entry.name, full, fwd, "imported", False, origin)
    rule.entry, rule.diff, rule.served, rule.verification = entry, diff, 0, ""
    e.by_signature[full] = rule
    return rule, old


def _uninstall(rule: Rule, old=None) -> bool:
    from ..engine.dispatch import FAST_UFUNCS
    from ..engine.rules_elementwise import UFUNC_PRIMITIVES

    e = REGISTRY.get(rule.target)
    if e is None or e.by_signature.get(rule.signature) is not rule:
        return False
    if old is not None:
        e.by_signature[rule.signature] = old
    else:
        del e.by_signature[rule.signature]
    if not e.by_signature and rule.target in UFUNC_PRIMITIVES:
        FAST_UFUNCS[rule.target] = UFUNC_PRIMITIVES[rule.target]
    if not e.by_signature and e.native is None and e.derivation is None:
        del REGISTRY[rule.target]  # the entry only held rules: leave the registry as it was
    return True


def unimport(*rules: Rule) -> int:
    """Remove the given imported rules (all imported rules if none are given); returns how many."""
    rules = rules or tuple(imported_rules())
    return sum(_uninstall(r) for r in rules)


def imported_rules() -> list[ImportedRule]:
    """The imported rules currently registered."""
    return [r for e in list(REGISTRY.values()) for r in list(e.by_signature.values()) if isinstance(r, ImportedRule)]


# --- verification --------------------------------------------------------------------------------


def _verify(entry, rule, signature, args, kwargs, diff, seed) -> str:
    from ..testing import GradientMismatch, check_grad

    func = entry.func
    try:
        out = func(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001
        raise RuleError(f"cannot verify {signature}: {entry.name} fails on the example inputs: {exc}") from exc
    if isinstance(out, tuple):
        raise RuleError(_multi_output(entry, signature))
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
        raise RuleError(
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
    status = entry.status
    if status == "neither":
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


def _agree(signature: str, argnum: int, mine, theirs, what: str, rtol: float = 1e-6, atol: float = 1e-9) -> None:
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
        raise RuleError(
            f"imported rule {signature} disagrees with {what}: gradient w.r.t. argument {argnum}{at} is "
            f"{float(a.flat[k])!r} (autograd) vs {float(b.flat[k])!r} ({what}); the rule was removed"
        )


# --- example inputs --------------------------------------------------------------------------------

_N = 4  # size of every generated array axis (square matrices fit every contraction)


def _domain(rng, shape, kind):
    """An array of ``shape`` inside a function's domain."""
    size = int(np.prod(shape)) if shape else 1
    if kind == "pos":
        return rng.uniform(0.5, 2.0, shape)
    if kind == "unit":
        return rng.uniform(-0.8, 0.8, shape)
    if kind == "gt1":
        return rng.uniform(1.2, 3.0, shape)
    if kind == "prob":
        return rng.uniform(0.1, 0.9, shape)
    if kind == "erfc":
        return rng.uniform(0.2, 1.8, shape)
    if kind == "away0":
        return rng.choice([-1.0, 1.0], shape) * rng.uniform(0.5, 2.0, shape)
    if kind == "distinct":  # well separated values: sorts and maxima keep their order under FD steps
        return (rng.permutation(size) + rng.uniform(0.2, 0.8, size)).reshape(shape) * 0.5
    if kind == "spd" and len(shape) == 2:
        b = rng.standard_normal(shape)
        return b @ b.T / shape[0] + np.eye(shape[0])
    if len(shape) == 2 and shape[0] == shape[1]:  # a well-conditioned random matrix
        return rng.standard_normal(shape) / np.sqrt(shape[0]) + 2.0 * np.eye(shape[0])
    return rng.standard_normal(shape)


def _value(rng, desc: str, kind=None, n: int = _N):
    """A value of descriptor ``desc``."""
    m = re.match(r"^(?P<code>[a-z]+\d*)\[(?P<nd>\d+)d(?:,(?P<layout>F|strided))?\]$", desc)
    if m:
        code, nd, layout = m.group("code"), int(m.group("nd")), m.group("layout")
        shape = (n,) * nd
        if layout == "strided":
            base = _value(rng, f"{code}[{nd}d]", kind, 2 * n)
            return base[(slice(None, None, 2),) * nd]
        if code == "b":
            a = rng.random(shape) > 0.5
        elif code[0] in "iu":
            a = rng.integers(0, 3, shape).astype(np.dtype(code[0] + str(int(code[1:]) // 8)))
        elif code[0] == "f":
            dtype = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "f128": np.longdouble}[code]
            a = _domain(rng, shape, kind).astype(dtype)
        else:
            raise RuleError(f"no example values for {desc!r}: pass example_args=")
        return np.asfortranarray(a) if layout == "F" else np.ascontiguousarray(a) if nd > 1 else a
    if desc == "float":
        return float(_domain(rng, (), kind))
    if desc in ("f16", "f32", "f64"):
        return np.dtype("float" + desc[1:]).type(_domain(rng, (), kind))
    if desc == "int":
        return 1
    if desc == "bool":
        return True
    if desc == "None":
        return None
    raise RuleError(f"no example value for descriptor {desc!r}: pass example_args= (and example_kwargs=)")


# Per-function domains: one kind for every argument, or a tuple with one kind per position.
_DOMAINS: dict = {
    **dict.fromkeys(["numpy.log", "numpy.log2", "numpy.log10", "numpy.log1p", "numpy.sqrt", "numpy.reciprocal",
                     "scipy.special.gamma", "scipy.special.gammaln", "scipy.special.psi", "scipy.special.rgamma",
                     "scipy.special.y0", "scipy.special.y1", "scipy.special.beta", "scipy.special.betaln",
                     "scipy.special.gammainc", "scipy.special.gammaincc", "scipy.special.yn", "scipy.special.iv",
                     "scipy.special.ive", "scipy.special.jn"], "pos"),
    **dict.fromkeys(["numpy.arcsin", "numpy.arccos", "numpy.arctanh", "numpy.tan", "scipy.special.erfinv"], "unit"),
    **dict.fromkeys(["numpy.absolute", "numpy.fabs", "numpy.prod", "numpy.sinc", "numpy.angle"], "away0"),
    **dict.fromkeys(["numpy.sort", "numpy.partition", "numpy.max", "numpy.min", "numpy.amax", "numpy.amin"],
                    "distinct"),
    "numpy.arccosh": "gt1",
    "scipy.special.logit": "prob",
    "scipy.special.erfcinv": "erfc",
    "numpy.linalg.cholesky": "spd",
    "numpy.power": ("pos", None),
    "numpy.divide": (None, "away0"),
}


def _pairs_apart(rng, types, kw):
    """maximum/minimum/fmax/fmin: two arguments that are never close to a tie."""
    x = _value(rng, types[0])
    y = x + rng.choice([-1.0, 1.0], np.shape(x)) * rng.uniform(0.3, 1.0, np.shape(x))
    return [x, _like(y, types[1])], {}


def _remainder(rng, types, kw):
    y = _value(rng, types[1], "pos") + 1.0
    x = (rng.integers(-2, 3, np.shape(y)) + rng.uniform(0.2, 0.8, np.shape(y))) * y  # x / y away from integers
    return [_like(x, types[0]), y], {}


def _like(v, desc):
    if desc == "float":
        return float(v)
    if desc in ("f16", "f32", "f64"):
        return np.dtype("float" + desc[1:]).type(v)
    return np.asarray(v)


def _fixed(*values, kwargs=None):
    """Examples: the first argument generated from its descriptor, then fixed values."""
    def make(rng, types, kw, kind=None, shape_n=_N):
        return [_value(rng, types[0], kind, shape_n), *values][: len(types)], dict(kwargs or {})
    return make


def _with_shape(shape, *values, kind=None):
    """Examples: every float array argument of ``shape``, then fixed values."""
    def make(rng, types, kw):
        arrays = [_domain(rng, shape, kind) for t in types if _FLOAT_ARRAY.match(t)]
        return [*arrays, *values][: len(types)], {}
    return make


def _betainc(rng, types, kw):
    return [_value(rng, types[0], "pos"), _value(rng, types[1], "pos"), _value(rng, types[2], "prob")], {}


def _clip(rng, types, kw):
    x = rng.choice([-1.0, 0.0, 1.0], (_N,) * _ndim(types[0])) + rng.uniform(-0.3, 0.3, (_N,) * _ndim(types[0]))
    return [x, -0.5, 0.5][: len(types)], {}


def _where(rng, types, kw):
    return [_value(rng, types[0]), _value(rng, types[1]), _value(rng, types[2])], {}


def _einsum(rng, types, kw):
    subs = {2: "ij,jk->ik", 3: "ij,jk,kl->il"}.get(len(types) - 1, ",".join("ij" for _ in types[1:]) + "->ij")
    return [subs, *(_value(rng, t) for t in types[1:])], {}


def _ndim(desc: str) -> int:
    m = re.match(r"^[a-z]+\d*\[(\d+)d", desc)
    return int(m.group(1)) if m else 0


_EXAMPLES: dict = {
    "numpy.maximum": _pairs_apart,
    "numpy.minimum": _pairs_apart,
    "numpy.fmax": _pairs_apart,
    "numpy.fmin": _pairs_apart,
    "numpy.remainder": _remainder,
    "numpy.clip": _clip,
    "numpy.where": _where,
    "numpy.einsum": _einsum,
    "scipy.special.betainc": _betainc,
    "numpy.reshape": _fixed((2, 8)),
    "numpy.expand_dims": _fixed(1),
    "numpy.repeat": _fixed(2),
    "numpy.tile": _fixed(2),
    "numpy.roll": _fixed(1),
    "numpy.swapaxes": _fixed(0, 1),
    "numpy.moveaxis": _fixed(0, 1),
    "numpy.rollaxis": _fixed(1),
    "numpy.partition": lambda rng, types, kw: ([_value(rng, types[0], "distinct"), 2], {}),
    "numpy.diagonal": _fixed(0, -1, -2),
    "numpy.pad": _fixed(1, "constant"),
    "numpy.squeeze": _with_shape((_N, 1)),
    "numpy.broadcast_to": _with_shape((1, _N), (_N, _N)),
    "numpy.cross": _with_shape((3,)),
    "numpy.gradient": _with_shape((7,)),
    "numpy.linspace": lambda rng, types, kw: ([0.3, 1.7, 5][: len(types)], {}),
}


def _examples(entry, sig, keywords, example_args, example_kwargs, seed):
    rng = np.random.default_rng(seed)
    given = tuple(describe(a) for a in example_args) if example_args is not None else None
    if given is not None and given != sig and given not in (_UNION.get() or ()):
        raise RuleError(f"example_args have types ({', '.join(given)}), the rule is for ({', '.join(sig)})")
    if given == sig:
        args = list(example_args)
        kwargs = dict(example_kwargs or {})
    else:  # generated (for the other members of a union of types, too)
        if entry.name in _EXAMPLES:
            args, kwargs = _EXAMPLES[entry.name](rng, sig, keywords)
            args = list(args)
        else:
            dom = _DOMAINS.get(entry.name)
            kinds = dom if isinstance(dom, tuple) else (dom,) * len(sig)
            args = [_value(rng, d, k) for d, k in zip(sig, kinds)]
            kwargs = {}
        kwargs.update(example_kwargs or {})
        got = tuple(describe(a) for a in args)
        if got != sig:
            raise RuleError(
                f"cannot verify {entry.name}({', '.join(sig)}): no example inputs of these types; pass example_args="
            )
    for k, desc in keywords.items():
        if k not in kwargs:
            kwargs[k] = _KW_DEFAULTS.get((entry.name, k), _KW_DEFAULTS.get(k, None))
            if kwargs[k] is None:
                kwargs[k] = _value(rng, desc)
        if describe(kwargs[k]) != desc:
            raise RuleError(
                f"example keyword {k}={kwargs[k]!r} is {describe(kwargs[k])}, the rule says {desc}: "
                "pass example_kwargs="
            )
    return args, kwargs


# Example values of keyword arguments (by function and name, or by name).
_KW_DEFAULTS: dict = {
    "axis": 1,
    "keepdims": True,
    "ddof": 1,
    ("numpy.linalg.svd", "compute_uv"): False,
    ("numpy.linalg.svd", "full_matrices"): False,
    "mode": "constant",
    "k": 1,
    "offset": 1,
}
