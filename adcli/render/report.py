"""``adcli report``: one self-contained HTML file per run of profiles (no network, no script):
the status, the ranked signatures, an AD-ratio chart in the style of Mooncake's benchmark plots,
forward and reverse flame graphs (SVG, drawn here), and the advice with its reasons, each piece
of advice linked to its signature. Every text that comes from a profile is HTML-escaped.
"""

from __future__ import annotations

import math
from html import escape as _escape

from ..app.report import Report
from ..data.model import Profile
from ..units import duration, human_bytes, ratio
from .profile import ranked, sampled
from .text import safe

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;width:100%}th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:right}
th{background:#f4f4f4}td.l,th.l{text-align:left}code{font-size:.92em}
.status{padding:.6em 1em;border-radius:4px;background:#e8f5e9}.status.bad{background:#fff3e0}
.frame rect{stroke:#fff;stroke-width:.5}.frame text{font-size:11px;pointer-events:none}
td:not(.l){white-space:nowrap}.axis{stroke:#999}.time-axis text{font-size:10px}
.legend{font-size:12px;color:#444}.legend .swatch{display:inline-block;width:.9em;height:.9em;margin:0 .3em 0 .8em;
vertical-align:-.1em;border:1px solid #ccc}
li{margin:.2em 0}a{color:#1c5fd1;text-decoration:none}a:hover{text-decoration:underline}
"""
def escape(text) -> str:
    """Text for the page: control characters, bidirectional overrides and lone surrogates written
    as escapes (``safe``: a profile or a file name may hold any), then HTML-escaped."""
    return _escape(safe(text))


# one palette for the bars of the AD-ratio chart and the frames of the flame graphs: what served the calls
_COLOURS = {"derived": "#ffc078", "native": "#8ce99a", "imported": "#74c0fc", "hand-written": "#b197fc"}
_OTHER = "#dee2e6"  # the program's root, or a signature the profile does not list


def _time(seconds) -> str:
    """A duration for the page, its number and unit held together (never "82.7 / µs")."""
    return escape(duration(seconds)).replace(" ", "&nbsp;")


def _legend(element: str, served: set) -> str:
    """What the colours of ``element``'s bars or frames mean: the rule kinds it shows."""
    kinds = [k for k in _COLOURS if k in served] + (["other"] if served - set(_COLOURS) else [])
    items = "".join(f'<span class="swatch" style="background:{_COLOURS.get(k, _OTHER)}"></span>'
                    f'{"served by a " + k + " rule" if k != "other" else "the program, or not listed"}' for k in kinds)
    return f'<p class="legend" id="{element}-legend">Colour:{items}</p>'


def render_html(report: Report) -> str:
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             "<title>adcli report</title>", f"<style>{_CSS}</style></head><body>", "<h1>adcli report</h1>"]
    for i, (path, profile) in enumerate(zip(report.paths, report.profiles)):
        parts += _profile_section(i, path, profile)
    parts += _comparison_section(report)
    parts += _advice_section(report)
    parts.append("</body></html>")
    return "\n".join(parts)


def _anchor(i: int, sig_id: int) -> str:
    return f"p{i}-sig{sig_id}"


def _profile_section(i: int, path: str, profile: Profile) -> list:
    t = profile.totals
    problems = profile.problems()
    status = ("complete: the run ended normally and its signatures were replayed" if not problems
              else "INCOMPLETE: " + "; ".join(problems))
    out = [f'<h2 id="p{i}">{escape(path)}</h2>',
           f"<p><code>{escape(' '.join(profile.command))}</code>, {escape(profile.created)}, adcli "
           f"{escape(profile.adcli_version)}, Python {escape(profile.python)}, NumPy {escape(profile.numpy)}</p>",
           f'<p class="status{" bad" if problems else ""}" id="p{i}-status">{escape(status)}</p>',
           f"<p>Gradient time {_time(t.gradient_s)} in {t.gradients} gradient(s): forward "
           f"{_time(t.forward_s)}, reverse {_time(t.reverse_s)}"
           f"{'; ' + escape(sampled(t)) if t.sampled else ''}.</p>"]
    out += _signature_table(i, profile)
    out += _ratio_chart(i, profile)
    for which in ("forward", "reverse"):
        out += _flame(i, profile, which)
    return out


def _signature_table(i: int, profile: Profile) -> list:
    rows = ['<h3>Signatures</h3><table id="p%d-signatures"><thead><tr><th>#</th><th class="l">signature</th>'
            '<th class="l">served by</th><th>calls</th><th>forward</th><th>reverse</th><th>allocations</th>'
            "<th>primal</th><th>AD ratio</th></tr></thead><tbody>" % i]
    for rank, s in enumerate(ranked(profile, top=0), 1):
        r = s.replay
        primal = _time(r.primal_s) if r is not None and r.primal_s else "—"
        ad = ratio(r.derived_s / r.primal_s) if r is not None and r.primal_s and r.derived_s else "—"
        rows.append(f'<tr id="{_anchor(i, s.id)}"><td>{rank}</td><td class="l"><code>{escape(str(s.signature))}</code>'
                    f'</td><td class="l">{escape(s.served_by)}</td><td>{s.calls}</td><td>{_time(s.forward_s)}'
                    f"</td><td>{_time(s.reverse_s)}</td><td>{escape(human_bytes(s.allocs.bytes))}</td>"
                    f"<td>{primal}</td><td>{escape(ad)}</td></tr>")
    rows.append("</tbody></table>")
    return rows


def _ratio_chart(i: int, profile: Profile) -> list:
    """AD ratio (gradient time / primal time) per replayed signature, on a log axis (Mooncake's plots)."""
    points = [(s, s.replay.derived_s / s.replay.primal_s) for s in ranked(profile, top=0)
              if s.replay is not None and s.replay.primal_s and s.replay.derived_s]
    if not points:
        return ["<h3>AD ratios</h3><p>No signature was replayed: no AD ratio to chart.</p>"]
    width, label_w, row_h = 1000, 380, 20
    hi = max(max(r for _, r in points), 10.0)
    scale = (width - label_w - 80) / math.log10(hi * 1.2)
    height = row_h * len(points) + 30
    svg = [f'<svg id="p{i}-ratios" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           'xmlns="http://www.w3.org/2000/svg" role="img" aria-label="AD ratio per signature">']
    for k, (s, r) in enumerate(points):
        y = 10 + k * row_h
        w = max(scale * math.log10(max(r, 1.0)), 1.0)
        name = str(s.signature)
        shown = name if len(name) <= 58 else name[:57] + "…"
        svg.append(f'<a href="#{_anchor(i, s.id)}"><text x="{label_w - 6}" y="{y + 13}" text-anchor="end" '
                   f'font-size="11">{escape(shown)}</text></a>'
                   f'<rect class="bar {escape(s.served_by)}" x="{label_w}" y="{y + 2}" width="{w:.1f}" height="{row_h - 5}" '
                   f'fill="{_COLOURS.get(s.served_by, _OTHER)}">'
                   f"<title>{escape(name)}: {escape(ratio(r))}</title></rect>"
                   f'<text x="{label_w + w + 4:.1f}" y="{y + 13}" font-size="11">{escape(ratio(r))}</text>')
    for tick in (1, 10, 100, 1000, 10000):
        if tick <= hi * 1.2:
            x = label_w + scale * math.log10(tick)
            svg.append(f'<line class="axis" x1="{x:.1f}" y1="5" x2="{x:.1f}" y2="{height - 18}"/>'
                       f'<text x="{x:.1f}" y="{height - 5}" font-size="10" text-anchor="middle">{tick}×</text>')
    svg.append("</svg>")
    legend = _legend(f"p{i}-ratios", {s.served_by for s, _ in points})
    return ["<h3>AD ratios (gradient time / primal time, log scale)</h3>", *svg, legend]


def _flame(i: int, profile: Profile, which: str) -> list:
    """An icicle graph of the call tree: width is the inclusive ``which`` time."""
    names = {s.id: str(s.signature) for s in profile.signatures}
    served = {s.id: s.served_by for s in profile.signatures}
    total = sum(getattr(c, f"{which}_s") for c in profile.tree.children)
    title = f"<h3>{which.capitalize()} flame graph</h3>"
    if total <= 0:
        return [title, f"<p>No {which} time recorded.</p>"]
    width, row_h = 1000, 18
    rects: list = []
    depth = 0
    stack = [(c, 0.0, 0) for c in reversed(profile.tree.children)]
    while stack:  # pre-order without recursion: a deep call tree must not exhaust Python's stack
        node, x, level = stack.pop()
        w = getattr(node, f"{which}_s") / total * width
        depth = max(depth, level)
        if w >= 0.5:
            rects.append((node, x, level, w))
        child_x = x
        for c in node.children:
            stack.append((c, child_x, level + 1))
            child_x += getattr(c, f"{which}_s") / total * width
    frames_h = (depth + 1) * row_h + 4
    height = frames_h + 24  # the time axis below the frames
    svg = [f'<svg id="p{i}-{which}" class="frame" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{which} flame graph">']
    kinds = set()
    for node, x, level, w in rects:
        name = names.get(node.sig, "?")
        t = getattr(node, f"{which}_s")
        label = f"{name}: {duration(t)} ({t / total:.0%}), {node.calls} call(s)"
        kinds.add(served.get(node.sig, "other"))
        colour = _COLOURS.get(served.get(node.sig, ""), _OTHER)
        text = name if len(name) * 6.2 < w - 6 else (name[: int((w - 6) / 6.2) - 1] + "…" if w > 40 else "")
        svg.append(f'<a href="#{_anchor(i, node.sig)}"><rect x="{x:.1f}" y="{level * row_h}" width="{w:.1f}" '
                   f'height="{row_h - 1}" fill="{colour}"><title>{escape(label)}</title></rect>'
                   + (f'<text x="{x + 3:.1f}" y="{level * row_h + 13}">{escape(text)}</text>' if text else "") + "</a>")
    svg += _time_axis(total, width, frames_h)
    svg.append("</svg>")
    return [title, *svg, _legend(f"p{i}-{which}", kinds)]


def time_ticks(total: float, most: int = 8) -> list[float]:
    """Round times from 0 to ``total`` for an axis: steps of 1, 2 or 5 times a power of ten,
    the smallest that gives at most ``most`` + 1 ticks."""
    step = 10 ** math.floor(math.log10(total / most))
    for factor in (1, 2, 5, 10):
        if total / (step * factor) <= most:
            step *= factor
            break
    return [k * step for k in range(int(total / step + 1e-9) + 1)]


def _time_axis(total: float, width: int, y: float) -> list:
    """A time axis under a flame graph: a frame's width is its share of ``total`` seconds."""
    out = [f'<g class="time-axis"><line class="axis" x1="0" y1="{y + 2}" x2="{width}" y2="{y + 2}"/>']
    for t in time_ticks(total):
        x = t / total * width
        anchor = "start" if x < 20 else ("end" if x > width - 30 else "middle")
        out.append(f'<line class="axis" x1="{x:.1f}" y1="{y + 2}" x2="{x:.1f}" y2="{y + 7}"/>'
                   f'<text x="{x:.1f}" y="{y + 19}" text-anchor="{anchor}">{"0" if t == 0 else escape(duration(t))}</text>')
    out.append("</g>")
    return out


def _comparison_section(report: Report) -> list:
    """Each program profiled before and after rules files: the profiles' rows side by side."""
    out = []
    for k, (before, after, rules, c) in enumerate(report.comparisons):
        change = "—" if c.total_change is None else f"{c.total_change:+.0%}"
        out += [f'<h2 id="compare{k}">Before and after: {escape(before)} → {escape(after)}</h2>',
                f"<p>{escape(after)} is the program of {escape(before)} profiled with the rules of "
                f"{escape(', '.join(rules))}. Gradient time {escape(duration(c.total_before_s))} → "
                f"{escape(duration(c.total_after_s))} ({escape(change)}): one run each, within a shared machine's "
                "noise; <code>adcli compare --script SCRIPT --rules FILE</code> times each side with repeats.</p>"]
        out += [f"<p>Note: {escape(n)}</p>" for n in c.notes]
        out.append(f'<table id="compare{k}-rows"><thead><tr><th class="l">signature</th><th>before</th><th>after</th>'
                   '<th>change</th><th class="l">served before</th><th class="l">served after</th></tr></thead><tbody>')
        for r in c.rows:
            cells = [duration(r.before_s) if r.before_s is not None else "—",
                     duration(r.after_s) if r.after_s is not None else "—",
                     "—" if r.change is None else f"{r.change:+.0%}"]
            out.append(f'<tr><td class="l"><code>{escape(str(r.signature))}</code></td>'
                       + "".join(f"<td>{escape(x)}</td>" for x in cells)
                       + f'<td class="l">{escape(r.before_served_by or "—")}</td>'
                       f'<td class="l">{escape(r.after_served_by or "—")}</td></tr>')
        out.append("</tbody></table>")
    return out


def _advice_section(report: Report) -> list:
    out = ['<h2 id="advice">Advice</h2>']
    if report.advice is None:
        return out + [f"<p>{escape(report.no_advice)}</p>"]
    shown = report.advice.shown
    if not shown:
        return out + ["<p>Nothing to suggest: no rule would save more than its burden.</p>"]
    ids = {str(s.signature): (k, s.id) for k, p in enumerate(report.profiles) for s in p.signatures}
    out.append("<ol>")
    for s in shown:
        where = ids.get(str(s.signature))
        link = f'<a href="#{_anchor(*where)}">' if where else "<span>"
        end = "</a>" if where else "</span>"
        reasons = "".join(f"<li>{escape(r)}</li>" for r in s.reasons)
        out.append(f'<li id="advice-{s.rank}"><b>{escape(s.action)}</b> {link}<code>{escape(str(s.signature))}</code>{end}'
                   f"<ul>{reasons}</ul></li>")
    out.append("</ol>")
    return out


RENDERERS = {"html": render_html}
