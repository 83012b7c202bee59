"""What rules exist: plain rows for ``adcli rules list`` / ``adcli rules show`` (no I/O here)."""

from __future__ import annotations

import importlib

import numpy as np

from ..engine import library
from ..engine.registry import REGISTRY, UFUNCS, qualified_name, ufunc_rule
from ..errors import RuleError
from .autograd_catalog import _normalise, catalog, find

SOURCES = ("native", "autograd", "all")


def _scipy_rules() -> None:
    """SciPy's rules register on first use (its ufuncs' when the registry is first asked for one,
    ``ufunc_rule``; its Python functions' through engine.library); a listing shows them whenever
    SciPy is installed."""
    try:
        import scipy.special as sp
    except ImportError:
        return
    for ufunc in [u for u in vars(sp).values() if isinstance(u, np.ufunc)]:
        ufunc_rule(ufunc)  # the registry's lazy lookups install the covered ones
    for module in library.MODULES:
        try:
            importlib.import_module(module)
        except ImportError:  # pragma: no cover - a SciPy too old for one of them
            continue
    library.resolve_all()


def _engine_rows() -> list[dict]:
    _scipy_rules()
    rows = []
    for ufunc, prim in UFUNCS.items():
        args = [i for i, v in enumerate(prim.vjps) if v is not None]
        rows.append({"name": qualified_name(ufunc), "source": "native", "argnums": args,
                     "note": "ufunc" if ufunc.signature is None else f"gufunc {ufunc.signature}"})
    for key, e in REGISTRY.items():
        if isinstance(key, tuple):
            continue  # a user function: shown by `rules show`
        if e.native is not None and not getattr(e.native, "__adcli_nondiff__", False):
            rows.append({"name": e.name, "source": "native", "argnums": None,
                         "note": "advised (the library tier over the bundled workloads)" if e.origin == "advised" else ""})
        if e.derivation is not None:
            d = e.derivation
            rows.append({"name": e.name, "source": "derived", "argnums": None,
                         "note": f"verified derivation: {d.note}" if d.note else "verified derivation"})
        for r in e.by_signature.values():
            rows.append({"name": str(r.signature), "source": r.source, "argnums": None,
                         "note": r.origin})
    return rows


def _autograd_rows() -> list[dict]:
    rows = []
    for c in catalog():
        rows.append({
            "name": c.name,
            "source": "autograd",
            "argnums": None if c.argnums is None else list(c.argnums),
            "note": (f"not importable: {c.refusal}" if c.refusal else f"adcli: {c.status}"),
        })
    return rows


def list_rules(source: str = "all") -> list[dict]:
    """Rows ``{name, source, argnums, note}``; ``source``: native (what the engine has: native
    rules, verified derivations, declared rules), autograd (what can be imported), or all."""
    if source not in SOURCES:
        raise RuleError(f"unknown source {source!r}; one of {', '.join(SOURCES)}")
    rows = []
    if source in ("native", "all"):
        rows += _engine_rows()
    if source in ("autograd", "all"):
        rows += _autograd_rows()
    order = {"native": 0, "derived": 1, "hand-written": 2, "imported": 3, "autograd": 4}
    return sorted(rows, key=lambda r: (r["name"], order.get(r["source"], 9)))


def show_rule(name: str) -> dict:
    """Everything adcli knows about one callable: native, derivation, declared rules, autograd."""
    _scipy_rules()
    wanted = _normalise(name)
    info: dict = {"name": wanted, "native": False, "derivation": None, "declared": [], "autograd": None}
    found = False
    for key, e in REGISTRY.items():
        label = e.name
        if label != wanted and label.rsplit(".", 1)[-1] != wanted:
            continue
        found = True
        info["name"] = label
        info["native"] = info["native"] or (e.native is not None and not getattr(e.native, "__adcli_nondiff__", False))
        if e.derivation is not None:
            info["derivation"] = e.derivation.note or "verified"
        info["declared"] += [{"signature": str(r.signature), "source": r.source, "origin": r.origin}
                             for r in e.by_signature.values()]
    for ufunc in UFUNCS:
        if qualified_name(ufunc) == wanted or ufunc.__name__ == wanted:
            info["name"], info["native"], found = qualified_name(ufunc), True, True
    try:
        c = find(wanted)
        found = True
        info["autograd"] = {"name": c.name, "argnums": None if c.argnums is None else list(c.argnums),
                            "importable": c.importable, "refusal": c.refusal, "origin": c.origin}
        if info["name"] == wanted:
            info["name"] = c.name
    except RuleError as exc:
        if not found:
            raise RuleError(f"adcli knows no rule for {wanted!r}: {exc}") from None
    return info
