"""Render rule listings as a rich table or JSON."""

from __future__ import annotations

import json
import os

from rich.console import Console
from rich.table import Table


def _console(width: int = 120) -> Console:
    # Plain text when not a terminal or NO_COLOR is set (rich honours NO_COLOR itself).
    return Console(no_color=bool(os.environ.get("NO_COLOR")), width=width if not os.isatty(1) else None)


def _capture(renderable, width: int = 120) -> str:
    console = _console(width)
    with console.capture() as cap:
        console.print(renderable)
    return cap.get().rstrip()


def render_list(rows: list[dict], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(rows, indent=2)
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
    return _capture(table)


def render_show(info: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(info, indent=2)
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
