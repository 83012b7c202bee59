"""Summaries of a classified autograd-suite run: plain text, Markdown or JSON."""

from __future__ import annotations

import json
from collections import Counter, defaultdict


def summarize(tests: list[dict]) -> dict:
    in_scope = [t for t in tests if t["status"] in ("pass", "partial", "fail")]
    passed = sum(t["status"] in ("pass", "partial") for t in in_scope)
    excluded = Counter(t["category"] for t in tests if t["status"] == "excluded")
    failures = defaultdict(list)
    for t in in_scope:
        if t["status"] == "fail":
            failures[t["cause"]].append(t)
    reductions = Counter()
    for t in in_scope:
        for part in filter(None, (t.get("notes") or "").split("; ")):
            n, _, what = part.partition("x ")
            reductions[what] += int(n)
    return {
        "collected": len(tests),
        "in_scope": len(in_scope),
        "passed": passed,
        "partial": sum(t["status"] == "partial" for t in in_scope),
        "failed": len(in_scope) - passed,
        "pass_pct": round(100.0 * passed / len(in_scope), 1) if in_scope else 0.0,
        "excluded": dict(sorted(excluded.items(), key=lambda kv: (-kv[1], kv[0]))),
        "failures": dict(sorted(failures.items(), key=lambda kv: (-len(kv[1]), kv[0]))),
        "reductions": dict(reductions.most_common()),
        "reduced_tests": sum(bool(t.get("notes")) for t in in_scope),
    }


def _upstream_note(t: dict) -> str:
    up = t.get("upstream")
    return f" (also {up} with autograd itself)" if up in ("failed", "error") else ""


def render(tests: list[dict], header: dict, fmt: str, per_test: bool) -> str:
    s = summarize(tests)
    if fmt == "json":
        out = {"header": header, "summary": {k: v for k, v in s.items() if k != "failures"}, "tests": tests}
        out["summary"]["failures"] = {cause: [t["nodeid"] for t in ts] for cause, ts in s["failures"].items()}
        return json.dumps(out, indent=1, default=repr)
    md = fmt == "markdown"
    lines: list[str] = []
    title = (
        f"autograd {header.get('autograd_tests', '?')} test files against adcli {header.get('adcli', '?')} "
        f"(reverse mode, first order, real values; numpy {header.get('numpy', '?')}, scipy {header.get('scipy', '?')})"
    )
    lines += [f"## {title}" if md else title, ""]
    lines += _table(
        ["collected", "in scope", "passed", "of which partial", "failed", "pass %"],
        [[s["collected"], s["in_scope"], s["passed"], s["partial"], s["failed"], f"{s['pass_pct']:.1f}"]],
        md,
    )
    if header.get("upstream"):
        lines += ["", f"autograd itself on the same files: {header['upstream']}"]
    lines += ["", "### Excluded, by category" if md else "Excluded, by category", ""]
    lines += _table(
        ["category", "tests"], [[c, n] for c, n in s["excluded"].items()] + [["total", sum(s["excluded"].values())]], md
    )
    if s["reductions"]:
        lines += ["", "### Reduced checks inside in-scope tests" if md else "Reduced checks inside in-scope tests", ""]
        lines += [f"{s['reduced_tests']} in-scope tests had at least one check reduced or skipped:", ""]
        lines += _table(["reduction", "count"], [[w, n] for w, n in s["reductions"].items()], md)
    lines += [
        "",
        f"### In-scope failures, by cause ({s['failed']})" if md else f"In-scope failures, by cause ({s['failed']})",
        "",
    ]
    for cause, ts in s["failures"].items():
        lines.append(f"**{cause}** ({len(ts)})" if md else f"{cause} ({len(ts)})")
        for t in ts:
            msg = t.get("message") or ""
            msg = (msg[:200] + "...") if len(msg) > 200 else msg
            msg = msg.replace("|", "\\|") if md else msg
            lines.append(f"- `{t['nodeid']}`: {msg}{_upstream_note(t)}" if md else f"  {t['nodeid']}: {msg}{_upstream_note(t)}")
        lines.append("")
    partial = [t for t in tests if t["status"] == "partial"]
    if partial:
        lines += ["### Partial passes" if md else "Partial passes (in-scope part passed, then an out-of-scope feature)", ""]
        lines += [f"- `{t['nodeid']}`: {t['why']}" if md else f"  {t['nodeid']}: {t['why']}" for t in partial] + [""]
    if per_test:
        lines += ["### Every test" if md else "Every test", ""]
        rows = []
        for t in tests:
            what = {"fail": t.get("cause"), "excluded": f"{t.get('category')}: {t.get('why', '')}", "partial": t.get("why")}
            ran = f" (pytest outcome: {t['outcome']})" if t["status"] == "excluded" and t.get("outcome") else ""
            rows.append([t["status"], t["nodeid"], (what.get(t["status"]) or "") + ran, t.get("notes") or ""])
        if md:
            lines += _table(["status", "test", "category / cause", "checks reduced or skipped"], rows, md)
        else:
            lines += [f"{r[0]:<9}{r[1]}" + (f"  | {r[2]}" if r[2] else "") + (f"  | {r[3]}" if r[3] else "") for r in rows]
    return "\n".join(lines).rstrip() + "\n"


def _table(head: list, rows: list[list], md: bool) -> list[str]:
    rows = [[str(c) for c in r] for r in rows]
    if md:
        esc = [[c.replace("|", "\\|") for c in r] for r in rows]
        return ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"] + [
            "| " + " | ".join(r) + " |" for r in esc
        ]
    widths = [max(len(str(h)), *(len(r[i]) for r in rows)) if rows else len(str(h)) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*head).rstrip(), fmt.format(*("-" * w for w in widths))] + [fmt.format(*r).rstrip() for r in rows]
