"""The catalog of autograd's rules: what ``adcli.rules.autograd_import`` can import.

autograd (1.9.1) keeps its reverse-mode rules in one dict, ``autograd.core.primitive_vjps``,
filled as a side effect of importing ``autograd.numpy`` (which also imports ``.linalg`` and
``.fft``) and ``autograd.scipy.*``. Its keys are autograd *primitives*: wrappers made by
``autograd.tracer.primitive(f_raw)``, whose raw callable is ``primitive.fun`` (and
``autograd.tracer.trace_primitives_map[f_raw] is primitive``). Its values are *VJP makers*
with one calling convention whichever helper defined them (``defvjp``, ``defvjp_argnum``,
``defvjp_argnums``)::

    vjp = primitive_vjps[prim](argnums, ans, args, kwargs)  # argnums: tuple of positions
    cotangents = tuple(vjp(g))                                # one per argnum, in that order

on plain values (autograd's VJP bodies call ``autograd.numpy`` wrappers, which are plain NumPy
for plain arguments). Which positions have a VJP is not a field: ``defvjp`` keeps it in the
closure variable ``vjps_dict`` (argnum -> maker), where a ``None`` maker became a VJP that
returns zeros; ``defvjp_argnum`` (einsum, concatenate) accepts any position; ``defvjp_argnums``
(solve_sylvester, odeint) decides per call. :class:`CatalogEntry` records all three cases.

What is left out: autograd's own plumbing, i.e. primitives whose raw callable is defined in
autograd itself (``VSpace.add``, ``container_take``, ``concatenate_args``, ``dot_adjoint_0``,
``ArrayBox.__getitem__``, ``untake``, ``make_diagonal``, ``array_from_args``,
``truncate_pad``, autograd's own ``scipy.signal.convolve``): no NumPy or SciPy call a user
writes ever reaches them.

>>> from adcli.rules.autograd_catalog import find
>>> find("numpy.kron").argnums
(0, 1)
"""

from __future__ import annotations

import difflib
import functools
import importlib
import inspect
from dataclasses import dataclass, field
from importlib import metadata
from typing import Callable

import numpy as np

from ..engine import library
from ..engine.registry import qualified_name, without_declared
from ..errors import RuleError

# Modules whose import fills autograd's registry, with the public namespace each mirrors.
# autograd.scipy.* needs SciPy; a missing module is skipped.
_NAMESPACES = (
    ("autograd.numpy", "numpy"),
    ("autograd.numpy.linalg", "numpy.linalg"),
    ("autograd.numpy.fft", "numpy.fft"),
    ("autograd.scipy.special", "scipy.special"),
    ("autograd.scipy.linalg", "scipy.linalg"),
    ("autograd.scipy.integrate", "scipy.integrate"),
    ("autograd.scipy.signal", "scipy.signal"),
    ("autograd.scipy.stats", "scipy.stats"),
)
_STATS = ("beta", "chi2", "gamma", "norm", "poisson", "t", "multivariate_normal", "dirichlet")

# Functions whose result is a tuple of arrays. adcli's rule protocol records one traced value
# per rule call, so these cannot be imported (adcli has native rules for eigh, slogdet, svd).
MULTI_OUTPUT = frozenset({
    "numpy.linalg.eigh", "numpy.linalg.eig", "numpy.linalg.slogdet",
    "numpy.split", "numpy.array_split", "numpy.vsplit", "numpy.hsplit", "numpy.dsplit",
})
# numpy.linalg.svd is single-output only with compute_uv=False (see autograd_import's quirk table).

# Functions whose output or input is complex for real input: the engine does not differentiate
# complex values (docs/engine.md), so these are refused too.
COMPLEX = frozenset({
    "numpy.fft.fft", "numpy.fft.ifft", "numpy.fft.fft2", "numpy.fft.ifft2", "numpy.fft.fftn",
    "numpy.fft.ifftn", "numpy.fft.rfft", "numpy.fft.irfft", "numpy.fft.rfft2", "numpy.fft.irfft2",
    "numpy.fft.rfftn", "numpy.fft.irfftn",
})


@dataclass(eq=False)
class CatalogEntry:
    """One importable autograd rule.

    ``func`` is the raw NumPy/SciPy callable (the registry key adcli dispatches on), ``name`` its
    public qualified name (``numpy.kron``, ``numpy.linalg.cholesky``, ``scipy.special.gammaln``),
    ``aliases`` other public names of the same callable (``numpy.abs`` for ``numpy.absolute``).
    ``argnums`` are the positions with a real VJP (``None``: autograd accepts any position and
    decides per call); ``zero_argnums`` those where autograd registered ``None``, i.e. a VJP that
    returns zeros (``where``'s condition, ``jv``'s order). ``vjpmaker`` is
    ``primitive_vjps[primitive]``, called as ``vjpmaker(argnums, ans, args, kwargs)(g)``.
    """

    name: str
    func: Callable
    primitive: Callable
    vjpmaker: Callable
    argnums: tuple | None
    zero_argnums: tuple = ()
    aliases: tuple = ()
    origin: str = ""
    dispatchable: bool = True
    refusal: str = field(default="", repr=False)

    @property
    def status(self) -> str:
        """``native``, ``derived`` or ``neither``: what serves ``func`` in adcli without this rule
        (the registry's answer)."""
        return (without_declared(self.func) if _hashable(self.func) else None) or "neither"

    @property
    def native(self) -> bool:
        """adcli has a native rule for ``func`` (every float type)."""
        return self.status == "native"

    @property
    def importable(self) -> bool:
        return not self.refusal

    def __repr__(self) -> str:
        nums = "any" if self.argnums is None else ", ".join(map(str, self.argnums)) or "none"
        return f"<autograd rule {self.name} (argnums {nums}; adcli: {self.status})>"


def _hashable(x) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


def _is_dispatchable(func) -> bool:
    """Does a traced argument of ``func`` reach the engine? Ufuncs (NumPy's and SciPy's) call
    ``__array_ufunc__``; NumPy functions decorated with ``array_function_dispatch`` call
    ``__array_function__``; the SciPy Python functions engine.library has rules for go through
    its dispatch points. Anything else (``np.full``, other SciPy functions) converts its
    arguments with ``np.asarray`` and never consults the registry."""
    return isinstance(func, np.ufunc) or type(func).__name__ == "_ArrayFunctionDispatcher" or library.is_key(func)


def _argnums(vjpmaker) -> tuple[tuple | None, tuple]:
    """(positions with a VJP, positions whose VJP autograd defined as zeros) of a VJP maker."""
    from autograd.core import translate_vjp

    cells = dict(zip(vjpmaker.__code__.co_freevars, (c.cell_contents for c in vjpmaker.__closure__ or ())))
    if "vjps_dict" in cells:
        zero_code = translate_vjp(None, None, 0).__code__
        d = cells["vjps_dict"]
        zero = tuple(sorted(k for k, f in d.items() if getattr(f, "__code__", None) is zero_code))
        return tuple(sorted(k for k in d if k not in zero)), zero
    return None, ()  # defvjp_argnum / defvjp_argnums: any position, decided by autograd per call


def _origin(vjpmaker) -> str:
    """``autograd/numpy/numpy_vjps.py:123``: where autograd defines the VJP."""
    cells = dict(zip(vjpmaker.__code__.co_freevars, (c.cell_contents for c in vjpmaker.__closure__ or ())))
    if cells.get("vjps_dict"):
        from autograd.core import translate_vjp

        zero_code = translate_vjp(None, None, 0).__code__
        real = [f for f in cells["vjps_dict"].values() if getattr(f, "__code__", None) is not zero_code]
        fn = real[0] if real else vjpmaker
    else:
        fn = cells.get("vjpmaker", vjpmaker)
    fn = getattr(fn, "func", fn)  # functools.partial
    code = getattr(fn, "__code__", None)
    if code is None:
        return ""
    path = code.co_filename.replace("\\", "/")
    path = path[path.rfind("autograd/"):] if "autograd/" in path else path
    return f"{path}:{code.co_firstlineno}"


# autograd's private names for the primitives of public functions (np.mean wraps _primitive_mean).
_PRIVATE_PUBLIC = ("_primitive_mean", "_primitive_var", "_primitive_std", "_primitive_norm", "_astype")


def _public_names() -> dict:
    """primitive -> public names, by walking the autograd namespaces that mirror NumPy/SciPy."""
    from autograd.core import primitive_vjps

    names: dict = {}
    modules = list(_NAMESPACES) + [(f"autograd.scipy.stats.{s}", f"scipy.stats.{s}") for s in _STATS]
    for modname, public in modules:
        try:
            mod = importlib.import_module(modname)
        except Exception:  # noqa: BLE001 - SciPy missing or too old for this module: skip it
            continue
        for attr, obj in vars(mod).items():
            if attr.startswith("_") and attr not in _PRIVATE_PUBLIC:
                continue
            if _hashable(obj) and obj in primitive_vjps:
                if public.startswith("scipy.stats.") and not inspect.ismethod(getattr(obj, "fun", None)):
                    continue  # e.g. scipy.stats.gamma's module imports scipy.special.gamma: not a stats name
                shown = attr.replace("_primitive_", "") if attr.startswith("_primitive_") else attr.lstrip("_")
                names.setdefault(obj, []).append(f"{public}.{shown}")
    return names


def _name(func, public: list) -> str:
    if isinstance(func, np.ufunc):
        if getattr(np, func.__name__, None) is func:
            return qualified_name(func)  # numpy.sin
        return public[0] if public else f"ufunc.{func.__name__}"  # SciPy's ufuncs: scipy.special.gammaln
    module = getattr(func, "__module__", "") or ""
    if module.startswith("numpy"):
        return qualified_name(func)  # numpy.kron, numpy.linalg.cholesky
    return public[0] if public else qualified_name(func)


def _refusal(name: str, func, dispatchable: bool, argnums) -> str:
    if not dispatchable:
        return (
            f"{name} is not a NumPy array function or ufunc, nor a SciPy function with a library dispatch point: "
            "nothing ever hands its traced arguments to adcli (it converts them with np.asarray), so a rule for "
            "it would never be used"
        )
    if name in MULTI_OUTPUT:
        return (
            f"{name} returns several arrays: an adcli rule records one traced result per call, so autograd's "
            "rule cannot be imported (adcli's native rule handles it)"
        )
    if name in COMPLEX:
        return f"{name} maps real to complex values (or back): adcli does not differentiate complex values"
    if argnums == ():
        return f"autograd defines only zero gradients for {name}"
    return ""


@functools.lru_cache(maxsize=1)
def _build() -> tuple[tuple, dict]:
    for modname, _ in _NAMESPACES:
        try:
            importlib.import_module(modname)
        except Exception:  # noqa: BLE001 - e.g. SciPy absent
            pass
    from autograd.core import primitive_vjps

    library.resolve_all()  # SciPy's Python functions with library dispatch points (engine.library)
    public = _public_names()
    entries: list[CatalogEntry] = []
    by_func: dict = {}
    for prim, vjpmaker in primitive_vjps.items():
        func = getattr(prim, "fun", None)
        if func is None or (getattr(func, "__module__", "") or "").startswith("autograd"):
            continue  # autograd's plumbing (see the module docstring)
        names = public.get(prim, [])
        name = _name(func, names)
        key = func if _hashable(func) else id(func)
        if key in by_func:  # the same callable under two primitives (scipy.special.psi/digamma)
            old = by_func[key]
            old.aliases = tuple(dict.fromkeys(old.aliases + tuple(n for n in names if n != old.name)))
            continue
        argnums, zero = _argnums(vjpmaker)
        dispatchable = _is_dispatchable(func)
        e = CatalogEntry(
            name=name,
            func=func,
            primitive=prim,
            vjpmaker=vjpmaker,
            argnums=argnums,
            zero_argnums=zero,
            aliases=tuple(dict.fromkeys(n for n in names if n != name)),
            origin=_origin(vjpmaker),
            dispatchable=dispatchable,
            refusal=_refusal(name, func, dispatchable, argnums),
        )
        by_func[key] = e
        entries.append(e)
    entries.sort(key=lambda e: e.name)
    index: dict = {}
    for e in entries:
        for n in (e.name,) + e.aliases:
            index.setdefault(n, e)
    return tuple(entries), index


def catalog() -> list[CatalogEntry]:
    """Every rule autograd defines for a NumPy or SciPy callable, sorted by name (cached)."""
    return list(_build()[0])


def _normalise(name: str) -> str:
    name = name.strip()
    for short, full in (("np.", "numpy."), ("onp.", "numpy."), ("anp.", "numpy."), ("la.", "numpy.linalg."),
                        ("sp.", "scipy."), ("jnp.", "numpy.")):
        if name.startswith(short):
            return full + name[len(short):]
    return name


def find(name_or_callable) -> CatalogEntry:
    """The catalog entry of a callable or a name (``np.kron``, ``"numpy.kron"``, ``"kron"``,
    an autograd primitive such as ``autograd.numpy.kron``). Raises RuleError listing close
    matches when autograd has no rule for it."""
    entries, index = _build()
    if isinstance(name_or_callable, str):
        wanted = _normalise(name_or_callable)
        if wanted in index:
            return index[wanted]
        if "." not in wanted:
            hits = [e for n, e in index.items() if n.rsplit(".", 1)[-1] == wanted]
            if len({id(e) for e in hits}) == 1:
                return hits[0]
            if hits:
                raise RuleError(
                    f"{wanted!r} is ambiguous in autograd's rules: {', '.join(sorted({e.name for e in hits}))}"
                )
    else:
        f = name_or_callable
        f = getattr(f, "fun", f) if getattr(f, "_is_autograd_primitive", False) else f
        for e in entries:
            if e.func is f or (_hashable(f) and _hashable(e.func) and e.func == f):
                return e
        wanted = _callable_name(f)
    short = wanted.rsplit(".", 1)[-1]
    names = list(index)
    close = difflib.get_close_matches(wanted, names, n=5, cutoff=0.6)
    close += [n for n in difflib.get_close_matches(short, [n.rsplit(".", 1)[-1] for n in names], n=5, cutoff=0.7)
              for n in [next(m for m in names if m.rsplit(".", 1)[-1] == n)] if n not in close]
    hint = f"; close matches: {', '.join(close[:6])}" if close else ""
    raise RuleError(
        f"autograd {_version()} has no rule for {wanted}{hint} (see adcli.rules.autograd_catalog.catalog())"
    )


def _callable_name(f) -> str:
    try:
        return qualified_name(f)
    except Exception:  # noqa: BLE001
        return repr(f)


def _version() -> str:
    try:
        import autograd

        return getattr(autograd, "__version__", "") or _dist_version()
    except ImportError:
        return "?"


@functools.lru_cache(maxsize=1)
def _dist_version() -> str:
    try:
        return metadata.version("autograd")
    except metadata.PackageNotFoundError:
        return "?"


def summary() -> dict:
    """Counts for reports: entries, importable ones, and what adcli already has for them."""
    entries = catalog()
    return {
        "entries": len(entries),
        "importable": sum(e.importable for e in entries),
        "native": sum(e.status == "native" for e in entries),
        "derived": sum(e.status == "derived" for e in entries),
        "neither": sum(e.status == "neither" for e in entries),
    }
