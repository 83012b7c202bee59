"""The corpus table: does the advice hold on programs written elsewhere, and is its top pick stable?

For each program of benchmarks/corpus/ (ports of published examples and textbook models, written
as users write them; each defines ``gradient_case()``, one gradient of its training loop):

1. profile it ``--profiles`` times (default 4), each ``adcli profile`` in a fresh process, and ask
   ``adcli suggest --all --format json`` each time: the top pick (the first hand-write or import;
   "keep derived" when there is none) and the predicted saving of the expert rule's target (its
   ``share`` of the gradient time);
2. in a fresh process, with BLAS pinned to one thread before NumPy loads, load the program as
   ``adcli profile`` does (every function a dispatch point, ``adcli.profiler.load_script``) and its
   expert rule (rules/<program>_rules.py), check that the gradient with the rule matches the
   derived one, then time the gradient with and without the rule in interleaved rounds (each round
   a block of gradients lasting ~``--block`` seconds for each, the order alternating); the
   measured saving of a round is ``1 - with / without``.

The table (program, top pick, stable over the profiles?, predicted saving, measured saving median
and range over the rounds, ratio predicted / measured) is printed and written as markdown to
RESULTS.md (``--no-write`` leaves it).

    python benchmarks/corpus/run.py
    python benchmarks/corpus/run.py --programs rnn,lstm --repeats 15 --profiles 2
    python benchmarks/corpus/run.py --measure-only          # no profiles: the measurements alone
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"  # BLAS pinned to one thread before NumPy loads (inherited by every child)

import argparse  # noqa: E402
import ast  # noqa: E402
import datetime  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
RULES = HERE / "rules"
PROGRAMS = ("neural_net", "gaussian_process", "gmm", "rnn", "lstm", "fluidsim", "hmm_em", "variational_autoencoder",
            "ode_net", "black_box_svi", "fisher_kpp", "heat_equation", "spring_mass", "logistic_regression")
ACTIONS = ("hand-write", "import")


# --- profiles -----------------------------------------------------------------------------------


def profile_once(program: str, tmp: str, k: int) -> dict:
    """One fresh ``adcli profile`` and ``adcli suggest --all`` of ``program``: its suggestions."""
    out = os.path.join(tmp, f"{program}_{k}.json")
    env = dict(os.environ, NO_COLOR="1")
    cmd = [sys.executable, "-m", "adcli", "-q", "profile", "-o", out, "--force", str(HERE / f"{program}.py")]
    run = subprocess.run(cmd, cwd=HERE, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"adcli profile {program} failed: {run.stderr.strip()[-500:]}")
    run = subprocess.run([sys.executable, "-m", "adcli", "-q", "suggest", out, "--all", "--format", "json"],
                         cwd=HERE, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"adcli suggest {program} failed: {run.stderr.strip()[-500:]}")
    return {"suggestions": json.loads(run.stdout), "violations": breaches(out)}


def breaches(path: str) -> list[str]:
    """What the advice on the profile at ``path`` says that contradicts itself (adcli.advisor.invariants)."""
    from adcli.advisor import suggest
    from adcli.advisor.invariants import violations
    from adcli.data.store import load

    suggestions, summary = suggest([load(path)])
    return violations(suggestions, summary.gradient_s)


def written_of(suggestions: list, target: str) -> float | None:
    """The predicted saving of ``target``'s rule with its forward as the program wrote it (the
    other end of a hand-write's range, ``saving_written_s``), when this profile advises it; its
    predicted share when no lean forward is credited."""
    if " + " in target:
        parts = [written_of(suggestions, t) for t in target.split(" + ")]
        return None if None in parts else sum(parts)
    for s in suggestions:
        if s["signature"] == target and s["action"] in ACTIONS:
            w = s.get("saving_written_s")
            return s["share"] if w is None or not s["saving_s"] else s["share"] * w / s["saving_s"]
    return None


def close_calls(suggestions: list) -> int:
    """1 when this profile's top pick was a close call against its caller's rule, else 0."""
    top = next((s for s in suggestions if s["action"] in ACTIONS), None)
    return int(bool(top and top.get("close_call")))


def top_pick(suggestions: list) -> tuple[str, float]:
    """The advisor's first advised rule (its table's first row: the largest saving, whatever the
    tier) and its predicted share; "keep derived" and 0 when it advises none."""
    for s in suggestions:
        if s["action"] in ACTIONS:
            return f"{s['action']} {s['signature']}", s["share"]
    return "keep derived" + (f" (best: {suggestions[0]['signature']})" if suggestions else ""), 0.0


def share_of(suggestions: list, target: str) -> float | None:
    """The predicted saving (share of the gradient time) of ``target``'s rule when this profile's
    advice advises it (hand-write or import, first or not); None when it does not (kept derived,
    or covered by a rule for its caller)."""
    if " + " in target:  # several rules (rules/<program>_rules.py's TARGET): advised together
        parts = [share_of(suggestions, t) for t in target.split(" + ")]
        return None if None in parts else sum(parts)
    for s in suggestions:
        if s["signature"] == target and s["action"] in ACTIONS:
            return s["share"]
    return None


# --- measurement (a child process per program) ---------------------------------------------------


def load_rules(program: str):
    """Import rules/<program>_rules.py; returns (the module, the rules it declared)."""
    from adcli.engine.registry import declared_rules

    before = {id(r) for r in declared_rules()}
    path = RULES / f"{program}_rules.py"
    spec = importlib.util.spec_from_file_location(f"corpus_rules_{program}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, [r for r in declared_rules() if id(r) not in before]


def _leaves(x):
    if isinstance(x, dict):
        return [v for k in sorted(x) for v in _leaves(x[k])]
    if isinstance(x, (list, tuple)):
        return [v for i in x for v in _leaves(i)]
    return [x]


def measure(program: str, repeats: int, block: float) -> dict:
    """Gradient seconds with and without the expert rule, interleaved, in this process."""
    import numpy as np

    import adcli
    from adcli.engine.registry import add_rule, remove_rule
    from adcli.profiler import load_script

    sys.path.insert(0, str(HERE))
    mod = load_script(str(HERE / f"{program}.py"))
    objective, args = mod.gradient_case()
    grad = adcli.grad(objective)
    derived = grad(*args)
    rules_mod, rules = load_rules(program)
    calls = [0]
    for r in rules:  # count the calls the rule serves: a rule that never serves measures nothing
        fwd = r.fwd

        def counted(*a, _fwd=fwd, **k):
            calls[0] += 1
            return _fwd(*a, **k)

        r.fwd = counted
    served = grad(*args)
    if calls[0] == 0:
        raise RuntimeError(f"{program}: the expert rule served no call")
    d, s = [np.asarray(x, dtype=float) for x in _leaves(derived)], [np.asarray(x, dtype=float) for x in _leaves(served)]
    err = max(float(np.max(np.abs(a - b)) / (np.max(np.abs(a)) + 1e-12)) for a, b in zip(d, s))
    if err > 1e-6:
        raise RuntimeError(f"{program}: the gradient with the rule differs from the derived one (relative {err:.2e})")

    def toggle(on: bool):
        for r in rules:
            (add_rule if on else remove_rule)(r)

    def per_gradient(on: bool, n: int) -> float:
        toggle(on)
        try:
            t0 = time.perf_counter()
            for _ in range(n):
                grad(*args)
            return (time.perf_counter() - t0) / n
        finally:
            toggle(True)

    for on in (False, True, False, True):  # warm both paths
        per_gradient(on, 2)
    once = max(per_gradient(False, 3), per_gradient(True, 3), 1e-6)
    n = max(1, int(block / once))
    with_s, without_s = [], []
    for i in range(repeats):
        order = (False, True) if i % 2 == 0 else (True, False)
        for on in order:
            (with_s if on else without_s).append(per_gradient(on, n))
    savings = [1 - w / wo for w, wo in zip(with_s, without_s)]
    return {"with_s": with_s, "without_s": without_s, "savings": savings, "gradients_per_block": n,
            "target": getattr(rules_mod, "TARGET", str(rules[0].signature)), "max_rel_err": err}


def measure_in_child(program: str, repeats: int, block: float) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", program, "--repeats", str(repeats), "--block", str(block)]
    run = subprocess.run(cmd, cwd=HERE, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(run.stderr.strip().splitlines()[-1] if run.stderr.strip() else f"{program}: child failed")
    return json.loads(run.stdout.strip().splitlines()[-1])


# --- the table -----------------------------------------------------------------------------------


def pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def row_of(program: str, profiles: list[dict], m: dict | None, error: str = "") -> dict:
    target = m["target"] if m else None
    tops = [top_pick(p["suggestions"]) for p in profiles]
    picks = [t[0] for t in tops]
    all_shares = [share_of(p["suggestions"], target) for p in profiles] if target else []
    shares = [x for x in all_shares if x is not None]
    predicted = statistics.median(shares) if shares else None
    written = [w for w in (written_of(p["suggestions"], target) for p in profiles) if w is not None] if target else []
    measured = statistics.median(m["savings"]) if m else None
    return {"program": program, "picks": picks, "pick_shares": [t[1] for t in tops], "target_shares": all_shares,
            "advised": len(shares), "profiles": len(profiles), "stable": len(set(picks)) == 1 if picks else None,
            "target": target, "predicted": predicted, "predicted_range": (min(shares), max(shares)) if shares else None,
            "measured": measured, "measured_range": (min(m["savings"]), max(m["savings"])) if m else None,
            "ratio": predicted / measured if predicted is not None and measured and measured > 0 else None,
            "without_ms": 1e3 * statistics.median(m["without_s"]) if m else None, "error": error,
            "violations": sum(len(p.get("violations", ())) for p in profiles),
            "measurement": m,
            "written": statistics.median(written) if written else None,
            "close_calls": sum(close_calls(p["suggestions"]) for p in profiles)}


def advise_again(row: dict, kept: Path) -> dict:
    """``row`` rebuilt from the profiles kept in ``kept`` (``<program>_<k>.json``), asked again
    in this process, and the row's own measurement of the rule."""
    from adcli.advisor import suggest
    from adcli.advisor.invariants import violations
    from adcli.data.store import load

    program = row["program"]
    profiles = []
    for path in sorted(kept.glob(f"{program}_[0-9]*.json")):
        suggestions, summary = suggest([load(str(path))])
        profiles.append({"suggestions": [x.to_dict() for x in suggestions],
                         "violations": violations(suggestions, summary.gradient_s)})
    m = row.get("measurement")
    if m is None and row.get("measured") is not None:  # rows from before the raw measurement was kept
        lo, hi = row["measured_range"]
        m = {"savings": [lo, row["measured"], hi], "without_s": [row["without_ms"] / 1e3], "target": row["target"]}
    if m is not None and row.get("target"):
        m = dict(m, target=_target_now(program) or row["target"])
    return row_of(program, profiles, m, row.get("error", ""))


def _target_now(program: str) -> str | None:
    """rules/<program>_rules.py's TARGET as the file says it now (read, not run)."""
    path = RULES / f"{program}_rules.py"
    if not path.is_file():
        return None
    for node in ast.parse(path.read_text()).body:
        if getattr(node, "targets", None) and getattr(node.targets[0], "id", None) == "TARGET":
            try:
                return ast.literal_eval(node.value)
            except ValueError:
                return None
    return None


def short(pick: str) -> str:
    return pick.replace("__main__:", "").replace("<locals>.", "")


def render(rows: list[dict]) -> str:
    head = ["program", "top pick (most frequent)", "stable over profiles?",
            "predicted saving of the measured rule, median (range)", "measured saving, median (range)",
            "ratio predicted / measured", "derived gradient (ms)"]
    out = ["| " + " | ".join(head) + " |", "|---|---|---|---:|---:|---:|---:|"]
    for r in rows:
        picks = r["picks"]
        modal = max(picks, key=picks.count) if picks else "—"  # the first of the most frequent
        stable = "—" if r["stable"] is None else ("yes" if r["stable"] else f"no ({len(set(picks))} picks in {len(picks)})")
        if r.get("close_calls"):
            stable += f"; a close call in {r['close_calls']}"
        pr = r["predicted_range"]
        pred = pct(r["predicted"]) + (f" ({pct(pr[0])} to {pct(pr[1])})" if pr and r["advised"] > 1 else "")
        if r["target"] and r["advised"] < r["profiles"]:
            pred += f"; advised in {r['advised']} of {r['profiles']}"
        if r.get("written") is not None and r["predicted"] is not None and pct(r["written"]) != pct(r["predicted"]):
            pred += f"; as written {pct(r['written'])}"
        mr = r["measured_range"]
        meas = pct(r["measured"]) + (f" ({pct(mr[0])} to {pct(mr[1])})" if mr else "")
        ratio = "—" if r["ratio"] is None else f"{r['ratio']:.2f}"
        if r["error"]:
            ratio += f" ({r['error']})"
        ms = "—" if r["without_ms"] is None else f"{r['without_ms']:.2f}"
        target = f" (rule measured: `{short(r['target'])}`)" if r["target"] and short(r["target"]) not in short(modal) else ""
        cells = [r["program"], f"`{short(modal)}`{target}", stable, pred, meas, ratio, ms]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out)


def picks_detail(rows: list[dict]) -> str:
    lines = []
    for r in rows:
        if r["stable"] is False:
            picks = zip(r["picks"], r["pick_shares"])
            lines.append(f"- {r['program']}: " + "; ".join(f"`{short(p)}` ({pct(x)})" for p, x in picks))
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--programs", default="", help="comma-separated program names (default: all)")
    p.add_argument("--repeats", type=int, default=11, help="interleaved rounds of with/without timing (default 11)")
    p.add_argument("--profiles", type=int, default=4, help="fresh profiles per program (default 4)")
    p.add_argument("--block", type=float, default=0.25, help="seconds of gradients per timing block (default 0.25)")
    p.add_argument("--measure-only", action="store_true", help="no profiles: measure the rules only")
    p.add_argument("--no-write", action="store_true", help="print the table without writing RESULTS.md")
    p.add_argument("--json", help="also write the raw rows as JSON to this file")
    p.add_argument("--keep", help="keep the profiles (and their sample inputs) in this directory")
    p.add_argument("--from-json", help="render the rows a previous --json run wrote (nothing is run)")
    p.add_argument("--advise-again", metavar="DIR",
                   help="with --from-json: the advice asked again of the profiles a --keep run left in DIR, "
                        "against the rules' timings in the JSON (an advisor change judged without new profiles)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        print(json.dumps(measure(a.child, a.repeats, a.block)))
        return 0
    programs = [x.strip() for x in a.programs.split(",") if x.strip()] or list(PROGRAMS)
    unknown = [x for x in programs if not (HERE / f"{x}.py").is_file()]
    if unknown:
        p.error(f"unknown program(s) {', '.join(unknown)}")
    rows = json.loads(Path(a.from_json).read_text()) if a.from_json else []
    if a.advise_again:
        if not a.from_json:
            p.error("--advise-again needs --from-json (the rules' timings)")
        rows = [advise_again(r, Path(a.advise_again)) for r in rows]
    with tempfile.TemporaryDirectory() as scratch:
        tmp = a.keep or scratch
        os.makedirs(tmp, exist_ok=True)
        for program in [] if a.from_json else programs:
            profiles, errors = [], []
            for k in range(0 if a.measure_only else a.profiles):
                print(f"  {program}: profile {k + 1}/{a.profiles}", file=sys.stderr, flush=True)
                try:
                    profiles.append(profile_once(program, tmp, k))
                except RuntimeError as exc:  # recorded in the table, not fatal
                    errors.append(str(exc))
            m, error = None, ""
            if (RULES / f"{program}_rules.py").is_file():
                print(f"  {program}: timing the rule", file=sys.stderr, flush=True)
                try:
                    m = measure_in_child(program, a.repeats, a.block)
                except RuntimeError as exc:
                    error = str(exc)
            else:
                error = "no expert rule"
            if errors:
                error = "; ".join(filter(None, [error, f"{len(errors)} profile(s) failed: {errors[0][-160:]}"]))
            rows.append(row_of(program, profiles, m, error))
            print(render(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    table = render(rows)
    detail = picks_detail(rows)
    print(table)
    if detail:
        print("\nPicks that changed between profiles:\n" + detail)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    if not a.no_write:
        stamp = datetime.date.today().isoformat()
        text = (f"# Corpus results\n\nWritten by `python benchmarks/corpus/run.py` on {stamp} ({a.profiles} profiles per "
                f"program, {a.repeats} interleaved timing rounds, BLAS on one thread). Ratios are predicted / measured: "
                "above 1 the advice oversells the rule, below 1 it undersells it.\n\n" + table + "\n")
        if detail:
            text += "\nPicks that changed between profiles:\n\n" + detail + "\n"
        text += (f"\nContradictions in the advice over all {sum(r['profiles'] for r in rows)} profiles "
                 f"(adcli.advisor.invariants): {sum(r.get('violations', 0) for r in rows)}.\n")
        (HERE / "RESULTS.md").write_text(text)
    bad = [r for r in rows if r["ratio"] is not None and not 0.7 <= r["ratio"] <= 1.3]
    print(f"\n{len(bad)} of {sum(r['ratio'] is not None for r in rows)} ratios outside 0.7-1.3; "
          f"{sum(r['stable'] is False for r in rows)} unstable top picks; "
          f"{sum(r.get('violations', 0) for r in rows)} contradictions in the advice (adcli.advisor.invariants)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
