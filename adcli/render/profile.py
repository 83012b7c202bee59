"""Render a loaded profile (docs/profile-format.md): a rich summary table, JSON, markdown, speedscope.

Every renderer is a pure function of the profile dict. ``model.validate`` checks the fields the
profile cannot be read without; the optional ones (replay, allocs' contents, meta, totals) are
read through the tolerant getters below so that a hand-edited or older file still renders.
"""

from __future__ import annotations

import json
import math
import os

from rich.console import Console
from rich.table import Table

from ..units import human_bytes

SORTS = ("time", "allocations")
SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"
DASH = "—"

# --- tolerant field access ------------------------------------------------------------------


def _num(value, default: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return default
    return value


def _alloc(entry, phase: str) -> tuple[int, int]:
    """(count, bytes) of one phase of an ``allocs`` object, (0, 0) when absent or malformed."""
    pair = entry.get(phase) if isinstance(entry, dict) else None
    if isinstance(pair, (list, tuple)) and len(pair) == 2:
        return int(_num(pair[0], 0)), int(_num(pair[1], 0))
    return 0, 0


def alloc_total(sig: dict) -> tuple[int, int]:
    """Inclusive (count, bytes) the engine stored for ``sig``, forward plus reverse."""
    fa, fb = _alloc(sig.get("allocs"), "forward")
    ra, rb = _alloc(sig.get("allocs"), "reverse")
    return fa + ra, fb + rb


def _replay(sig: dict) -> dict | None:
    r = sig.get("replay")
    return r if isinstance(r, dict) else None


# --- formatting -------------------------------------------------------------------------------


def _ms(seconds) -> str:
    return f"{_num(seconds) * 1e3:.3f}"


def _seconds(seconds) -> str:
    """A duration with a unit that keeps three significant-ish digits."""
    s = _num(seconds)
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} µs"


def _served(sig: dict) -> str:
    """The rule kind that served most calls; "derived (3/4)" when others served the rest."""
    main = str(sig.get("served_by", ""))
    counts = sig.get("served_counts")
    if isinstance(counts, dict) and len(counts) > 1:
        total = sum(int(_num(v, 0)) for v in counts.values())
        return f"{main} ({int(_num(counts.get(main), 0))}/{total})"
    return main


def _allocs_cell(sig: dict) -> str:
    count, nbytes = alloc_total(sig)
    return f"{count} ({human_bytes(nbytes)})" if count else "0"


def _primal_cell(sig: dict) -> str:
    r = _replay(sig)
    primal = _num(r.get("primal_s"), -1) if r else -1
    return _ms(primal) if primal >= 0 else DASH


def _ratio_cell(sig: dict) -> str:
    r = _replay(sig)
    ratio = _num(r.get("ratio"), -1) if r else -1
    return f"{ratio:.1f}×" if ratio >= 0 else DASH


# --- selection --------------------------------------------------------------------------------


def ranked(profile: dict, top: int = 10, sort: str = "time") -> list[dict]:
    """The signatures worth showing, most expensive first (``top`` <= 0 keeps them all).

    The program root is bookkeeping, not something the user wrote or called, so never shown."""
    if sort not in SORTS:
        raise ValueError(f"sort must be one of {', '.join(SORTS)}, not {sort!r}")
    sigs = [s for s in profile.get("signatures", []) if s.get("kind") != "root"]
    if sort == "time":
        key = lambda s: (-(_num(s.get("forward_s")) + _num(s.get("reverse_s"))), s.get("id", 0))
    else:
        key = lambda s: (-alloc_total(s)[1], -alloc_total(s)[0], s.get("id", 0))
    sigs.sort(key=key)
    return sigs if top <= 0 else sigs[:top]


def _totals(profile: dict) -> tuple[float, int, float, float]:
    t = profile.get("totals") if isinstance(profile.get("totals"), dict) else {}
    fwd, rev = _num(t.get("forward_s")), _num(t.get("reverse_s"))
    return _num(t.get("gradient_s"), fwd + rev), int(_num(t.get("gradients"), 0)), fwd, rev


def _headline(profile: dict) -> str:
    total, n, fwd, rev = _totals(profile)
    line = (f"{_seconds(total)} in {n} gradient{'' if n == 1 else 's'} "
            f"(forward {_seconds(fwd)}, reverse {_seconds(rev)})")
    if profile.get("partial"):
        # partial = the run or its replays were interrupted; the exit status says which part.
        status = profile.get("exit_status")
        code = f" (exit status {status})" if isinstance(status, int) and status else ""
        line += f" — PARTIAL: interrupted{code}, the numbers cover only what ran"
    return line


COLUMNS = ("#", "signature", "served by", "calls", "forward (ms)", "reverse (ms)", "primitives",
           "allocations", "primal (ms)", "AD ratio")


# Short two-line headers in the terminal table: the signature column gets the width they save.
_HEADS = ("#", "signature", "served\nby", "calls", "fwd\n(ms)", "rev\n(ms)", "prims", "allocs", "primal\n(ms)",
          "AD\nratio")


def _row(rank: int, sig: dict) -> list[str]:
    return [str(rank), str(sig.get("signature", "")), _served(sig), str(sig.get("calls", 0)),
            _ms(sig.get("forward_s")), _ms(sig.get("reverse_s")), str(sig.get("primitives", 0)),
            _allocs_cell(sig), _primal_cell(sig), _ratio_cell(sig)]


def _shown(profile: dict, rows: list, sort: str) -> str:
    total = sum(1 for s in profile.get("signatures", []) if s.get("kind") != "root")
    order = "inclusive forward + reverse time" if sort == "time" else "bytes allocated"
    return f"{len(rows)} of {total} signatures, by {order}; times inclusive of callees"


# --- renderers --------------------------------------------------------------------------------


def _console() -> Console:
    # Plain text (no ANSI at all, not just no colour) when NO_COLOR is set or stdout is not a
    # terminal, so that piped output and CI logs stay greppable. A fixed width off a terminal
    # keeps the columns from collapsing to rich's 80-column default.
    tty = os.isatty(1)
    plain = bool(os.environ.get("NO_COLOR")) or not tty
    return Console(no_color=plain, color_system=None if plain else "auto", force_terminal=tty or None,
                   width=None if tty else 140, highlight=False, emoji=False)


def render_summary(profile: dict, top: int = 10, sort: str = "time") -> str:
    rows = ranked(profile, top, sort)
    table = Table(title=f"Gradient time {_headline(profile)}", caption=_shown(profile, rows, sort),
                  title_justify="left", caption_justify="left")
    for col, head in zip(COLUMNS, _HEADS):
        numeric = col not in ("signature", "allocations")
        # Numbers never wrap; the signature takes what is left and wraps at its commas.
        table.add_column(head, justify="left" if col in ("signature", "served by") else "right",
                         no_wrap=numeric, overflow="fold", min_width=8 if col == "allocations" else None)
    for i, sig in enumerate(rows, 1):
        table.add_row(*_row(i, sig))
    console = _console()
    with console.capture() as cap:
        console.print(table)
    return "\n".join(line.rstrip() for line in cap.get().rstrip().splitlines())


def render_json(profile: dict) -> str:
    return json.dumps(profile, indent=2)


def _md_cell(text: str) -> str:
    # A pipe would end the cell; a newline would end the row.
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def render_markdown(profile: dict, top: int = 10, sort: str = "time") -> str:
    rows = ranked(profile, top, sort)
    out = [f"**Gradient time:** {_md_cell(_headline(profile))}", ""]
    out.append("| " + " | ".join(COLUMNS) + " |")
    out.append("|" + "|".join("---" if c in ("signature", "served by") else "---:" for c in COLUMNS) + "|")
    for i, sig in enumerate(rows, 1):
        cells = _row(i, sig)
        cells[1] = f"`{cells[1]}`" if "`" not in cells[1] else cells[1]
        out.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
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


def render_speedscope(profile: dict) -> dict:
    """The call tree as a speedscope file: one evented profile for forward time, one for reverse.

    Per-call timestamps are not recorded, so the events are synthesized: a node opens where its
    previous sibling closed (its parent's open time for the first child), and closes after its
    inclusive time, or after its last child if the children add up to more (clamped self times,
    hand-edited files) so that events always nest."""
    from .. import __version__

    by_id = {s["id"]: s for s in profile.get("signatures", [])}
    frames: list[dict] = []
    index: dict = {}

    def frame(sig_id) -> int:
        if sig_id not in index:
            sig = by_id.get(sig_id, {})
            name = sig.get("signature") or ("<program>" if sig_id == 0 else f"<signature {sig_id}>")
            index[sig_id] = len(frames)
            frames.append({"name": name, **_location(sig.get("location"))})
        return index[sig_id]

    profiles = [_evented(profile["tree"], field, frame) for field in ("forward_s", "reverse_s")]
    for p, name in zip(profiles, ("forward", "reverse")):
        p["name"] = name
    command = profile.get("command")
    title = " ".join(map(str, command)) if isinstance(command, list) and command else "program"
    return {
        "$schema": SPEEDSCOPE_SCHEMA,
        "shared": {"frames": frames},
        "profiles": profiles,
        "name": f"adcli profile: {title}",
        "activeProfileIndex": 0,
        "exporter": f"adcli {__version__}",
    }


def _evented(root: dict, field: str, frame) -> dict:
    """One evented profile over the tree's ``field`` durations; the root itself gets no frame
    (it is the whole program, not a call). Iterative: a deep call tree must not hit the
    recursion limit."""
    events: list[dict] = []
    # stack items: (node, open time, iterator over children, frame index or None, cursor)
    end = 0.0
    stack = [[root, 0.0, iter(root.get("children", [])), None, 0.0]]
    while stack:
        top = stack[-1]
        node, start, children, fidx, cursor = top
        child = next(children, None)
        if child is not None:
            idx = frame(child.get("sig"))
            events.append({"type": "O", "at": cursor, "frame": idx})
            stack.append([child, cursor, iter(child.get("children", [])), idx, cursor])
            continue
        stack.pop()
        close = max(start + max(_num(node.get(field)), 0.0), cursor)
        if fidx is not None:
            events.append({"type": "C", "at": close, "frame": fidx})
        if stack:
            stack[-1][4] = close  # the next sibling opens where this one closed
        else:
            end = close
    return {"type": "evented", "name": "", "unit": "seconds", "startValue": 0.0, "endValue": end,
            "events": events}
