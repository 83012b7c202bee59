#!/usr/bin/env python
"""Time adcli's gradients of the profiles/ cases against NumPy's primal and against autograd,
PyTorch (eager) and JAX (without and with jit), side by side, Mooncake.jl-style.

    python benchmarks/bench.py                  # all cases, a table on the terminal
    python benchmarks/bench.py --quick          # shorter timing budget (for a smoke run)
    python benchmarks/bench.py --format markdown --cases sum_1000,gp_lml

Every ratio is (gradient time of that framework) / (NumPy primal time of the same case), as in
Mooncake's inter-framework table: all frameworks are divided by the same primal. Times are
medians over repeated samples; BLAS, OpenMP, XLA and torch are pinned to one thread. Before
anything is timed, every framework's value and gradient are checked against adcli's (or, where
adcli cannot run a case, against the first framework that can): a mismatch is printed loudly,
marked in the table, and makes the script exit with status 1. See benchmarks/README.md.
"""

from __future__ import annotations

import os

# Threads are pinned before NumPy (and so OpenBLAS) or any framework is imported.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
             "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
).strip()
os.environ["JAX_ENABLE_X64"] = "1"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import argparse  # noqa: E402
import gc  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PROFILES = ROOT / "profiles"
sys.path.insert(0, str(ROOT))  # run from a checkout without installing adcli
sys.path.insert(0, str(HERE))

import peers  # noqa: E402

import adcli  # noqa: E402

# The Mooncake suite first, in its order, then the realistic models.
ORDER = [
    "sum_1000", "_sum_1000", "sum_sin_1000", "_sum_sin_1000", "kron_sum", "kron_view_sum",
    "naive_map_sin_cos_exp", "map_sin_cos_exp", "broadcast_sin_cos_exp", "simple_mlp", "gp_lml",
    "large_single_block", "logistic_regression", "mlp_dict", "rk4_ode",
]

RTOL, ATOL = 1e-6, 1e-9  # cross-check tolerance (relative to the gradient's largest entry for atol)


# --- loading ----------------------------------------------------------------------------------


def load_profiles():
    mods = {}
    for path in sorted(PROFILES.glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"adcli_profile_{path.stem}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mods[mod.NAME] = mod
    rank = {n: i for i, n in enumerate(ORDER)}
    return dict(sorted(mods.items(), key=lambda kv: (rank.get(kv[0], len(ORDER)), kv[0])))


def load_ported():
    """The ported programs (tests/ported: autograd programs ported by swapping imports), as cases
    ``ported/<name>``: adcli runs them as written, autograd runs the same source with its imports
    turned back into autograd's (tests/ported/_load.py). No PyTorch or JAX versions."""
    import types

    from tests.ported._load import load, names

    mods = {}
    for name in names():
        loss, make_inputs = load(name, "adcli")
        mods[f"ported/{name}"] = types.SimpleNamespace(
            NAME=f"ported/{name}", PORTED=name, f=loss, ARGNUMS=0, inputs=lambda m=make_inputs: m(0),
            __file__=str(ROOT / "tests" / "ported" / f"{name}.py"))
    return mods


# --- frameworks -------------------------------------------------------------------------------


@dataclass
class Framework:
    name: str
    version: str = ""
    note: str = ""  # why it is missing, when it is
    available: bool = True
    make: object = None  # make(mod, args) -> (run, result); result(run()) -> (value, [gradient arrays])
    external: object = None  # external(mod, budget) -> (value, [gradient arrays], seconds, note): runs elsewhere


def _nums(argnums):
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def flat(tree):
    """Gradient leaves as float64 arrays, in argument order with dict keys sorted."""
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in flat(tree[k])]
    if isinstance(tree, (list, tuple)):
        return [leaf for v in tree for leaf in flat(v)]
    return [np.asarray(tree, dtype=np.float64)]


def make_adcli(mod, args):
    vg = adcli.value_and_grad(mod.f, argnums=mod.ARGNUMS)
    single = isinstance(mod.ARGNUMS, int)
    return (lambda: vg(*args)), (lambda r: (float(r[0]), flat((r[1],) if single else r[1])))


JAX_MAKE: dict = {}


def make_synthesized(mod, args):
    """The rule synthesized from ``f``'s source (adcli.synth) for the case's signature, run as the
    gradient: its forward pass and its pullback from 1.0, with no tracer, tape or dispatch (the
    engine adds one rule node's cost, about 15 µs, when it serves a call with it)."""
    from adcli.errors import SynthesisError
    from adcli.synth import synthesize

    if hasattr(mod, "PORTED"):
        raise NotImplementedError("a ported program: not synthesized here")
    nums = _nums(mod.ARGNUMS)
    try:  # for the arguments the other columns differentiate, as the profiler's what-if does (traced ones)
        fwd = synthesize(mod.f, tuple(args), wrt=nums).rule()
    except SynthesisError as e:
        raise NotImplementedError(str(e).split(": ", 1)[-1]) from None

    def run():
        value, pullback = fwd(*args)
        cotangents = pullback(1.0)
        return value, [cotangents[k] for k in nums]

    return run, (lambda r: (float(r[0]), flat(r[1])))


def frameworks(use_jit: bool, jit_timeout: float = 120.0) -> list[Framework]:
    fws = [Framework("adcli", adcli.__version__, make=make_adcli),
           Framework("synthesized", adcli.__version__, make=make_synthesized)]
    try:
        from importlib.metadata import version

        import autograd
        import autograd.numpy as anp

        def make_autograd(mod, args):
            if hasattr(mod, "PORTED"):  # the program's own source, imports rewritten to autograd's
                from tests.ported._load import load

                f = load(mod.PORTED, "autograd")[0]
            else:
                f = peers.rebound_f(mod, anp)
            vg = autograd.value_and_grad(f, mod.ARGNUMS)
            single = isinstance(mod.ARGNUMS, int)
            return (lambda: vg(*args)), (lambda r: (float(r[0]), flat((r[1],) if single else r[1])))

        fws.append(Framework("autograd", version("autograd"), make=make_autograd))
    except ImportError as e:
        fws.append(Framework("autograd", available=False, note=f"autograd not installed ({e})"))
    make_torch, torch_version, torch_note = peers.torch_framework()
    if make_torch is None:
        fws.append(Framework("torch", available=False, note=torch_note))
    else:
        def make_torch_case(mod, args):
            if hasattr(mod, "PORTED"):
                raise NotImplementedError(f"no PyTorch version of {mod.NAME} in benchmarks/peers.py")
            return make_torch(mod, args)

        fws.append(Framework("torch", torch_version, make=make_torch_case))
    try:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)

        def make_jax(jit):
            def make(mod, args):
                if hasattr(mod, "PORTED"):
                    raise NotImplementedError("a ported autograd program: no JAX version")
                f = peers.jax_function(mod, jnp)
                vg = jax.value_and_grad(f, argnums=mod.ARGNUMS)
                if jit:
                    vg = jax.jit(vg)
                jargs = peers.to_jax(args, jnp)
                single = isinstance(mod.ARGNUMS, int)

                def run():
                    return jax.block_until_ready(vg(*jargs))

                return run, (lambda r: (float(r[0]), flat((r[1],) if single else r[1])))

            return make

        fws.append(Framework("jax", jax.__version__, make=make_jax(False)))
        if use_jit:
            fws.append(Framework("jax.jit", jax.__version__, external=jit_in_subprocess(jit_timeout)))
        JAX_MAKE["jit"] = make_jax(True)
    except ImportError:
        fws.append(Framework("jax", available=False, note="JAX not installed: columns skipped "
                             "(pip install jax jaxlib to add them)"))
    return fws


def jit_in_subprocess(timeout: float):
    """jax.jit runs in a child process (this script with --jit-worker) under a time limit: XLA
    compiles the unrolled Python loops of some cases for minutes and gigabytes (rk4_ode)."""

    def external(mod, budget):
        if hasattr(mod, "PORTED"):
            raise NotImplementedError("a ported autograd program: no JAX version")
        cmd = [sys.executable, str(Path(__file__).resolve()), "--jit-worker", mod.NAME, "--budget", repr(budget)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"XLA compilation and timing did not finish within {timeout:g} s "
                               "(--jit-timeout to wait longer)") from None
        if proc.returncode != 0:
            lines = [x for x in proc.stderr.strip().splitlines() if x.strip()]
            raise RuntimeError(lines[-1] if lines else f"worker exited with status {proc.returncode}")
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        return r["value"], [np.asarray(g, dtype=np.float64) for g in r["grads"]], r["seconds"], r["compile"]

    return external


def jit_worker(name: str, budget: float) -> int:
    """The child process of jit_in_subprocess: compile, time, print one JSON line."""
    frameworks(use_jit=False)  # sets up jax (x64, threads) and JAX_MAKE
    if "jit" not in JAX_MAKE:
        print("JAX is not installed", file=sys.stderr)
        return 2
    mod = load_profiles()[name]
    run, result = JAX_MAKE["jit"](mod, mod.inputs())
    t0 = time.perf_counter()
    value, grads = result(run())
    compile_s = time.perf_counter() - t0
    seconds = measure(run, budget)
    print(json.dumps({"value": value, "grads": [g.tolist() for g in grads], "seconds": seconds, "compile": compile_s}))
    return 0


# --- timing -----------------------------------------------------------------------------------


def measure(fn, budget: float, min_sample: float = 1e-3, min_samples: int = 5, max_samples: int = 2000) -> float:
    """Median time of one call of ``fn`` (already warmed up), in seconds.

    Calls are grouped so that one sample lasts at least ``min_sample`` seconds (the timer's own
    cost stays negligible for microsecond calls); the number of samples is chosen so that the
    whole measurement takes about ``budget`` seconds, within [min_samples, max_samples]. A call
    slower than the budget is sampled fewer times (down to three: one slow call, a garbage
    collection's, cannot be the result).

    The process's objects are collected and then frozen first (gc.freeze): after the frameworks
    and the cases before it, the bench process holds millions of objects, and a gradient that
    makes many (a scalar loop's tape, autograd's boxes) set off full collections that walked
    all of them: 10-60x the gradient's own time in some cells (loop_helper_loss: 6.5 ms alone,
    352 ms after the other cases)."""
    gc.collect()
    gc.freeze()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-9)
    inner = max(1, int(min_sample / once))
    samples = int(min(max_samples, max(min_samples, budget / (inner * once))))
    times = []
    if inner == 1:
        times.append(once)
        samples = max(2, min(samples, int(3 * budget / once)) - 1)
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t0) / inner)
    return statistics.median(times)


@dataclass
class Cell:
    seconds: float | None = None
    reason: str = ""  # why there is no time
    mismatch: str = ""


@dataclass
class Row:
    name: str
    primal: float
    cells: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  # framework -> compile seconds (jax.jit)


def short_reason(e: BaseException) -> str:
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    if len(msg) > 160:
        msg = msg[:157] + "..."
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def compare(ref, other) -> str:
    """'' when ``other`` (value, leaves) agrees with ``ref``, else a description of the difference."""
    (v0, g0), (v1, g1) = ref, other
    if not np.isclose(v0, v1, rtol=RTOL, atol=ATOL):
        return f"value {v1!r} vs {v0!r}"
    if len(g0) != len(g1):
        return f"{len(g1)} gradient leaves vs {len(g0)}"
    for i, (a, b) in enumerate(zip(g0, g1)):
        if np.shape(a) != np.shape(b):
            return f"gradient leaf {i}: shape {np.shape(b)} vs {np.shape(a)}"
        scale = max(float(np.max(np.abs(a))) if np.size(a) else 0.0, 1.0)
        if not np.allclose(b, a, rtol=RTOL, atol=ATOL * scale):
            err = float(np.max(np.abs(b - a)))
            return f"gradient leaf {i}: max abs difference {err:.3e} (largest entry {scale:.3e})"
    return ""


def run_case(mod, fws: list[Framework], budget: float) -> Row:
    args = mod.inputs()
    primal = measure(lambda: mod.f(*args), budget)
    row = Row(mod.NAME, primal)
    results, runners = {}, {}
    timed = {}
    for fw in fws:
        if not fw.available:
            continue
        try:
            if fw.external is not None:
                value, grads, timed[fw.name], extra = fw.external(mod, budget)
                results[fw.name] = (value, grads)
                row.extra[fw.name] = extra
                continue
            run, result = fw.make(mod, args)
            results[fw.name] = result(run())  # also the warm-up (and, for jax.jit, the compilation)
            runners[fw.name] = run
        except Exception as e:  # noqa: BLE001 - any failure is reported as n/a with its reason
            row.cells[fw.name] = Cell(reason=short_reason(e))
    # Cross-check every gradient against one reference before timing anything.
    if results:
        ref_name = next(iter(results))
        for name, res in results.items():
            if name == ref_name:
                continue
            diff = compare(results[ref_name], res)
            if diff:
                row.cells[name] = Cell(mismatch=f"{name} disagrees with {ref_name}: {diff}")
                print(f"\n!!! GRADIENT MISMATCH in {mod.NAME}: {name} disagrees with {ref_name}: {diff} !!!\n",
                      file=sys.stderr, flush=True)
    for name, run in runners.items():
        cell = row.cells.setdefault(name, Cell())
        cell.seconds = measure(run, budget)
    for name, seconds in timed.items():
        row.cells.setdefault(name, Cell()).seconds = seconds
    return row


# --- per-primitive overhead -------------------------------------------------------------------

CHAIN = 1000


def chain_sin(x):
    for _ in range(CHAIN):
        x = np.sin(x)
    return np.sum(x)


def chain_add(x):
    for _ in range(CHAIN):
        x = x + 1.0
    return np.sum(x)


def overhead(budget: float) -> list[tuple[str, float, float]]:
    """(op, primal µs per op, adcli forward+reverse µs per op) for chains of 1000 ops on 10 floats."""
    x = np.linspace(0.1, 1.0, 10)
    out = []
    for label, fn in (("np.sin(x)", chain_sin), ("x + 1.0", chain_add)):
        vg = adcli.value_and_grad(fn)
        vg(x)
        # Interleave short primal and AD measurements and take medians: the machine's speed
        # drifts over seconds, and alternating keeps the drift out of the difference.
        primal, ad = [], []
        for _ in range(7):
            primal.append(measure(lambda: fn(x), budget / 7) / CHAIN)
            ad.append(measure(lambda: vg(x), budget / 7) / CHAIN)
        out.append((label, float(np.median(primal)) * 1e6, float(np.median(ad)) * 1e6))
    return out


def pullback_math(budget: float) -> float:
    """µs per op of the NumPy work sin's pullback must do anyway (g * cos(x)), so that the
    engine's own machinery can be told apart from it."""
    x = np.linspace(0.1, 1.0, 10)
    g = np.ones(10)

    def run():
        for _ in range(CHAIN):
            g * np.cos(x)

    return measure(run, budget) / CHAIN * 1e6


def dispatch_scaling(budget: float) -> list[tuple[str, float]]:
    """µs per call of a function served by a hand-written rule for its signature, with that
    one rule registered, and with 1,000 more rules (999 other signatures of the same function
    plus 1,000 rules for other callables) registered: lookup is a dict access, so the two
    should match within noise."""
    from adcli.rules import register, unregister

    def cumsum_rule(x):
        return np.cumsum(x), lambda g: (np.cumsum(g[::-1])[::-1],)

    def chain(x):
        for _ in range(200):
            x = np.cumsum(x) * 0.5
        return np.sum(x)

    x = np.linspace(0.1, 1.0, 10)
    vg = adcli.value_and_grad(chain)
    codes = ["f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "c64", "c128", "b"]
    others = [f"{c}[{n}d{lay}]" for c in codes for n in range(2, 40) for lay in ("", ",F", ",strided")][:999]

    def add_more():
        for d in others:
            register(np.cumsum, (d,), cumsum_rule)
        for i in range(1000):
            register(f"bench_rules:f{i}", ("f64[1d]",), cumsum_rule)

    def remove_more():
        for d in others:
            unregister(np.cumsum, (d,))
        for i in range(1000):
            unregister(f"bench_rules:f{i}")

    # Alternate the two states (ABAB...) and take medians: on a shared machine, load drifts
    # over seconds, and alternating keeps it from favouring one state.
    few, many = [], []
    register(np.cumsum, ("f64[1d]",), cumsum_rule)
    try:
        vg(x)
        for _ in range(5):
            few.append(measure(lambda: vg(x), budget / 5) / 200 * 1e6)
            add_more()
            many.append(measure(lambda: vg(x), budget / 5) / 200 * 1e6)
            remove_more()
    finally:
        unregister(np.cumsum)
        remove_more()
    return [("1 rule registered", float(np.median(few))), ("1,000 more rules registered", float(np.median(many)))]


def profiling_overhead(mods: dict, budget: float) -> list[tuple[str, float, float, float]]:
    """(case, plain gradient s, profiled gradient s recorded in full, profiled gradient s by
    default) per case: the profiled gradients run the case compiled as `adcli profile` compiles
    it (every function a dispatch point) with a profiling session installed, one session per
    column for the whole measurement, as over a training loop: ``every_gradient=True`` records
    each gradient in full, the default records some and times the rest whole
    (profiler/sampling.py). The replays are not part of it (`adcli profile` reports them as
    replay_s)."""
    import types

    from adcli.profiler.session import Session, run_with_profile_hook
    from adcli.rules.instrument import instrument

    out = []
    for name, mod in mods.items():
        inst = types.ModuleType(mod.__name__)
        inst.__file__ = mod.__file__
        with open(mod.__file__, "rb") as f:
            exec(instrument(f.read(), mod.__file__), inst.__dict__)
        args = mod.inputs()
        plain = adcli.value_and_grad(mod.f, argnums=mod.ARGNUMS)
        profiled = adcli.value_and_grad(inst.f, argnums=inst.ARGNUMS)
        root = os.path.dirname(mod.__file__)
        every, default = Session(root_dir=root, every_gradient=True), Session(root_dir=root)
        for session in (every, default):
            run_with_profile_hook(session, lambda: profiled(*args))  # first calls: samples, signatures
        p_times, e_times, d_times = [], [], []
        for _ in range(5):  # interleaved, for the same reason as in overhead()
            p_times.append(measure(lambda: plain(*args), budget / 10))
            # each session installed for the whole measurement, as `adcli profile` installs it for the program
            e_times.append(run_with_profile_hook(every, lambda: measure(lambda: profiled(*args), budget / 10)))
            d_times.append(run_with_profile_hook(default, lambda: measure(lambda: profiled(*args), budget / 10)))
        out.append((name, float(np.median(p_times)), float(np.median(e_times)), float(np.median(d_times))))
    return out


# --- output -----------------------------------------------------------------------------------


def select_cases(mods: dict, cases: str, parser) -> dict:
    """The cases ``--cases a,b`` names (all when empty), in that order; an unknown name is a usage error."""
    if not cases:
        return mods
    wanted = [c.strip() for c in cases.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in mods]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; the cases are: {', '.join(mods)}")
    return {n: mods[n] for n in wanted}


def fmt_time(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1.0:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def render(rows: list[Row], fws: list[Framework], fmt: str, ovh, header: str) -> str:
    names = [fw.name for fw in fws if fw.available]
    notes: list[str] = []

    def note(text: str) -> str:
        if text not in notes:
            notes.append(text)
        return f"[{notes.index(text) + 1}]"

    cols = ["case", "NumPy primal"] + [f"{n} ratio (time)" for n in names]
    table = []
    for r in rows:
        line = [r.name, fmt_time(r.primal)]
        for n in names:
            c = r.cells.get(n)
            if c is None:
                line.append("")
            elif c.seconds is None:
                line.append("n/a " + note(f"{n}, {r.name}: {c.reason}"))
            else:
                text = f"{c.seconds / r.primal:.1f} ({fmt_time(c.seconds)})"
                if c.mismatch:
                    text = "MISMATCH " + note(c.mismatch) + " " + text
                line.append(text)
        table.append(line)

    ocols = ["op (chain of 1000, 10 float64)", "NumPy primal per op", "adcli fwd+rev per op", "adcli overhead per op"]
    otable = [[op, f"{p:.2f} µs", f"{a:.2f} µs", f"{a - p:.2f} µs"] for op, p, a in ovh]
    skipped = [fw.note for fw in fws if not fw.available]
    compiled = [f"{r.name} {r.extra['jax.jit']:.1f} s" for r in rows if "jax.jit" in r.extra]
    if compiled:
        skipped.append("jax.jit times exclude the first call (tracing + XLA compilation): " + ", ".join(compiled))
    lines: list[str] = []

    if fmt == "markdown":
        lines.append(header)
        lines.append("")
        lines += _md(cols, table)
        if ovh:
            lines.append("")
            lines += _md(ocols, otable)
        for i, t in enumerate(notes, 1):
            lines.append(f"\n[{i}] {t}" if i == 1 else f"[{i}] {t}")
        lines += [f"\nNote: {s}" for s in skipped]
        return "\n".join(lines)

    if fmt == "table":
        try:
            from rich import box
            from rich.console import Console
            from rich.table import Table
        except ImportError:
            fmt = "plain"
        else:
            console = Console(width=max(160, Console().width))
            with console.capture() as cap:
                console.print(header, highlight=False)
                for title, c, t in (("gradient time / NumPy primal time (median)", cols, table),
                                    ("adcli per-primitive cost", ocols, otable if ovh else None)):
                    if t is None:
                        continue
                    tb = Table(title=title, box=box.SIMPLE_HEAD)
                    for i, name in enumerate(c):
                        tb.add_column(name, justify="left" if i == 0 else "right")
                    for line in t:
                        tb.add_row(*line)
                    console.print(tb)
                for i, t in enumerate(notes, 1):
                    console.print(f"[{i}] {t}", highlight=False, markup=False)
                for s in skipped:
                    console.print(f"Note: {s}", highlight=False, markup=False)
            return cap.get().rstrip()

    lines.append(header)
    lines.append("")
    lines += _plain(cols, table)
    if ovh:
        lines.append("")
        lines += _plain(ocols, otable)
    if notes:
        lines.append("")
    lines += [f"[{i}] {t}" for i, t in enumerate(notes, 1)]
    lines += [f"Note: {s}" for s in skipped]
    return "\n".join(lines)


def engine_section(ovh, math_us: float, scaling, fmt: str) -> str:
    """The engine's own machinery per primitive (AD time minus the primal op and minus the
    NumPy work of the pullback itself), and dispatch cost with 1 vs 1,001 registered rules."""
    sin = next(a - p for op, p, a in ovh if op.startswith("np.sin"))
    add = next(a - p for op, p, a in ovh if op.startswith("x +"))
    lines = [
        "",
        "adcli engine machinery per primitive (forward + reverse, excluding the NumPy work of the",
        "primal op and of its pullback):",
        f"  np.sin(x): {sin - math_us:.2f} µs  (overhead {sin:.2f} µs minus {math_us:.2f} µs for g * cos(x))",
        f"  x + 1.0:   {add:.2f} µs  (its pullback does no NumPy work)",
        "rule dispatch (np.cumsum served by a hand-written rule, 10 float64, per call incl. the rule):",
    ]
    lines += [f"  {label}: {us:.2f} µs" for label, us in scaling]
    if fmt == "markdown":
        return "\n".join(("    " + ln) if ln else ln for ln in lines)
    return "\n".join(lines)


def _md(cols, table):
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join(["---"] + ["---:"] * (len(cols) - 1)) + "|"]
    out += ["| " + " | ".join(line) + " |" for line in table]
    return out


def _plain(cols, table):
    widths = [max(len(str(x)) for x in col) for col in zip(cols, *table)]
    fmt_line = lambda line: "  ".join(  # noqa: E731
        str(x).ljust(w) if i == 0 else str(x).rjust(w) for i, (x, w) in enumerate(zip(line, widths))
    )
    return [fmt_line(cols), "  ".join("-" * w for w in widths)] + [fmt_line(line) for line in table]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="a short timing budget per measurement (about 0.05 s)")
    p.add_argument("--budget", type=float, default=None, help="seconds per measurement (default 0.5, --quick 0.05)")
    p.add_argument("--format", choices=("table", "plain", "markdown"), default="table",
                   help="table: rich on the terminal (plain text without rich); markdown: for notes")
    p.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    p.add_argument("--no-jit", action="store_true", help="leave out the jax.jit column")
    p.add_argument("--jit-timeout", type=float, default=120.0,
                   help="seconds allowed for one case's jax.jit compilation and timing (default 120)")
    p.add_argument("--no-overhead", action="store_true", help="leave out adcli's per-primitive overhead")
    p.add_argument("--no-profiler", action="store_true", help="leave out the profiling overhead per case")
    p.add_argument("--no-peers", action="store_true", help="time adcli only (no autograd/torch/jax columns)")
    p.add_argument("--no-suggested", action="store_true",
                   help="leave out the check of the advice (predicted vs measured saving, benchmarks/advice.py)")
    p.add_argument("--no-ported", action="store_true", help="leave out the ported programs (tests/ported)")
    p.add_argument("--jit-worker", metavar="CASE", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    budget = a.budget if a.budget is not None else (0.05 if a.quick else 0.5)
    if a.jit_worker:
        return jit_worker(a.jit_worker, budget)

    mods = load_profiles()
    if not a.no_ported:
        mods.update(load_ported())
    mods = select_cases(mods, a.cases, p)
    fws = frameworks(use_jit=not a.no_jit, jit_timeout=a.jit_timeout)
    if a.no_peers:
        fws = [fw for fw in fws if fw.name == "adcli"]

    header = (
        f"Python {platform.python_version()}, NumPy {np.__version__}, "
        + ", ".join(f"{fw.name} {fw.version}" for fw in fws if fw.available)
        + f"; 1 thread (BLAS/OpenMP/XLA/torch); median, ~{budget:g} s per measurement; "
        "ratio = gradient time / NumPy primal time"
    )
    rows = []
    for name, mod in mods.items():
        print(f"  {name} ...", file=sys.stderr, flush=True)
        rows.append(run_case(mod, fws, budget))
    ovh = [] if a.no_overhead else overhead(budget)
    print(render(rows, fws, a.format, ovh, header))
    if ovh:
        print(engine_section(ovh, pullback_math(budget), dispatch_scaling(budget), a.format))
    if not a.no_suggested:
        import advice

        from adcli.advisor import Thresholds

        print("\nthe advice, checked (benchmarks/advice.py: top import and hand-write per workload, predicted vs "
              "measured share of the gradient time):")
        checked = [r for mod in mods.values() if not hasattr(mod, "PORTED")
                   for r in advice.run_case(Path(mod.__file__), budget, Thresholds())]
        print(advice.render(checked, "markdown" if a.format == "markdown" else "plain"))
    if not a.no_profiler:
        rows_p = profiling_overhead({n: m for n, m in mods.items() if not hasattr(m, "PORTED")}, budget)
        lines = ["", "profiling overhead (profiled gradient / plain gradient over a loop of gradients, replays excluded; "
                     "every gradient recorded in full, and by default):"]
        lines += [f"  {n}: {p * 1e3:.3f} ms -> every {e * 1e3:.3f} ms x{e / p:.2f}, default {d * 1e3:.3f} ms x{d / p:.2f}"
                  for n, p, e, d in rows_p]
        print("\n".join(("    " + ln) if (ln and a.format == "markdown") else ln for ln in lines))
    mismatches = [c.mismatch for r in rows for c in r.cells.values() if c.mismatch]
    if mismatches:
        print(f"\n{len(mismatches)} GRADIENT MISMATCH(ES): see above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
