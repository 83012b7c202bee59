"""The advice table: does each workload's top suggestion save what the advisor predicts, in the program?

For every profiles/ workload: profile it as ``adcli profile`` does (replays included), ask the
advisor (default thresholds), take the top suggestion of each kind, serve the program with that
one rule and time its gradient again, without the profiler:

* an import is imported exactly as ``adcli export`` writes it (``import_rule`` for the signature);
* a hand-write is served by the reference rule in ``references.py`` (written in the benchmark,
  checked against finite differences by tests/test_references.py, never shipped in the engine).

The predicted saving is the suggestion's share of the profiled gradient time; the measured one
is ``1 - with_rule / derived_only``, both gradient times of the plain program (no profiler) in
one process, timed alternately (A B A B ...) so that drifts of a shared machine hit both.
Shares, not seconds: the profiled run is slower than the plain one by the profiler's own cost,
which the advisor does not predict away. ``measured / predicted`` is the ratio the issue sets a
target for (0.7-1.3).

    python benchmarks/advice.py                  # every workload
    python benchmarks/advice.py --cases rnn,stencil_roll --format markdown
    python benchmarks/advice.py --defaults       # the library tier over every workload (docs/advisor.md)

``--defaults`` answers "which rules should an engine import by default" as docs/advisor.md
records it: every workload profiled with the library rules the advice made native derived again
(``--derived-library``), then ``adcli suggest --tier library --all`` over all the profiles at once.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_var] = "1"  # BLAS pinned to one thread before NumPy loads

import argparse  # noqa: E402
import contextlib  # noqa: E402
import io  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import adcli  # noqa: E402
from adcli import measure  # noqa: E402
from adcli.advisor import HAND_WRITE, IMPORT, Thresholds, suggest  # noqa: E402
from adcli.engine.registry import REGISTRY, add_rule, remove_rule  # noqa: E402
from adcli.profiler.api import profile_program  # noqa: E402
from adcli.rules import register  # noqa: E402
from adcli.rules.autograd_import import import_rule  # noqa: E402
from adcli.rules.instrument import instrument  # noqa: E402

PROFILES = Path(__file__).resolve().parent.parent / "profiles"
REPLAY_BUDGET = 0.2  # as `adcli profile`: seconds per replayed measurement


def load(path: Path, name: str):
    """The workload compiled as ``adcli profile`` compiles it, as module ``name``: every function
    it defines is a dispatch point, so a rule declared for ``name:qualname`` serves it."""
    mod = types.ModuleType(name)
    mod.__file__ = str(path)
    sys.modules[name] = mod
    exec(instrument(path.read_bytes(), str(path)), mod.__dict__)
    return mod


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def repeat(fn, n: int) -> None:
    """``fn()`` ``n`` times, each result dropped at once (a list of them would keep every
    gradient's arrays alive, and time fresh memory instead of the call)."""
    for _ in range(n):
        fn()


def alternate(a, b, budget: float) -> tuple[float, float]:
    """Median seconds of ``a`` and of ``b``, sampled alternately for about ``budget`` seconds;
    each sample groups calls to last at least 2 ms."""
    a(), b()
    once = max(timed(a), timed(b), 1e-7)
    inner = max(1, int(2e-3 / once))
    xs, ys = [], []
    t_end = time.perf_counter() + budget
    while len(xs) < 7 or (time.perf_counter() < t_end and len(xs) < 2000):
        xs.append(timed(lambda: repeat(a, inner)) / inner)
        ys.append(timed(lambda: repeat(b, inner)) / inner)
    return statistics.median(xs), statistics.median(ys)


def serve(suggestion, stem: str, modname: str) -> tuple[list, str]:
    """Install the rule ``suggestion`` advises: (the registered rules, "") or ([], why not)."""
    try:
        from references import REFERENCE
    except ImportError:
        REFERENCE = {}
    target = suggestion.signature
    library = suggestion.tier == "library"
    if library:
        obj = np
        for part in target.module.split(".")[1:] + target.qualname.split("."):
            obj = getattr(obj, part)
    if suggestion.action == IMPORT:
        return import_rule(obj, *target.key), ""
    ref = REFERENCE.get((stem, target.qualname))
    if ref is None:
        return [], f"no reference rule for {target.qualname}"
    # the workload runs here as module ``modname``, not ``__main__``: its classes' instances too
    key = tuple(d.replace("obj(__main__.", f"obj({modname}.") for d in target.key)
    return list(register(obj if library else f"{modname}:{target.qualname}", key, ref)), ""


def unserve(rules: list) -> None:
    for r in rules:
        remove_rule(r)


def run_case(path: Path, budget: float, thresholds: Thresholds) -> list[dict]:
    """One row per kind of suggestion (the top import, the top hand-write) for one workload.
    A hand-write is measured on top of the workload's suggested imports (the library tier comes
    first, and the advisor credits a user function only with what remains), so its predicted
    share is of the gradient time left after those imports."""
    stem = path.stem
    pace = Pace()
    measure.ON_CALL.append(pace)  # probes between the replays' timing rounds
    try:
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
            profile, _ = profile_program(str(path), [], output=os.path.join(tmp, "p.json"),
                                         replay_budget=REPLAY_BUDGET)
    finally:
        measure.ON_CALL.remove(pace)
    suggestions, summary = suggest([profile], thresholds)
    total = max(summary.gradient_s, 1e-12)  # the advisor's seconds: without the profiler when replayed
    imports = [s for s in suggestions if s.action == IMPORT]
    rows = []
    modname = f"bench_advice_{stem}"
    mod = load(path, modname)
    args = mod.inputs()
    vg = adcli.value_and_grad(mod.f, argnums=mod.ARGNUMS)
    plain = vg(*args)
    # the machine's speed now against the profile's: the plain gradient timed again, over the
    # replayed time per gradient the advisor weighed its savings in
    once = max(timed(lambda: vg(*args)), 1e-6)
    now = statistics.median(timed(lambda: vg(*args)) for _ in range(max(5, int(0.1 / once))))
    speed = now / (total / max(profile.totals.gradients, 1))
    python = pace.now(lambda: vg(*args)) / pace.then() if pace.samples else 1.0
    for action in (IMPORT, HAND_WRITE):
        top = next((s for s in suggestions if s.action == action), None)
        if top is None:
            continue
        base = [] if action == IMPORT else imports
        left = total - sum(s.saving_s for s in base)
        row = {"case": stem, "action": action, "target": str(top.signature), "tier": top.tier, "speed": speed, "python": python,
               "predicted": top.saving_s / max(left, 1e-12), "measured": None,
               "note": f"after {len(base)} import(s)" if base else ""}
        installed = [r for s in base for r in serve(s, stem, modname)[0]]
        try:
            rules, why = serve(top, stem, modname)
            if not rules:
                row["note"] = why
            else:
                try:
                    _same(plain, vg(*args), row)
                    with_rule, without = alternate(lambda: _toggle(rules, True, vg, args),
                                                   lambda: _toggle(rules, False, vg, args), budget)
                    row["measured"] = 1 - with_rule / without
                finally:
                    unserve(rules)
        finally:
            unserve(installed)
        rows.append(row)
    if not rows:
        rows.append({"case": stem, "action": "keep derived", "target": "", "tier": "", "predicted": 0.0,
                     "measured": None, "note": "", "speed": speed, "python": python})
    return rows


def _toggle(rules: list, on: bool, vg, args) -> None:
    """One gradient with the rules registered (``on``) or not: taking a registered rule out of
    the registry and putting it back costs a dict operation, nothing next to a gradient."""
    for r in rules:
        if on:
            if declared_rule_of(r) is not r:
                add_rule(r)
        else:
            remove_rule(r)
    vg(*args)


def declared_rule_of(rule):
    e = REGISTRY.get(rule.target)
    return None if e is None else e.by_signature.get(rule.key)


def _same(plain, served, row):
    (v0, g0), (v1, g1) = plain, served
    leaves0 = [np.asarray(x) for x in _leaves(g0)]
    leaves1 = [np.asarray(x) for x in _leaves(g1)]
    ok = np.allclose(v0, v1, rtol=1e-8, atol=1e-10) and all(
        np.allclose(a, b, rtol=1e-6, atol=1e-9) for a, b in zip(leaves0, leaves1))
    if not ok:
        row["note"] = "GRADIENT MISMATCH with the rule"


def _leaves(x):
    if isinstance(x, dict):
        return [v for k in sorted(x) for v in _leaves(x[k])]
    if isinstance(x, (list, tuple)):
        return [v for i in x for v in _leaves(i)]
    return [x]


@contextlib.contextmanager
def advised_natives_out():
    """The engine as it was before the advice's library tier became native rules."""
    funcs = [np.roll, np.var, np.outer, np.triu, np.tril]
    assert all(REGISTRY[f].origin == "advised" for f in funcs)
    saved = {f: REGISTRY[f].native for f in funcs}
    try:
        for f in funcs:
            REGISTRY[f].native = None
        yield
    finally:
        for f, native in saved.items():
            REGISTRY[f].native = native


def render(rows: list[dict], fmt: str) -> str:
    head = ["workload", "top suggestion", "tier", "predicted", "measured", "measured / predicted"]
    table = []
    for r in rows:
        m, p = r["measured"], r["predicted"]
        ratio = "—" if m is None or p <= 0 else f"{m / p:.2f}"
        target = f"{r['action']} {r['target']}".strip()
        table.append([r["case"], target if len(target) < 90 else target[:87] + "...", r["tier"] or "—",
                      f"{p:.0%}" if p else "—", "—" if m is None else f"{m:.0%}",
                      ratio + (f" ({r['note']})" if r["note"] else "")])
    if fmt == "markdown":
        out = ["| " + " | ".join(head) + " |", "|---|---|---|---:|---:|---:|"]
        return "\n".join(out + ["| " + " | ".join(c.replace("|", "\\|") for c in t) + " |" for t in table])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *table)]
    line = lambda cells: "  ".join(str(x).ljust(w) for x, w in zip(cells, widths))  # noqa: E731
    return "\n".join([line(head), "  ".join("-" * w for w in widths)] + [line(t) for t in table])


SPEED = (0.8, 1.25)  # the plain gradient now over the profile's, and a Python probe's: the same machine speed


def _probe() -> float:
    """Seconds of a little pure-Python work (no NumPy): the interpreter's pace."""
    t0 = time.perf_counter()
    x = 0
    for i in range(300):
        x += i * i
    return time.perf_counter() - t0


class Pace:
    """The interpreter's pace during a profile's replays (a probe every tenth timing round,
    through measure.ON_CALL) and now. On the machines this ran on, Python-heavy work slowed up to
    1.8x for seconds while NumPy-bound work did not, which moves the engine's share of a
    gradient: a whole gradient's time alone does not tell those phases apart."""

    def __init__(self) -> None:
        self.samples: list = []
        self.rounds = 0

    def __call__(self) -> None:
        self.rounds += 1
        if self.rounds % 10 == 0:
            self.samples.append(_probe())

    def then(self) -> float:
        return statistics.median(self.samples)

    @staticmethod
    def now(between=None) -> float:
        """The probe now, each run right after ``between()`` (the workload's plain gradient): in
        the state the profile's probes were taken in, after NumPy work, not back to back (back to
        back it ran 1.3-1.6x faster than between the replays' rounds on the same machine, which
        sent most workloads to a second and third profile)."""
        samples = []
        for _ in range(30 if between is not None else 200):
            if between is not None:
                between()
            samples.append(_probe())
        return statistics.median(samples)


def same_speed(case, attempts: int) -> list[dict]:
    """``case()``'s rows, profiled again (up to ``attempts`` times in all) while the plain
    gradient, or the interpreter's pace (Pace), differs from the profile's by more than SPEED:
    the prediction holds for the machine as it ran during the profile, and a shared machine can
    change speed (unevenly: Python more than BLAS) between the profile and the measurement. The
    last attempt's rows are kept either way; the note says how many it took."""
    for attempt in range(1, attempts + 1):
        rows = case()
        speed, python = rows[0]["speed"], rows[0]["python"]
        same = SPEED[0] <= speed <= SPEED[1] and SPEED[0] <= python <= SPEED[1]
        nothing_to_compare = all(r["action"] == "keep derived" for r in rows)
        if nothing_to_compare or same or attempt == attempts:
            break
    for r in rows:
        extra = [] if attempt == 1 or nothing_to_compare else [f"profiled {attempt}x: speed"]
        if not same and not nothing_to_compare:
            extra.append(f"speed {speed:.2f}x, Python {python:.2f}x the profile's")
        r["note"] = "; ".join([n for n in (r["note"], *extra) if n])
    return rows


def warm_up(seconds: float) -> None:
    """Take gradients of a small model for ``seconds`` before anything is measured. On the shared
    machines this was measured on, a fresh process runs Python at up to half speed for its first
    seconds while BLAS-bound work slows less, which moves the engine's share of a gradient: the
    first workload's profile would be taken in one state and its rule timed in the other (the
    advisor's prediction holds for the state it was measured in). A real `adcli profile` is a
    fresh process: its predictions are for the machine as it ran then."""
    rng = np.random.default_rng(0)
    W, x = rng.standard_normal((64, 64)), rng.standard_normal((128, 64))
    g = adcli.grad(lambda w: np.sum(np.tanh(x @ w) ** 2) + np.sum(np.mean(x @ w, axis=0) ** 2))
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        g(W)


def defaults(paths: list[Path], fmt: str) -> int:
    """Profile every workload with the advised native rules taken out, then advise the library
    tier over all the profiles at once; the advice's text is printed as ``adcli suggest`` prints it."""
    with tempfile.TemporaryDirectory() as tmp:
        outputs = []
        for path in paths:
            print(f"  {path.stem} ...", file=sys.stderr, flush=True)
            out = os.path.join(tmp, f"{path.stem}.json")
            with contextlib.redirect_stdout(io.StringIO()):
                profile_program(str(path), [], output=out, replay_budget=REPLAY_BUDGET)
            outputs.append(out)
        fmt = "table" if fmt == "plain" else fmt
        return subprocess.call([sys.executable, "-m", "adcli", "suggest", *outputs, "--tier", "library", "--all",
                                "--format", fmt])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="", help="comma-separated workload names (file stems; default: all)")
    p.add_argument("--budget", type=float, default=1.0, help="seconds of alternate timing per row (default 1)")
    p.add_argument("--format", choices=("plain", "markdown"), default="plain")
    p.add_argument("--warmup", type=float, default=3.0,
                   help="seconds of gradients taken before the first workload (default 3): see warm_up")
    p.add_argument("--attempts", type=int, default=3,
                   help="profiles per workload at most, while the machine's speed differs from the profile's (default 3)")
    p.add_argument("--derived-library", action="store_true",
                   help="take out the native rules the advice put in the engine (origin='advised' in engine/rules/), so the "
                        "NumPy functions they serve are derived again and their imports are advised and checked")
    p.add_argument("--defaults", action="store_true",
                   help="the library tier over every workload at once, with the advised native rules derived again: "
                        "which rules an engine should ship (docs/advisor.md)")
    a = p.parse_args(argv)
    paths = sorted(PROFILES.glob("*.py"))
    if a.cases:
        wanted = {c.strip() for c in a.cases.split(",") if c.strip()}
        unknown = wanted - {q.stem for q in paths}
        if unknown:
            p.error(f"unknown workload(s) {', '.join(sorted(unknown))}")
        paths = [q for q in paths if q.stem in wanted]
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - a dependency of adcli
        threadpool_limits = None
    if a.defaults:
        with threadpool_limits(1) if threadpool_limits else contextlib.nullcontext(), advised_natives_out():
            warm_up(a.warmup)
            return defaults(paths, a.format)
    rows = []
    with threadpool_limits(1) if threadpool_limits else contextlib.nullcontext(), \
            advised_natives_out() if a.derived_library else contextlib.nullcontext():
        warm_up(a.warmup)
        for path in paths:
            print(f"  {path.stem} ...", file=sys.stderr, flush=True)
            rows += same_speed(lambda: run_case(path, a.budget, Thresholds()), a.attempts)
    print(render(rows, a.format))
    bad = [r for r in rows if r["measured"] is not None and r["predicted"] > 0
           and not 0.7 <= r["measured"] / r["predicted"] <= 1.3]
    print(f"\n{len(bad)} of {sum(r['measured'] is not None for r in rows)} ratios outside 0.7-1.3", file=sys.stderr)
    return 1 if any("MISMATCH" in r["note"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
