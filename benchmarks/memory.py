#!/usr/bin/env python
"""Peak memory of one gradient of every profiles/ case, next to its NumPy primal's, autograd's and
its hand-written NumPy floor's.

    python benchmarks/memory.py                          # all cases, a table on the terminal
    python benchmarks/memory.py --format markdown --cases simple_mlp,gp_lml
    python benchmarks/memory.py --top 5                  # where adcli's memory goes, for each miss

Targets: a gradient's peak memory at most autograd's, and at most 2x the primal's on the vectorised
cases (VECTORISED below says which and why); restated against the floors: adcli's gradient peak
within 1.2x of min(floor peak, autograd peak) on every case (``FLOOR_FACTOR``; the min of those
that ran). The floor is the case's value and gradient written by hand in plain NumPy
(benchmarks/case_floors.py): vectorised, fused, in place on its own temporaries, with no tape, so
on the looping cases its peak is the vectorised program's rather than a reverse pass's.

Method: tracemalloc (Python objects and NumPy's array buffers). The inputs are made first and not
counted. The NumPy primal ``f(*args)``, ``adcli.value_and_grad(f, argnums=ARGNUMS)``, autograd's
``value_and_grad`` of ``f`` re-bound to ``autograd.numpy`` (``peers.rebound_f``, as in bench.py) and
the floor ``case_floors.FLOORS[NAME](*args)`` are each warmed up once, then called ``--repeats``
times after ``gc.collect()`` (the collector stays on, as in use) under ``adcli.measure.peak_bytes``:
start tracing, note the memory traced, reset the peak, call, read the peak with the result still
alive. A cell is that peak minus the memory before
(what the call needed above its inputs, its result included), the largest of the repeats: they
agree to within 0.1% (dict resizes, id-keyed caches), and a memory budget is about the worst run.
BLAS runs on one thread (importing bench.py pins it before NumPy loads).

Columns: case; vectorised; the primal's, adcli's, autograd's and the floor's peaks; adcli / primal;
adcli / autograd; whether adcli is within 2x the primal's peak (vectorised cases only) and within
autograd's ("—": autograd cannot run the case, note [k] says why; a gradient that disagrees with
adcli's, by bench.compare, is a note too, and so is a floor that disagrees, by case_floors.check);
adcli / min(floor, autograd), and whether that is at most 1.2.

``--top N``: for each case missing a target (any of the three), adcli's gradient runs twice more, 25 frames traced and
a sys.settrace hook at every opcode; the first run finds the opcode boundary where the most is live
(and the line inside which the peak itself was reached: a NumPy call's temporaries), the second
snapshots there. Its N largest allocation sites are listed by line, with the program line (or
"reverse pass") behind most of their bytes.
"""

from __future__ import annotations

import argparse
import gc
import linecache
import sys
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402, I001  (first: pins the BLAS threads before NumPy is imported)
import case_floors  # noqa: E402
import peers  # noqa: E402

import adcli  # noqa: E402
from adcli.measure import peak_bytes  # noqa: E402

# Vectorised (read from each profile's source; profiles define no attribute for it): f is a fixed
# sequence of whole-array NumPy operations, with no Python loop over elements, columns, minibatches,
# rank-one terms or time steps; a loop over a model's 3 layers (batchnorm_mlp) counts as straight
# code. The others loop, and a reverse pass keeps every iteration's values the primal drops.
VECTORISED = frozenset({
    "sum_1000", "sum_sin_1000", "kron_sum", "kron_view_sum", "broadcast_sin_cos_exp", "simple_mlp",
    "gp_lml", "logistic_regression", "mlp_dict", "gp_hyper", "batchnorm_mlp",
})
PRIMAL_FACTOR = 2.0
FLOOR_FACTOR = 1.2  # adcli's peak / min(floor's, autograd's)
DASH = "—"


@dataclass
class Row:
    name: str
    vectorised: bool
    primal: int
    peaks: dict = field(default_factory=dict)  # framework -> bytes
    reasons: dict = field(default_factory=dict)  # framework -> why it has no peak, or a mismatch
    grad_bytes: int = 0  # the gradient arrays adcli returns

    def ratio(self, other: int | None) -> float | None:
        mine = self.peaks.get("adcli")
        return mine / other if mine is not None and other else None

    def meets_primal(self) -> bool | None:
        r = self.ratio(self.primal)
        return None if not self.vectorised or r is None else r <= PRIMAL_FACTOR

    def meets_autograd(self) -> bool | None:
        r = self.ratio(self.peaks.get("autograd"))
        return None if r is None else r <= 1.0

    def best_peer(self) -> int | None:
        """min(floor's peak, autograd's peak), of those measured."""
        peers = [self.peaks[k] for k in ("floor", "autograd") if k in self.peaks]
        return min(peers) if peers else None

    def meets_floor(self) -> bool | None:
        r = self.ratio(self.best_peer())
        return None if r is None else r <= FLOOR_FACTOR


# --- measuring ---------------------------------------------------------------------------------


def peak(call, repeats: int) -> int:
    """The largest peak of ``repeats`` calls of ``call`` (warmed up once), in bytes above what was
    traced before the call; each call's result stays alive until its peak is read."""
    call()
    box, peaks = [None], []
    for _ in range(repeats):
        box[0] = None
        gc.collect()
        peaks.append(peak_bytes(lambda: box.__setitem__(0, call())))  # the result stays in box
    return max(peaks)


def make_autograd(mod, args):
    import autograd
    import autograd.numpy as anp

    vg = autograd.value_and_grad(peers.rebound_f(mod, anp), mod.ARGNUMS)
    single = isinstance(mod.ARGNUMS, int)
    return (lambda: vg(*args)), (lambda r: (float(r[0]), bench.flat((r[1],) if single else r[1])))


def measure_case(mod, repeats: int) -> Row:
    args = mod.inputs()
    row = Row(mod.NAME, mod.NAME in VECTORISED, peak(lambda: mod.f(*args), repeats))
    results, raw = {}, {}
    floor = case_floors.FLOORS.get(mod.NAME)
    makers = [("adcli", bench.make_adcli), ("autograd", make_autograd)]
    if floor is None:
        row.reasons["floor"] = "no floor in benchmarks/case_floors.py"
    else:
        makers.append(("floor", lambda mod, args: ((lambda: floor(*args)), None)))
    for name, make in makers:
        try:
            run, result = make(mod, args)
            raw[name] = run()
            if result is not None:
                results[name] = result(raw[name])
        except Exception as e:  # noqa: BLE001 - any failure is reported as n/a with its reason
            row.reasons[name] = bench.short_reason(e)
            continue
        row.peaks[name] = peak(run, repeats)
    if "adcli" in results:
        row.grad_bytes = sum(g.nbytes for g in results["adcli"][1])
        if "autograd" in results and (diff := bench.compare(results["adcli"], results["autograd"])):
            row.reasons["autograd"] = f"GRADIENT MISMATCH with adcli: {diff}"
        if "floor" in raw and (diff := case_floors.check(mod, raw["adcli"], raw["floor"])):
            row.reasons["floor"] = f"FLOOR MISMATCH with adcli: {diff}"
    return row


# --- where adcli's memory goes (--top) -----------------------------------------------------------


def _traced(call, hook) -> None:
    """``call()`` with 25 frames traced and ``hook(frame)`` run before every opcode."""

    def local(frame, event, arg):
        frame.f_trace_opcodes = True
        hook(frame)
        return local

    gc.collect()
    tracemalloc.start(25)
    sys.settrace(local)
    try:
        result = call()  # noqa: F841 - alive until tracing stops
    finally:
        sys.settrace(None)
        tracemalloc.stop()


def snapshot_at_peak(call):
    """(snapshot, bytes live in it, peak bytes, (file, line) of the opcode that reached the peak):
    a run of ``call`` finds the opcode boundary where the most is live."""
    best = {"n": 0, "live": -1, "at": 0, "peak": -1, "where": ("?", 0), "last": ("?", 0)}

    def probe(frame):
        live, top = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        best["n"] += 1
        if live > best["live"]:
            best["live"], best["at"] = live, best["n"]
        if top > best["peak"]:
            best["peak"], best["where"] = top, best["last"]
        while "site-packages" in frame.f_code.co_filename and frame.f_back is not None:
            frame = frame.f_back  # NumPy's Python wrappers: the line that called them
        best["last"] = (frame.f_code.co_filename, frame.f_lineno)

    found = {"n": 0}

    def grab(frame):  # the same run again, with the snapshot taken where the most was live
        found["n"] += 1
        if found["n"] == best["at"]:
            found["snapshot"] = tracemalloc.take_snapshot()
            found["live"] = tracemalloc.get_traced_memory()[0]

    _traced(call, probe)
    _traced(call, grab)
    mine = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, __file__)]
    return found["snapshot"].filter_traces(mine), found["live"], best["peak"], best["where"]


def short_path(filename: str) -> str:
    try:
        return str(Path(filename).resolve().relative_to(bench.ROOT))
    except ValueError:
        return filename.split("site-packages/")[-1]


def _origin(snap, frame, program: str) -> str:
    """The program line that led to most of the bytes allocated at ``frame``, or 'reverse pass'."""
    via: dict = {}
    for trace in snap.traces:
        if trace.traceback[-1] == frame:
            user = [f.lineno for f in trace.traceback if f.filename == program]
            if user:
                via[user[-1]] = via.get(user[-1], 0) + trace.size
            elif any(f.filename.endswith("engine/tape.py") for f in trace.traceback):
                via["reverse pass"] = via.get("reverse pass", 0) + trace.size
    if not via:
        return ""
    line, size = max(via.items(), key=lambda kv: kv[1])
    if line == "reverse pass":
        return f"  <- reverse pass ({human(size)})"
    return f"  <- {short_path(program)}:{line} ({human(size)}): {linecache.getline(program, line).strip()}"


def top_sites(mod, n: int) -> list[str]:
    """adcli's ``n`` largest allocation sites at its gradient's peak, one line each."""
    run, _ = bench.make_adcli(mod, mod.inputs())
    run()
    snap, live, top, (file, line) = snapshot_at_peak(run)
    program = str(Path(mod.__file__).resolve())
    lines = [f"{mod.NAME}: peak {human(top)} (under tracing) reached in {short_path(file)}:{line}; the {n} largest "
             f"allocation sites when the most is live between two opcodes ({human(live)}):"]
    for stat in snap.statistics("lineno")[:n]:
        fr = stat.traceback[0]
        lines.append(f"  {human(stat.size):>10} in {stat.count:5d} blocks  {short_path(fr.filename)}:{fr.lineno}: "
                     f"{linecache.getline(fr.filename, fr.lineno).strip()}{_origin(snap, fr, program)}")
    return lines


# --- output ------------------------------------------------------------------------------------


def human(n: float | None) -> str:
    """Binary units: 1536 -> '1.5 KiB'."""
    if n is None:
        return DASH
    if abs(n) < 1024:
        return f"{int(n)} B"
    return f"{n / 1024:.1f} KiB" if abs(n) < 1024**2 else f"{n / 1024**2:.1f} MiB"


def table(rows: list[Row]):
    notes: list[str] = []

    def note(text: str) -> str:
        notes.append(text)
        return f" [{len(notes)}]"

    def peak_cell(r: Row, name: str) -> str:
        text = human(r.peaks[name]) if name in r.peaks else "n/a"
        return text + note(f"{name}, {r.name}: {r.reasons[name]}") if name in r.reasons else text

    def yes(ok: bool | None, r: Row | None = None) -> str:
        if ok is None:
            return DASH
        if ok:
            return "yes"
        floor = r is not None and r.grad_bytes > PRIMAL_FACTOR * r.primal
        return "NO" + (note(f"{r.name}: the gradient arrays returned take {human(r.grad_bytes)} alone, more than "
                            f"{PRIMAL_FACTOR:g}x the primal's peak") if floor else "")

    cols = ["case", "vectorised", "primal peak", "adcli peak", "autograd peak", "floor peak", "adcli / primal",
            "adcli / autograd", f"≤ {PRIMAL_FACTOR:g}x primal", "≤ autograd", "adcli / min(floor, autograd)",
            f"≤ {FLOOR_FACTOR:g}x min"]
    body = []
    for r in rows:
        rp, ra, rf = r.ratio(r.primal), r.ratio(r.peaks.get("autograd")), r.ratio(r.best_peer())
        body.append([r.name, "yes" if r.vectorised else "no", human(r.primal), peak_cell(r, "adcli"),
                     peak_cell(r, "autograd"), peak_cell(r, "floor"), DASH if rp is None else f"{rp:.2f}",
                     DASH if ra is None else f"{ra:.2f}", yes(r.meets_primal(), r), yes(r.meets_autograd()),
                     DASH if rf is None else f"{rf:.2f}", yes(r.meets_floor())])
    return cols, body, notes


def summary(rows: list[Row]) -> str:
    vec = [r.meets_primal() for r in rows if r.vectorised]
    ag = [r.meets_autograd() for r in rows if r.meets_autograd() is not None]
    fl = [r for r in rows if r.meets_floor() is not None]
    over = [f"{r.name} ({r.ratio(r.best_peer()):.2f}x)" for r in fl if not r.meets_floor()]
    return (f"adcli within {PRIMAL_FACTOR:g}x the primal's peak on {sum(v is True for v in vec)} of {len(vec)} "
            f"vectorised cases; within autograd's peak on {sum(ag)} of {len(ag)} cases "
            f"(autograd runs {len(ag)} of {len(rows)}); within {FLOOR_FACTOR:g}x min(floor, autograd) on "
            f"{len(fl) - len(over)} of {len(fl)} cases" + (f"; over: {', '.join(over)}" if over else ""))


def _rich(cols, body, title: str) -> str | None:
    try:
        from rich import box
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        return None
    tb = Table(*cols, title=title, box=box.SIMPLE_HEAD)
    for c in tb.columns[1:]:
        c.justify = "right"
    for line in body:
        tb.add_row(*line)
    console = Console(width=max(190, Console().width))  # 12 columns
    with console.capture() as cap:
        console.print(tb)
    return cap.get().rstrip()


def render(rows: list[Row], fmt: str, header: str) -> str:
    cols, body, notes = table(rows)
    grid = _rich(cols, body, "peak memory of one call above its inputs") if fmt == "table" else None
    if grid is None:
        grid = "\n".join(bench._md(cols, body) if fmt == "markdown" else bench._plain(cols, body))
    notes = [""] + [f"[{i}] {t}" for i, t in enumerate(notes, 1)] if notes else []
    return "\n".join([header, "", grid] + notes + ["", summary(rows)])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--format", choices=("table", "plain", "markdown"), default="table",
                   help="table: rich on the terminal (plain text without rich); markdown: for notes")
    p.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    p.add_argument("--repeats", type=int, default=3, help="measured calls per cell, the largest peak kept (default 3)")
    p.add_argument("--top", type=int, default=0, metavar="N",
                   help="for each case missing a target, adcli's N largest allocation sites at its peak")
    a = p.parse_args(argv)
    mods = bench.select_cases(bench.load_profiles(), a.cases, p)
    from importlib.metadata import PackageNotFoundError, version

    try:
        peer = f"autograd {version('autograd')}"
    except PackageNotFoundError:
        peer = "autograd not installed"
    header = (f"NumPy {bench.np.__version__}, adcli {adcli.__version__}, {peer}; 1 BLAS "
              f"thread; tracemalloc peak above the memory traced before one call, largest of {a.repeats}")
    rows = []
    for name, mod in mods.items():
        print(f"  {name} ...", file=sys.stderr, flush=True)
        rows.append(measure_case(mod, a.repeats))
    print(render(rows, a.format, header))
    misses = [r for r in rows if False in (r.meets_primal(), r.meets_autograd(), r.meets_floor())]
    if a.top > 0 and misses:
        sites = "\n\n".join("\n".join(top_sites(mods[r.name], a.top)) for r in misses)
        print(f"\n```text\n{sites}\n```" if a.format == "markdown" else f"\n{sites}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
