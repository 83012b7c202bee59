"""Synthesis coverage: for how many of the advisor's hand-write suggestions can adcli write the rule itself?

For every program of benchmarks/corpus/ (those in ``PROGRAMS`` of corpus/run.py, run as run.py runs
them: the script with no arguments, from the corpus folder) and every profiles/ case (its ``main()``,
from the repository root), in a fresh process with BLAS pinned to one thread before anything loads:

1. ``adcli profile --replay-budget SECONDS`` into a temporary folder. The budget is for all the
   replays of the run, the in-program what-ifs included (``adcli profile --help``); a signature the
   what-ifs do not reach before it runs out is never tried, and its ``synthesis`` stays null. The
   default here (60 s) is far above what any program needs, so that every signature gets its
   what-if (2 s leaves corpus/rnn's and corpus/lstm's hand-writes untried); a hand-write left
   untried is reported all the same, with why (the profile's own record of the signature: not
   replayed, its replay failed, an output no rule can serve, the budget gone);
2. ``adcli suggest --all --format json`` of that profile; the hand-write suggestions on user
   functions (tier "user") are kept, each with what became of its synthesis (adcli/synth, tried in
   the profile's what-ifs: "verified" when the synthesized rule agreed with the derived gradient on
   the sample, else why not), the measured saving per run of the synthesized rule in the program
   (``synthesized_saving_s``: the gradients with and without it, timed in turn; negative when
   slower) against the advisor's estimate for a rule optimised by hand (``saving_s``). Both are in
   the advisor's seconds per run, as is the gradient they are shares of (``saving_s / share``); the
   signature's derived time per run (calls x its replayed gradient per call) is the replay's, and
   the what-if's own ratio, the program's gradient with the synthesized rule over without
   (``replay.program_synth_s / replay.program_s`` of the profile), needs no scale at all.

The output: a table per program, a table per suggestion, and the totals: the share of hand-writes
(all of them, and each program's top one) synthesized and verified; the refusals grouped by the
construct synthesis stopped at ("cannot synthesize NAME: <construct> at FILE:LINE"), with the
programs where each occurs; the failed verifications in full; of the verified, how many saved time
in the program and the median of synthesized saving / estimated saving. A program that fails to
profile is reported (the last line of its error) and the others go on.

    python benchmarks/synth_coverage.py                          # every program, ~5 min
    python benchmarks/synth_coverage.py --programs rnn,corpus/gmm --format markdown
    python benchmarks/synth_coverage.py --json /tmp/synth.json   # also the raw per-suggestion records

``--programs`` takes names as listed (``corpus/rnn``, ``profiles/rnn``) or bare (``rnn``: every
program of that name). ``--jobs N`` profiles N programs at once (default 1: the timings are the
what-ifs' own, and a shared 2-core machine gives them no second core to spare).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
             "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"  # BLAS pinned to one thread before NumPy loads (inherited by every child)

import argparse  # noqa: E402
import ast  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPUS = HERE / "corpus"
PROFILES = ROOT / "profiles"
DEFAULT_BUDGET = 60.0
REFUSAL = re.compile(r"cannot synthesize (?P<name>[^:]+?): (?P<construct>.*) at (?P<where>[^ ]+:\d+)$", re.S)
SERVABLE = (None, "value", "tuple")  # the outputs a rule can serve (adcli.profiler.replay._what_if_rules)


# --- the programs --------------------------------------------------------------------------------


def corpus_names() -> list[str]:
    """``PROGRAMS`` of corpus/run.py, read (not run)."""
    for node in ast.parse((CORPUS / "run.py").read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "PROGRAMS":
            return list(ast.literal_eval(node.value))
    raise RuntimeError("benchmarks/corpus/run.py defines no PROGRAMS")


def programs() -> list[dict]:
    """Every program: its name, its script and the folder it runs from (as corpus/run.py runs the
    corpus; a profiles/ case from the repository root, as its README says)."""
    out = [{"program": f"corpus/{n}", "script": CORPUS / f"{n}.py", "cwd": CORPUS} for n in corpus_names()]
    out += [{"program": f"profiles/{p.stem}", "script": p, "cwd": ROOT} for p in sorted(PROFILES.glob("*.py"))
            if 'if __name__ == "__main__"' in p.read_text()]
    return out


def select(everything: list[dict], names: str) -> tuple[list[dict], list[str]]:
    """The programs ``names`` (comma-separated, full or bare) selects, and the names matching none."""
    wanted = [x.strip() for x in names.split(",") if x.strip()]
    if not wanted:
        return everything, []
    chosen = [p for p in everything if any(w in (p["program"], p["program"].split("/")[1]) for w in wanted)]
    unknown = [w for w in wanted if not any(w in (p["program"], p["program"].split("/")[1]) for p in everything)]
    return chosen, unknown


# --- one program ---------------------------------------------------------------------------------


def last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "(no output)"


def adcli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=path)
    return subprocess.run([sys.executable, "-m", "adcli", "-q", *args], cwd=cwd, env=env, capture_output=True,
                          text=True)


def profile_program(prog: dict, budget: float, tmp: str) -> dict:
    """Profile ``prog`` once and ask for its advice: the program's record, with its user-tier
    hand-write suggestions (``records``), or ``error`` (the last line of what failed)."""
    name = prog["program"]
    out = os.path.join(tmp, name.replace("/", "__") + ".json")
    rec: dict = {"program": name, "error": None, "records": []}
    t0 = time.perf_counter()
    run = adcli(["profile", "-o", out, "--force", "--replay-budget", f"{budget:g}", str(prog["script"])], prog["cwd"])
    rec["profile_s"] = time.perf_counter() - t0
    if run.returncode != 0 or not os.path.isfile(out):
        rec["error"] = f"adcli profile (exit {run.returncode}): {last_line(run.stderr or run.stdout)}"
        return rec
    advice = adcli(["suggest", out, "--all", "--format", "json"], prog["cwd"])
    if advice.returncode != 0:
        rec["error"] = f"adcli suggest (exit {advice.returncode}): {last_line(advice.stderr or advice.stdout)}"
        return rec
    try:
        suggestions = json.loads(advice.stdout)
    except ValueError as exc:
        rec["error"] = f"adcli suggest printed no JSON ({exc}): {last_line(advice.stdout)}"
        return rec
    from adcli.data.store import load  # here, not above: NumPy loads after the threads are pinned

    data = load(out).to_json()
    by_sig = {s["signature"]: s for s in data["signatures"]}
    rec["notes"] = list(data.get("notes") or [])
    rec["unreplayed"] = data.get("unreplayed") or 0
    rec["replay_s"] = data.get("replay_s")
    rec["suggest_stderr"] = [ln for ln in advice.stderr.strip().splitlines() if ln.strip()]
    users = [s for s in suggestions if s.get("tier") == "user"]
    rec["user_signatures"] = len(users)
    rec["user_verified"] = sum(s.get("synthesis") == "verified" for s in users)
    rec["hand_writes_other_tiers"] = sum(s["action"] == "hand-write" and s.get("tier") != "user" for s in suggestions)
    rank = 0
    for s in suggestions:
        if s["action"] != "hand-write" or s.get("tier") != "user":
            continue
        rank += 1
        sig = by_sig.get(s["signature"])
        replay = (sig or {}).get("replay") or {}
        rec["records"].append({
            "program": name, "rank": rank, "top": rank == 1, "signature": s["signature"],
            "function": s.get("function"), "synthesis": s.get("synthesis"),
            "synthesized_saving_s": s.get("synthesized_saving_s"),
            "synthesized_saving_low_s": s.get("synthesized_saving_low_s"),
            "synthesized_saving_high_s": s.get("synthesized_saving_high_s"),
            "saving_s": s.get("saving_s"), "share": s.get("share"), "calls": s.get("calls"),
            "derived_s": s.get("derived_s"), "primal_s": s.get("primal_s"),
            "program_s": replay.get("program_s"), "program_synth_s": replay.get("program_synth_s"),
            "synth_gap_s": replay.get("synth_gap_s"), "profile_synthesis": replay.get("synthesis"),
            "gradient_s": s["saving_s"] / s["share"] if s.get("saving_s") and s.get("share") else None,
            "untried": untried_reason(sig, rec["notes"]) if s.get("synthesis") is None else None,
        })
    return rec


def untried_reason(sig: dict | None, notes: list[str]) -> str:
    """Why a signature's synthesis was never tried, from the profile's record of it."""
    if sig is None:
        return "its signature is not in the profile"
    r = sig.get("replay")
    budget_gone = any("budget ran out" in n or "replays stopped" in n for n in notes)
    if r is None:
        return "not replayed" + (" (the replay budget ran out)" if budget_gone
                                  else " (not among the signatures replayed)")
    if r.get("error"):
        return f"its replay failed: {r['error']}"
    if sig.get("output") not in SERVABLE:
        return f"its output ({sig.get('output')}) is not one a rule can serve"
    if r.get("program_s") is None and budget_gone:
        return "the replay budget ran out before its what-if"
    return "no what-if in the program (no replayable root calls it, or the what-if failed)"


# --- the tables ----------------------------------------------------------------------------------


def short(sig: str) -> str:
    return sig.replace("__main__:", "").replace("__main__.", "").replace("<locals>.", "")


def ms(x: float | None) -> str:
    return "—" if x is None else f"{1e3 * x:.1f}"


def pct(k: int, n: int) -> str:
    return f"{k} of {n}" + (f" ({100 * k / n:.0f}%)" if n else "")


def refusal(text: str) -> tuple[str, str] | None:
    """(construct, FILE:LINE) of a "cannot synthesize NAME: <construct> at FILE:LINE" refusal."""
    m = REFUSAL.search(text)
    return (m["construct"], m["where"]) if m else None


def outcome(r: dict) -> str:
    """The synthesis cell: verified, refused (at which construct), failed verification, or untried."""
    s = r["synthesis"]
    if s is None:
        return f"not tried: {r['untried']}"
    if s == "verified":
        return "verified"
    if s.startswith("synthesized, but it failed verification"):
        return "FAILED verification (below)"
    found = refusal(s)
    if found:
        return f"refused: {found[0]} ({found[1]})"
    return s.replace("not synthesized: ", "refused: ", 1)


def ratio(r: dict) -> float | None:
    syn, est = r["synthesized_saving_s"], r["saving_s"]
    return syn / est if syn is not None and est else None


def grid(cols: list[str], rows: list[list[str]], fmt: str, left: tuple = (0,)) -> str:
    if fmt == "markdown":
        align = "|" + "|".join("---" if i in left else "---:" for i in range(len(cols))) + "|"
        out = ["| " + " | ".join(cols) + " |", align]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
        return "\n".join(out)
    widths = [max(len(c), *(len(row[i]) for row in rows)) if rows else len(c) for i, c in enumerate(cols)]
    line = lambda row: "  ".join(v.ljust(w) if i in left else v.rjust(w)  # noqa: E731
                                 for i, (v, w) in enumerate(zip(row, widths))).rstrip()
    return "\n".join([line(cols), "  ".join("-" * w for w in widths)] + [line(row) for row in rows])


def heading(text: str, fmt: str) -> str:
    return f"### {text}" if fmt == "markdown" else f"{text}\n{'=' * len(text)}"


def bullet(text: str, fmt: str, depth: int = 0) -> str:
    return "  " * depth + (f"- {text}" if fmt == "markdown" else f"  {text}")


def code(text: str, fmt: str) -> str:
    return f"`{text}`" if fmt == "markdown" else text


def render(progs: list[dict], budget: float, fmt: str) -> str:
    records = [r for p in progs for r in p["records"]]
    out = [heading(f"Programs (adcli profile --replay-budget {budget:g}, one fresh process each)", fmt), ""]
    rows = []
    for p in progs:
        if p["error"]:
            rows.append([p["program"], f"{p['profile_s']:.1f}", "—", "—", "—", "—", "—", "PROFILE FAILED"])
            continue
        rs = p["records"]
        budget_notes = [n for n in p["notes"] if "budget" in n]
        note = "; ".join(filter(None, [f"{p['unreplayed']} signature(s) not replayed" if p["unreplayed"] else "",
                                       "the replay budget ran out" if budget_notes else ""]))
        rows.append([p["program"], f"{p['profile_s']:.1f}", str(len(rs)),
                     str(sum(r["synthesis"] == "verified" for r in rs)),
                     str(sum(r["synthesis"] is None for r in rs)),
                     outcome(rs[0]) if rs else "—", f"{p['user_verified']} of {p['user_signatures']}", note])
    out.append(grid(["program", "profile+advice (s)", "user hand-writes", "verified", "not tried",
                     "top hand-write's synthesis", "user signatures verified (all actions)", "notes"],
                    rows, fmt, left=(0, 5, 7)))
    failed = [p for p in progs if p["error"]]
    if failed:
        out += ["", "Programs that failed to profile:"] + [bullet(f"{p['program']}: {p['error']}", fmt) for p in failed]
    other = [p for p in progs if not p["error"] and p.get("hand_writes_other_tiers")]
    if other:
        out += ["", "Hand-writes outside the user tier (left out): "
                + ", ".join(f"{p['program']} ({p['hand_writes_other_tiers']})" for p in other)]

    out += ["", heading("Hand-write suggestions on user functions", fmt), "",
            "Savings and times are seconds per run of the program, in ms: *synthesized* is the synthesized rule's "
            "measured saving in the program (negative: slower than derived), *estimated* the advisor's for a rule "
            "optimised by hand, *gradient* the whole gradient they are shares of (the advisor's seconds); *derived* "
            "the signature's derived gradient (calls x replayed time per call); *what-if* the program's gradient "
            "with the synthesized rule over without, as measured (above 1: slower).", ""]
    rows = [[r["program"], str(r["rank"]), code(short(r["signature"]), fmt), outcome(r), ms(r["synthesized_saving_s"]),
             ms(r["saving_s"]), "—" if ratio(r) is None else f"{ratio(r):.2f}",
             ms(r["gradient_s"]), ms(r["derived_s"] * r["calls"] if r["derived_s"] is not None and r["calls"]
                                     else None),
             f"{r['program_synth_s'] / r['program_s']:.2f}" if r["program_synth_s"] and r["program_s"] else "—"]
            for r in records]
    out.append(grid(["program", "#", "signature", "synthesis", "synthesized (ms)", "estimated (ms)",
                     "synthesized / estimated", "gradient (ms)", "derived (ms)", "what-if: synthesized / derived"],
                    rows, fmt, left=(0, 2, 3))
               if rows else "(none)")
    out += ["", *totals(progs, records, fmt)]
    return "\n".join(out)


def totals(progs: list[dict], records: list[dict], fmt: str) -> list[str]:
    tops = [r for r in records if r["top"]]
    verified = [r for r in records if r["synthesis"] == "verified"]
    untried = [r for r in records if r["synthesis"] is None]
    ok = [p for p in progs if not p["error"]]
    out = [heading("Totals", fmt), "",
           bullet(f"programs: {len(progs)}, profiled {len(ok)}, failed {len(progs) - len(ok)}; "
                  f"with a hand-write on a user function: {len(tops)}", fmt),
           bullet(f"hand-write suggestions synthesized and verified: {pct(len(verified), len(records))}", fmt),
           bullet(f"top hand-write per program synthesized and verified: "
                  f"{pct(sum(r['synthesis'] == 'verified' for r in tops), len(tops))}", fmt),
           bullet(f"hand-writes never tried (synthesis null): {len(untried)}"
                  + (" — raise --replay-budget if the reason is the budget" if untried else ""), fmt)]
    out += [bullet(f"{r['program']} {code(short(r['signature']), fmt)}: {r['untried']}", fmt, 1) for r in untried]

    groups: dict = {}
    for r in records:
        s = r["synthesis"]
        if s is None or s == "verified" or s.startswith("synthesized, but"):
            continue
        found = refusal(s)
        key = found[0] if found else s.replace("not synthesized: ", "", 1)
        groups.setdefault(key, []).append(r)
    out += ["", heading("Refusals by construct", fmt), ""]
    if groups:
        rows = [[code(k, fmt), str(len(v)), str(sum(r["top"] for r in v)),
                 ", ".join(dict.fromkeys(f"{r['program']} ({r['function'] or short(r['signature'])})" for r in v))]
                for k, v in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
        out.append(grid(["construct", "hand-writes", "of them top", "programs (function)"], rows, fmt, left=(0, 3)))
    else:
        out.append("(none)")

    failed = [r for r in records if r["synthesis"] and r["synthesis"].startswith("synthesized, but")]
    out += ["", heading("Failed verifications", fmt), ""]
    out += [bullet(f"{r['program']} {code(short(r['signature']), fmt)}: {r['synthesis']}", fmt)
            for r in failed] or ["(none)"]

    timed = [r for r in verified if r["synthesized_saving_s"] is not None]
    ratios = [x for x in (ratio(r) for r in timed) if x is not None]
    top_timed = [r for r in timed if r["top"]]
    out += ["", heading("The verified rules in the program", fmt), "",
            bullet(f"verified with a measured saving: {len(timed)} of {len(verified)}", fmt),
            bullet(f"saved time in the program (synthesized saving > 0): "
                   f"{pct(sum(r['synthesized_saving_s'] > 0 for r in timed), len(timed))}; of the top hand-writes "
                   f"{pct(sum(r['synthesized_saving_s'] > 0 for r in top_timed), len(top_timed))}", fmt),
            bullet("synthesized saving / estimated saving: median "
                   + (f"{statistics.median(ratios):.2f} over {len(ratios)} "
                      f"(range {min(ratios):.2f} to {max(ratios):.2f})" if ratios else "— (none)"), fmt)]
    slow = [r["program_synth_s"] / r["program_s"] for r in verified if r["program_synth_s"] and r["program_s"]]
    out.append(bullet("the program's gradient with the synthesized rule / without (the what-if's own times): median "
                      + (f"{statistics.median(slow):.2f} over {len(slow)} (range {min(slow):.2f} to {max(slow):.2f})"
                         if slow else "— (none)"), fmt))
    return out


# --- main ----------------------------------------------------------------------------------------


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--programs", default="",
                   help="comma-separated: corpus/NAME, profiles/NAME or a bare NAME (default: all)")
    p.add_argument("--replay-budget", type=float, default=DEFAULT_BUDGET,
                   help="adcli profile's --replay-budget, seconds for all the replays of a run "
                        f"(default {DEFAULT_BUDGET:g})")
    p.add_argument("--format", choices=("plain", "markdown"), default="plain")
    p.add_argument("--jobs", type=int, default=1, help="programs profiled at once (default 1)")
    p.add_argument("--json", help="also write the raw per-suggestion records (and the programs') as JSON to this file")
    a = p.parse_args(argv)
    if a.jobs < 1 or not a.replay_budget > 0:
        p.error("--jobs must be at least 1 and --replay-budget positive")
    chosen, unknown = select(programs(), a.programs)
    if unknown:
        p.error(f"unknown program(s) {', '.join(unknown)}")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="adcli-synth-") as tmp:

        def one(prog: dict) -> dict:
            t1 = time.perf_counter()
            try:
                rec = profile_program(prog, a.replay_budget, tmp)
            except Exception as exc:  # noqa: BLE001 - an unreadable profile or advice: reported, the others go on
                rec = {"program": prog["program"], "records": [], "profile_s": time.perf_counter() - t1,
                       "error": f"reading its profile or advice: {type(exc).__name__}: {last_line(str(exc))}"}
            rs = rec["records"]
            ok = sum(r["synthesis"] == "verified" for r in rs)
            state = rec["error"] or f"{len(rs)} hand-write(s), {ok} verified"
            print(f"  {rec['program']}: {rec['profile_s']:.1f} s; {state}", file=sys.stderr, flush=True)
            return rec

        with ThreadPoolExecutor(max_workers=a.jobs) as pool:
            progs = list(pool.map(one, chosen))
    wall = time.perf_counter() - t0
    print(render(progs, a.replay_budget, a.format))
    print(f"\nTotal runtime {wall:.0f} s ({wall / 60:.1f} min) for {len(progs)} program(s), --jobs {a.jobs}.")
    if a.json:
        raw = {"replay_budget": a.replay_budget, "runtime_s": wall,
               "records": [r for x in progs for r in x["records"]],
               "programs": [{k: v for k, v in x.items() if k != "records"} for x in progs]}
        Path(a.json).write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
