"""A fuzzing campaign: worker processes generate and check programs, shrink failures, and report
counts and findings to the parent, which prints a live count and the final table."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import queue as queue_mod
import signal
import sys
import time
from collections import Counter

from adcli.engine import memory_paths_from, mutation

from . import grammar
from .grammar import generate
from .oracle import CATEGORIES, FAILURES, run
from .program import api_tokens
from .report import file_name, finding_key, script
from .shrink import shrink

PROGRESS_EVERY = 2.0  # seconds between a worker's progress messages
SHRINKS_PER_KEY = 3  # shrink at most this many failures with the same unshrunk key, per worker
PROGRAM_TIMEOUT = 60  # seconds for generating and checking one program


def worker(wid, jobs, seed0, count, deadline, q, do_shrink, shapes=None):
    """Check programs seed0 + wid, seed0 + wid + jobs, ... until ``count`` or ``deadline``
    (``shapes``: the share of "shapes" programs, grammar.SHAPES_SHARE when None)."""
    if shapes is not None:
        grammar.SHAPES_SHARE = shapes
    memory_paths_from(1)  # trimmed nodes, shared copies, in-place VJPs at every size, as for large arrays
    mutation._ROWS_MIN = 1  # repeated rows summed by sorting at every row width, as wide rows are
    stats = {"counts": Counter(), "refusals": Counter(), "kinds": Counter(), "kinds_refused": Counter(),
             "kinds_failed": Counter(), "fuzzer_errors": Counter(), "programs": 0, "statements": 0,
             "seconds_checking": 0.0, "seconds_shrinking": 0.0, "counts_shapes": Counter(), "counts_classic": Counter()}
    if hasattr(signal, "SIGALRM"):
        signal.signal(signal.SIGALRM, _timeout)
    shrunk: Counter = Counter()
    known: list = []  # (category, check, NumPy functions and operators) of the minimal programs found
    seed, last = seed0 + wid, time.monotonic()
    started = last
    while (count is None or stats["programs"] < count) and time.monotonic() < deadline:
        t0 = time.monotonic()
        try:
            _alarm(PROGRAM_TIMEOUT)  # a hang inside adcli surfaces as a crash (TimeoutError)
            prog = generate(seed)
            o = run(prog)
        except Exception as e:  # a bug in the fuzzer itself: count it, keep going
            stats["fuzzer_errors"][f"seed {seed}: {type(e).__name__}: {e}"[:200]] += 1
            seed += jobs
            continue
        finally:
            _alarm(0)
        stats["seconds_checking"] += time.monotonic() - t0
        _count(stats, prog, o)
        if o.failed and do_shrink and _worth_shrinking(o, prog, shrunk, known, stats, started):
            t1 = time.monotonic()
            try:
                _alarm(PROGRAM_TIMEOUT + 40)
                finding = make_finding(prog, o, max(5.0, min(30.0, deadline - t1)))
                known.append((o.category, o.check, frozenset(finding["tokens"])))
                q.put(("finding", wid, finding))
            except Exception as e:
                stats["fuzzer_errors"][f"shrinking seed {seed}: {type(e).__name__}: {e}"[:200]] += 1
            finally:
                _alarm(0)
            stats["seconds_shrinking"] += time.monotonic() - t1
        seed += jobs
        if time.monotonic() - last > PROGRESS_EVERY:
            q.put(("progress", wid, dict(stats["counts"])))
            last = time.monotonic()
    stats["generator_errors"] = dict(grammar.GENERATOR_ERRORS)
    stats["statements_rejected"] = Counter(grammar.REJECTED)
    q.put(("done", wid, stats))


def _alarm(seconds: int) -> None:
    if hasattr(signal, "alarm"):
        signal.alarm(seconds)


def _timeout(signum, frame):
    raise TimeoutError(f"no answer within {PROGRAM_TIMEOUT} s")


def _worth_shrinking(o, prog, shrunk, known, stats, started) -> bool:
    """Shrink a failure unless it looks like one already found (same failure, and every NumPy
    function and operator of a known minimal program used), or shrinking has used half the
    worker's time."""
    if stats["seconds_shrinking"] > 0.5 * (time.monotonic() - started) + 10:
        return False
    tokens = api_tokens(prog.stmts)
    if any(cat == o.category and check == o.check and ts <= tokens for cat, check, ts in known):
        return False
    shrunk[o.key] += 1
    return shrunk[o.key] <= SHRINKS_PER_KEY or o.category not in ("crash", "refused")


def _count(stats, prog, o):
    stats["programs"] += 1
    stats["statements"] += len(prog.stmts)
    stats["counts"][o.category] += 1
    stats["counts"]["numpy-error"] += prog.notes.get("regenerated", 0)
    stats["kinds"].update(set(prog.kinds))
    stats["counts_shapes" if prog.notes.get("shapes") else "counts_classic"][o.category] += 1
    if o.category in ("refused", "subset-refusal", "layout-refusal"):
        stats["refusals"][f"{o.category}: {o.detail}"] += 1
    if o.category == "refused":
        stats["kinds_refused"].update(set(prog.kinds))
    if o.failed:
        stats["kinds_failed"].update(set(prog.kinds))


def make_finding(prog, outcome, seconds=30.0) -> dict:
    small, o = shrink(prog, outcome, seconds=seconds)
    key = f"{outcome.category}|{outcome.check}|" + finding_key(o, small)
    return {"key": key, "category": outcome.category, "check": outcome.check, "detail": o.detail, "seed": prog.seed,
            "shrunk_as": f"{o.category} ({o.check})", "file": file_name(key, outcome.category),
            "script": script(small, o, found_as=outcome), "source": small.body(), "kinds": small.kinds,
            "tokens": sorted(api_tokens(small.stmts)),
            "original_statements": len(prog.stmts), "layout": o.layout, "argnums": o.argnums}


def campaign(seconds=None, programs=None, seed=0, jobs=2, shrink_failures=True, live=True, shapes=None) -> dict:
    """Run a campaign; returns the merged statistics and the deduplicated findings."""
    deadline = time.monotonic() + (seconds if seconds is not None else 10 ** 9)
    ctx = mp.get_context("fork" if sys.platform != "win32" else "spawn")
    q = ctx.Queue()
    per = [None if programs is None else programs // jobs + (w < programs % jobs) for w in range(jobs)]
    procs = [ctx.Process(target=worker, args=(w, jobs, seed, per[w], deadline, q, shrink_failures, shapes), daemon=True)
             for w in range(jobs)]
    start = time.monotonic()
    for p in procs:
        p.start()
    progress, finals, findings = {}, {}, {}
    last_print = 0.0
    while len(finals) < jobs:
        try:
            kind, wid, payload = q.get(timeout=1.0)
        except queue_mod.Empty:
            if not any(p.is_alive() for p in procs) and q.empty():
                break  # a worker died without reporting
            continue
        if kind == "progress":
            progress[wid] = payload
        elif kind == "finding":
            f = findings.setdefault(payload["key"], payload)
            f["hits"] = f.get("hits", 0) + 1
        else:
            finals[wid] = payload
            progress[wid] = dict(payload["counts"])
        if live and time.monotonic() - last_print > PROGRESS_EVERY:
            _live(progress, time.monotonic() - start)
            last_print = time.monotonic()
    for p in procs:
        p.join(timeout=5)
    if live:
        print(file=sys.stderr)
    return _merge(finals, findings, time.monotonic() - start, jobs, seed)


def _live(progress, elapsed):
    total = Counter()
    for c in progress.values():
        total.update(c)
    n = sum(v for k, v in total.items() if k != "numpy-error")
    parts = [f"{k} {total[k]}" for k in CATEGORIES if total.get(k)]
    print(f"\r[{elapsed:6.0f}s] {n} programs: " + ", ".join(parts) + " " * 8, end="", file=sys.stderr, flush=True)


def _merge(finals, findings, elapsed, jobs, seed) -> dict:
    merged = {"counts": Counter(), "refusals": Counter(), "kinds": Counter(), "kinds_refused": Counter(),
              "kinds_failed": Counter(), "generator_errors": Counter(), "fuzzer_errors": Counter(), "programs": 0,
              "statements_rejected": Counter(), "statements": 0,
              "counts_shapes": Counter(), "counts_classic": Counter(), "seconds_checking": 0.0, "seconds_shrinking": 0.0}
    for st in finals.values():
        for k, v in st.items():
            if isinstance(merged.get(k), Counter):
                merged[k].update(v)
            else:
                merged[k] += v
    merged.update(elapsed=elapsed, jobs=jobs, seed=seed, workers_reported=len(finals),
                  statement_kinds=len(grammar.kinds(shapes=True)), findings=_distinct(findings.values()))
    return merged


def _distinct(findings) -> list:
    """Findings with a known smaller one (same failure, a subset of its NumPy functions) merged
    into that one: most likely the same bug with statements the shrinker could not remove."""
    kept: list = []
    for f in sorted(findings, key=lambda f: (len(f["tokens"]), len(f["kinds"]), f["file"])):
        same = next((k for k in kept if k["category"] == f["category"] and k["check"] == f["check"]
                     and (f["category"] in ("crash", "refused") and k["detail"] == f["detail"]
                          or f["category"] not in ("crash", "refused") and set(k["tokens"]) <= set(f["tokens"]))), None)
        if same is None:
            kept.append(dict(f, merged=[]))
        else:
            same["hits"] = same.get("hits", 1) + f.get("hits", 1)
            same["merged"].append(f["file"])
    return kept


def table(stats) -> str:
    """The summary table of a campaign."""
    c, n = stats["counts"], max(stats["programs"], 1)
    rate = stats["programs"] / max(stats["seconds_checking"] / max(stats["jobs"], 1), 1e-9)
    lines = [f"programs run      {stats['programs']:8d}   ({stats['elapsed']:.0f} s wall, {stats['jobs']} jobs, "
             f"{stats['programs'] / max(stats['elapsed'], 1e-9):.1f} programs/s overall, {rate:.1f}/s excluding shrinking; "
             f"{stats['statement_kinds']} statement kinds, {stats['statements'] / n:.1f} statements/program)"]
    for cat in CATEGORIES:
        mark = "  <-- FAILURE" if cat in FAILURES and c.get(cat) else ""
        extra = " (regenerated)" if cat == "numpy-error" else ""
        share = "" if cat == "numpy-error" else f"  {100 * c.get(cat, 0) / n:5.1f}%"
        lines.append(f"{cat + extra:<26}{c.get(cat, 0):8d}{share}{mark}")
        if cat in ("refused", "subset-refusal", "layout-refusal"):
            for sub, k in sorted(((s, k) for s, k in stats["refusals"].items() if s.startswith(cat + ": ")),
                                 key=lambda sk: -sk[1]):
                lines.append(f"    {k:7d} {100 * k / n:5.1f}%  {sub[len(cat) + 2:]}")
    for fam in ("classic", "shapes"):
        fc = stats.get(f"counts_{fam}") or {}
        lines.append(f"  {fam} programs: {sum(fc.values())}: " + ", ".join(f"{k} {fc[k]}" for k in CATEGORIES if fc.get(k)))
    rej = stats["statements_rejected"]
    lines.append(f"candidate statements rejected while generating: {rej.get('numpy-error', 0)} NumPy errors, "
                 f"{rej.get('bad-values', 0)} non-finite or too large values")
    if stats["generator_errors"]:
        lines.append(f"generator errors (bugs in the grammar): {sum(stats['generator_errors'].values())}")
    for err, k in stats["fuzzer_errors"].items():
        lines.append(f"fuzzer error ({k}x): {err}")
    lines.append(f"distinct findings: {len(stats['findings'])}")
    for f in sorted(stats["findings"], key=lambda f: f["file"]):
        lines.append(f"    {f['file']}  {f['category']} ({f['check']}{': ' + f['detail'] if f['detail'] else ''}); "
                     f"{len(f['kinds'])} statement(s): {', '.join(f['kinds'])}")
    return "\n".join(lines)


def write_findings(stats, folder) -> list:
    os.makedirs(folder, exist_ok=True)
    paths = []
    for f in stats["findings"]:
        path = os.path.join(folder, f["file"])
        with open(path, "w") as fh:
            fh.write(f["script"])
        paths.append(path)
    return paths


def write_summary(stats, path) -> None:
    out = {k: (dict(v) if isinstance(v, Counter) else v) for k, v in stats.items() if k != "findings"}
    out["findings"] = [{k: v for k, v in f.items() if k != "script"} for f in stats["findings"]]
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1, sort_keys=True)
