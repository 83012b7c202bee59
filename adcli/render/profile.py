"""Render a loaded profile (docs/profile-format.md): a rich summary table, JSON, markdown; its call
tree as a speedscope file.

Every renderer is a pure function of a validated :class:`~adcli.data.model.Profile`.
"""

from __future__ import annotations

import json

from ..app.profiling import SORTS
from ..data.model import Profile
from ..data.records import CallTree, SignatureStats
from ..units import DASH, duration, human_bytes
from ..version import __version__
from .console import capture, fitted, left_out
from .text import md_cell, md_code_cell, safe

SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"

# --- cells ------------------------------------------------------------------------------------


def _served(sig: SignatureStats) -> str:
    """The rule kind that served most calls; "derived (3/4)" when others served the rest."""
    counts = sig.served_counts
    if len(counts) > 1:
        return f"{sig.served_by} ({counts.get(sig.served_by, 0)}/{sum(counts.values())})"
    return sig.served_by


def _allocs_cell(sig: SignatureStats) -> str:
    a = sig.allocs
    return f"{a.count} ({human_bytes(a.bytes)})" if a.count else "0"


def _primal_cell(sig: SignatureStats) -> str:
    r = sig.replay
    return duration(r.primal_s) if r is not None and r.measured else DASH


def _ratio_cell(sig: SignatureStats) -> str:
    r = sig.replay
    return f"{r.ratio:.1f}×" if r is not None and r.measured else DASH


# --- selection --------------------------------------------------------------------------------


def ranked(profile: Profile, top: int = 10, sort: str = "time") -> list[SignatureStats]:
    """The signatures worth showing, most expensive first (``top`` <= 0 keeps them all)."""
    if sort not in SORTS:
        raise ValueError(f"sort must be one of {', '.join(SORTS)}, not {sort!r}")
    if sort == "time":
        key = lambda s: (-s.gradient_s, s.id)
    else:
        key = lambda s: (-s.allocs.bytes, -s.allocs.count, s.id)
    sigs = sorted(profile.signatures, key=key)
    return sigs if top <= 0 else sigs[:top]


def sampled(totals) -> str:
    """How the figures of a sampled profile were made (profiler.sampling), in words."""
    return (f"figures scaled from the {totals.profiled_gradients:,} of {totals.gradients:,} gradients recorded in full "
            "(--every-gradient records all)")


def _headline(profile: Profile) -> str:
    t = profile.totals
    n = t.gradients
    line = (f"{duration(t.gradient_s)} in {n} gradient{'' if n == 1 else 's'} "
            f"(forward {duration(t.forward_s)}, reverse {duration(t.reverse_s)})")
    if t.sampled:
        line += f"; {sampled(t)}"
    problems = profile.problems()
    if problems:
        line += " — INCOMPLETE: " + "; ".join(problems)
    return line


COLUMNS = ("#", "signature", "served by", "calls", "forward", "reverse", "primitives",
           "allocations", "primal", "AD ratio")


# Short two-line headers in the terminal table: the signature column gets the width they save.
_HEADS = ("#", "signature", "served\nby", "calls", "fwd", "rev", "prims", "allocs", "primal", "AD\nratio")


def _row(rank: int, sig: SignatureStats) -> list[str]:
    return [str(rank), safe(sig.signature), _served(sig), str(sig.calls), duration(sig.forward_s),
            duration(sig.reverse_s), str(sig.primitives), _allocs_cell(sig), _primal_cell(sig), _ratio_cell(sig)]


def _shown(profile: Profile, rows: list, sort: str) -> str:
    total = len(profile.signatures)
    order = "inclusive forward + reverse time" if sort == "time" else "bytes allocated"
    return f"{len(rows)} of {total} signatures, by {order}; times inclusive of callees"


# --- renderers --------------------------------------------------------------------------------


# Left out first when the terminal is narrow (numbers are never truncated): primitives, calls,
# allocations, served by, primal; the times and the AD ratio stay.
_DROP = tuple(COLUMNS.index(c) for c in ("primitives", "calls", "allocations", "served by", "primal"))


def render_summary(profile: Profile, top: int = 10, sort: str = "time") -> str:
    rows = ranked(profile, top, sort)
    cells = [_row(i, sig) for i, sig in enumerate(rows, 1)]
    table, dropped = fitted(list(_HEADS), cells, flexible=1, drop_order=_DROP, left=(1, 2),
                            title=f"Gradient time {_headline(profile)}", title_justify="left", caption_justify="left")
    table.caption = " ".join(filter(None, [_shown(profile, rows, sort), left_out(dropped)]))
    return capture(table)


def render_json(profile: Profile) -> str:
    return json.dumps(profile.to_json(), indent=2)


def render_markdown(profile: Profile, top: int = 10, sort: str = "time") -> str:
    rows = ranked(profile, top, sort)
    out = [f"**Gradient time:** {md_cell(_headline(profile))}", ""]
    out.append("| " + " | ".join(COLUMNS) + " |")
    out.append("|" + "|".join("---" if c in ("signature", "served by") else "---:" for c in COLUMNS) + "|")
    for i, sig in enumerate(rows, 1):
        cells = _row(i, sig)
        out.append("| " + " | ".join(md_code_cell(c) if k == 1 else md_cell(c) for k, c in enumerate(cells)) + " |")
    out += ["", f"_{_shown(profile, rows, sort)}._"]
    return "\n".join(out)


def _location(loc) -> dict:
    """``file.py:12`` -> {"file": "file.py", "line": 12}; rsplit keeps ``C:\\x.py:3`` whole."""
    if not isinstance(loc, str) or not loc:
        return {}
    file, sep, line = loc.rpartition(":")
    if sep and file and line.isdigit():
        return {"file": file, "line": int(line)}
    return {"file": loc}


def render_speedscope(profile: Profile) -> dict:
    """The call tree as a speedscope file: one evented profile for forward time, one for reverse.

    Per-call timestamps are not recorded, so the events are synthesized: a node opens where its
    previous sibling closed (its parent's open time for the first child), and closes after its
    inclusive time, or after its last child if the children add up to more (clamped self times,
    hand-edited files) so that events always nest."""
    by_id = profile.by_id()
    frames: list[dict] = []
    index: dict = {}

    def frame(sig_id) -> int:
        if sig_id not in index:
            sig = by_id.get(sig_id)
            name = str(sig.signature) if sig is not None else "<program>"
            index[sig_id] = len(frames)
            frames.append({"name": name, **_location(sig.location if sig is not None else "")})
        return index[sig_id]

    profiles = [_evented(profile.tree, field, frame) for field in ("forward_s", "reverse_s")]
    for p, name in zip(profiles, ("forward", "reverse")):
        p["name"] = name
    title = " ".join(profile.command) or "program"
    return {
        "$schema": SPEEDSCOPE_SCHEMA,
        "shared": {"frames": frames},
        "profiles": profiles,
        "name": f"adcli profile: {title}",
        "activeProfileIndex": 0,
        "exporter": f"adcli {__version__}",
    }


def _evented(root: CallTree, field: str, frame) -> dict:
    """One evented profile over the tree's ``field`` durations; the root itself gets no frame
    (it is the whole program, not a call). Iterative: a deep call tree must not hit the
    recursion limit."""
    events: list[dict] = []
    # stack items: (node, open time, iterator over children, frame index or None, cursor)
    end = 0.0
    stack = [[root, 0.0, iter(root.children), None, 0.0]]
    while stack:
        top = stack[-1]
        node, start, children, fidx, cursor = top
        child = next(children, None)
        if child is not None:
            idx = frame(child.sig)
            events.append({"type": "O", "at": cursor, "frame": idx})
            stack.append([child, cursor, iter(child.children), idx, cursor])
            continue
        stack.pop()
        close = max(start + max(getattr(node, field), 0.0), cursor)
        if fidx is not None:
            events.append({"type": "C", "at": close, "frame": fidx})
        if stack:
            stack[-1][4] = close  # the next sibling opens where this one closed
        else:
            end = close
    return {"type": "evented", "name": "", "unit": "seconds", "startValue": 0.0, "endValue": end,
            "events": events}


RENDERERS = {
    "table": lambda v: render_summary(v.profile, v.top, v.sort),
    "json": lambda v: render_json(v.profile),
    "markdown": lambda v: render_markdown(v.profile, v.top, v.sort),
}
FLAME_RENDERERS = {"speedscope": lambda g: json.dumps(render_speedscope(g.profile))}
