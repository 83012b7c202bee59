"""Render rule listings as a rich table or JSON."""

from __future__ import annotations

import json

from rich.table import Table

from ..app.rules import RuleInfo, RuleListing
from .console import capture


def list_json(listing: RuleListing) -> str:
    return json.dumps(listing.rows, indent=2)


def list_table(listing: RuleListing) -> str:
    rows = listing.rows
    counts: dict = {}
    for r in rows:
        counts[r["source"]] = counts.get(r["source"], 0) + 1
    table = Table(title=", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    for col in ("callable", "source", "args", "note"):
        table.add_column(col)
    for r in rows:
        if r["argnums"] is None:
            args = "any" if r["source"] == "autograd" else ""
        else:
            args = ",".join(map(str, r["argnums"]))
        table.add_row(r["name"], r["source"], args, r["note"])
    return capture(table)


def show_json(info: RuleInfo) -> str:
    return json.dumps(info.info, indent=2)


def show_table(result: RuleInfo) -> str:
    info = result.info
    lines = [f"{info['name']}"]
    lines.append(f"  native rule:   {'yes' if info['native'] else 'no'}")
    lines.append(f"  derivation:    {info['derivation'] or 'no'}")
    if info["declared"]:
        lines.append("  declared rules:")
        lines += [f"    {d['signature']}  [{d['source']}] {d['origin']}" for d in info["declared"]]
    a = info["autograd"]
    if a is None:
        lines.append("  autograd:      no rule")
    else:
        nums = "any" if a["argnums"] is None else ", ".join(map(str, a["argnums"])) or "none"
        state = "importable" if a["importable"] else f"not importable ({a['refusal']})"
        lines.append(f"  autograd:      {a['name']}, differentiable args {nums}; {state}")
    return "\n".join(lines)


LIST_RENDERERS = {"table": list_table, "json": list_json}
SHOW_RENDERERS = {"table": show_table, "json": show_json}
