#!/usr/bin/env python
"""The per-rule table: each native rule's gradient (forward + pullback) against its primal, on
arrays of 10^4 elements or more, next to autograd's VJP of the same function.

    python benchmarks/rules.py                      # every rule at both sizes, plain tables
    python benchmarks/rules.py --format markdown --rules cholesky,solve --sizes small

Two sizes: *small*, 10^4 elements (100 x 100 matrices, 10^4-long vectors), where a call of a
microsecond or two leaves NumPy's and the engine's fixed costs visible; and *large*, 10^6
elements (the linear algebra at 300 x 300, kron of 32 x 32 factors), where the work that scales
with the data dominates.

Two adcli columns, each divided by the primal (the NumPy call alone):

* *rule*: the rule itself, its forward pass and its pullback. The arguments are traced on an
  open tape, the function records its node(s), and the reverse pass runs from a fixed random
  cotangent of the output's shape. This is the cost a rule adds inside a program's gradient;
  the harness's own work around it (the tape, the traced arguments, the accumulator, about
  1 µs, the fixed cost of a gradient that target 3 of the speed issue counts) is timed alongside
  on a function returning its argument and subtracted. The target is 3 or less.
* *vjp*: the same through ``vjp(f, argnums, cotangent)``, the entry point the profiler's replays
  use, which adds the fixed cost of one gradient computation (tracing the inputs, closing the
  tape, checking and copying the cotangents out: about 15-20 µs).

Two columns measure each rule against its *floor* (benchmarks/floors.py): the forward pass and
the pullback written by hand in plain NumPy and SciPy for that one function, with none of an
engine's work. *floor ratio* is the floor over the primal: over 3, no rule built on NumPy's
kernels meets the target (a view's primal is free, a mask product or a second product reads and
writes as much as the primal). *rule / floor* is how far the rule is from that hand-written code.
Each floor's cotangents are checked against adcli's first (rtol 1e-6; a mismatch is printed).

autograd's column is ``autograd.make_vjp`` then the vjp of the same cotangent, divided by the
same primal. Times are medians of samples taken alternately (primal,
adcli, autograd, ...), BLAS pinned to one thread before NumPy loads. Before timing, adcli's
cotangents are checked against autograd's (rtol 1e-6): a mismatch is printed and the script
exits 1.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_var] = "1"  # BLAS pinned to one thread before NumPy loads

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

from floors import floors  # noqa: E402

from adcli.engine.accumulate import Accumulator  # noqa: E402
from adcli.engine.core import make_tracer  # noqa: E402
from adcli.engine.grad import vjp  # noqa: E402
from adcli.engine.tape import Tape, backward  # noqa: E402

TARGET = 3.0
# Matrices are N x N, vectors N * N long; the linear algebra runs at N_LINALG (its flops grow as
# N^3) and kron's factors are K x K (a K^2 x K^2 product).
SIZES = {"small": dict(N=100, N_LINALG=100, K=10),  # 10^4 elements
         "large": dict(N=1000, N_LINALG=300, K=32)}  # 10^6 elements (linalg 9 x 10^4)


def _spd(rng, n):
    a = rng.standard_normal((n, n))
    return a @ a.T / n + np.eye(n)


def cases(N=100, N_LINALG=100, K=10):
    """(name, function, arguments, argnums): one per native rule, arrays of 10^4+ elements."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((N, N)), rng.standard_normal((N, N))
    pos = np.abs(x) + 0.5
    v = rng.standard_normal(N * N)
    a, b = rng.standard_normal(N), rng.standard_normal(N)
    s10, t10 = rng.standard_normal((K, K)), rng.standard_normal((K, K))
    spd = _spd(rng, N_LINALG)
    sq, sq2 = (np.ascontiguousarray(m[:N_LINALG, :N_LINALG]) for m in (x, y))
    idx = rng.integers(0, N, size=N)

    def fancy(u):
        return u[idx]

    fancy.index = idx  # for its floor (floors.py)
    out = [
        ("sin", np.sin, (x,), 0), ("exp", lambda u: np.exp(u * 0.1), (x,), 0), ("log", np.log, (pos,), 0),
        ("tanh", np.tanh, (x,), 0), ("sqrt", np.sqrt, (pos,), 0), ("abs", np.abs, (x,), 0),
        ("add", np.add, (x, y), (0, 1)), ("multiply", np.multiply, (x, y), (0, 1)),
        ("divide", np.divide, (x, pos), (0, 1)), ("power", lambda u: u ** 3, (x,), 0),
        ("maximum", np.maximum, (x, y), (0, 1)), ("where", lambda u, w: np.where(u > 0, u, w), (x, y), (0, 1)),
        ("broadcast add", lambda u, w: u + w, (x, a), (0, 1)),
        ("sum", np.sum, (x,), 0), ("sum axis=0", lambda u: np.sum(u, axis=0), (x,), 0),
        ("mean axis=0", lambda u: np.mean(u, axis=0), (x,), 0), ("var axis=0", lambda u: np.var(u, axis=0), (x,), 0),
        ("std axis=0", lambda u: np.std(u, axis=0), (x,), 0), ("max axis=1", lambda u: np.max(u, axis=1), (x,), 0),
        ("cumsum", lambda u: np.cumsum(u, axis=0), (x,), 0), ("prod axis=0", lambda u: np.prod(u, axis=0), (pos,), 0),
        ("transpose", lambda u: u.T, (x,), 0), ("reshape", lambda u: np.reshape(u, (N * N,)), (x,), 0),
        ("slice", lambda u: u[::2, 1:], (x,), 0), ("fancy index", fancy, (x,), 0),
        ("concatenate", lambda u, w: np.concatenate([u, w]), (x, y), (0, 1)),
        ("stack", lambda u, w: np.stack([u, w]), (x, y), (0, 1)),
        ("roll", lambda u: np.roll(u, 3, axis=1), (x,), 0), ("triu", np.triu, (x,), 0),
        ("outer", np.outer, (a, b), (0, 1)), ("kron", np.kron, (s10, t10), (0, 1)),
        ("matmul", np.matmul, (sq, sq2), (0, 1)), ("dot (vector)", np.dot, (v, v), (0, 1)),
        ("einsum matmul", lambda u, w: np.einsum("ij,jk->ik", u, w), (sq, sq2), (0, 1)),
        ("cholesky", np.linalg.cholesky, (spd,), 0), ("solve", np.linalg.solve, (spd, sq2), (0, 1)),
        ("inv", np.linalg.inv, (spd,), 0), ("det", np.linalg.det, (spd,), 0),
        ("slogdet", lambda u: np.linalg.slogdet(u)[1], (spd,), 0),
        ("eigh", lambda u: np.linalg.eigh(u)[0], (spd,), 0),
        ("svd", lambda u: np.linalg.svd(u, compute_uv=False), (sq,), 0),
        ("norm", np.linalg.norm, (x,), 0),
    ]
    return out


def _same_rng_cotangent(out):
    rng = np.random.default_rng(1)
    return rng.standard_normal(np.shape(out)) if np.ndim(out) else 1.0


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _repeat(fn, n: int) -> None:
    for _ in range(n):  # each result dropped at once: a list of them would time fresh memory
        fn()


def alternate(fns: list, budget: float) -> list[float]:
    """Median seconds of each of ``fns``, sampled in turn in groups lasting at least 1 ms."""
    for fn in fns:
        fn()
    inner = [max(1, int(1e-3 / max(_timed(fn), 1e-7))) for fn in fns]
    times: list[list[float]] = [[] for _ in fns]
    end = time.perf_counter() + budget
    while len(times[0]) < 5 or (time.perf_counter() < end and len(times[0]) < 500):
        for fn, k, out in zip(fns, inner, times):
            out.append(_timed(lambda: _repeat(fn, k)) / k)
    return [statistics.median(t) for t in times]


def on_tape(fn, args, argnums, cot):
    """A call of ``fn``'s rule alone: its forward pass on traced arguments, then its pullback
    from ``cot``; returns the cotangents of the arguments in ``argnums``."""
    nums = (argnums,) if isinstance(argnums, int) else argnums

    def run():
        tape = Tape()
        traced = list(args)
        for k in nums:
            traced[k] = make_tracer(args[k], tape.leaf(), tape)
        out = fn(*traced)
        acc = Accumulator(len(tape.nodes))
        acc.grads[out.idx] = cot
        backward(tape.nodes, acc, out.idx)
        return [acc.grads[traced[k].idx] for k in nums]

    return run


def _autograd():
    try:
        import autograd
        import autograd.numpy as anp
        return autograd, anp
    except ImportError:  # pragma: no cover - autograd is a dependency of adcli
        return None, None


def _autograd_function(fn):
    anp = _autograd()[1]
    if getattr(fn, "__module__", None) == __name__:  # a function of cases(): run on autograd's numpy
        import types
        return types.FunctionType(fn.__code__, {**fn.__globals__, "np": anp}, "f", fn.__defaults__, fn.__closure__)
    if fn in (np.linalg.cholesky, np.linalg.solve, np.linalg.inv, np.linalg.det):
        return getattr(anp.linalg, fn.__name__)
    return getattr(anp, fn.__name__)


def _same_cotangents(name, mine, floor) -> bool:
    """Whether a floor computes adcli's cotangents (rtol 1e-6): it must do the same work."""
    for m, f in zip(mine if isinstance(mine, tuple) else (mine,), floor):
        m, f = np.asarray(m), np.broadcast_to(f, np.shape(m))
        if name in ("cholesky", "eigh"):  # adcli's reads the lower triangle only: compare symmetrised
            m, f = (m + m.T) / 2, (f + f.T) / 2
        if not np.allclose(m, f, rtol=1e-6, atol=1e-9 * max(float(np.max(np.abs(f))), 1e-300)):
            return False
    return True


def _harness(args, argnums):
    """on_tape's own work around a rule (the tape, the traced arguments, the accumulator, the
    reverse pass over the leaves): on_tape of a function that returns its first traced argument."""
    first = argnums if isinstance(argnums, int) else argnums[0]
    return on_tape(lambda *traced: traced[first], args, argnums, 1.0)


def run(names: set, budget: float, size: dict) -> list[dict]:
    autograd, _ = _autograd()
    rows = []
    for name, fn, args, argnums in cases(**size):
        if names and name not in names:
            continue
        out = fn(*args)
        cot = _same_rng_cotangent(out)
        ours = vjp(fn, argnums, cot)
        rule = on_tape(fn, args, argnums, cot)
        _, mine = ours(*args)
        for m, r in zip((mine,) if isinstance(argnums, int) else mine, rule()):
            np.testing.assert_array_equal(np.broadcast_to(r, np.shape(m)), m)  # the same pullback
        fns = [lambda: fn(*args), rule, lambda: ours(*args), _harness(args, argnums)]
        row = {"rule": name, "shape": " ".join("x".join(map(str, np.shape(a))) for a in args), "note": ""}
        floor = floors(getattr(fn, "index", None))[name]
        fns.append(lambda floor=floor: floor(*args, cot))
        if not _same_cotangents(name, mine, floor(*args, cot)):
            row["note"] = "FLOOR MISMATCH with adcli"
            print(f"FLOOR MISMATCH: {name}", file=sys.stderr)
        ag = None
        if autograd is not None:
            try:
                f_ag = _autograd_function(fn)
                nums = (argnums,) if isinstance(argnums, int) else argnums

                def ag_vjp(f_ag=f_ag, nums=nums):
                    return [autograd.make_vjp(f_ag, k)(*args)[0](cot) for k in nums]

                ag_grads = ag_vjp()
                _, mine = ours(*args)
                mine = (mine,) if isinstance(argnums, int) else mine
                for m, t in zip(mine, ag_grads):
                    if name == "cholesky":  # NumPy reads the lower triangle, and so does adcli's gradient;
                        m, t = (m + m.T) / 2, (t + t.T) / 2  # autograd's is symmetric: compare both symmetrised
                    scale = max(float(np.max(np.abs(t))), 1e-300)
                    if not np.allclose(m, t, rtol=1e-6, atol=1e-9 * scale):
                        row["note"] = "GRADIENT MISMATCH with autograd"
                        print(f"GRADIENT MISMATCH: {name}", file=sys.stderr)
                ag = ag_vjp
            except Exception as e:  # noqa: BLE001 - autograd cannot run it: no column
                row["note"] = f"autograd: {type(e).__name__}"
        if ag is not None:
            fns.append(ag)
        times = alternate(fns, budget)
        row["primal"], row["vjp"], row["floor"] = times[0], times[2], times[4]
        row["rule_s"] = times[1] - times[3]  # the rule's own forward and pullback, without on_tape's work
        row["autograd"] = times[5] if ag is not None else None
        rows.append(row)
        print(f"  {name}: {times[1] / times[0]:.1f}x", file=sys.stderr, flush=True)
    return rows


def render(rows: list[dict], fmt: str) -> str:
    cols = ["rule", "arguments", "primal (µs)", "rule fwd+pullback (µs)", "rule ratio", f"≤ {TARGET:g}",
            "floor ratio", "rule / floor", "vjp ratio", "autograd ratio", "note"]
    table = [[r["rule"], r["shape"], f"{r['primal'] * 1e6:.1f}", f"{r['rule_s'] * 1e6:.1f}",
              f"{r['rule_s'] / r['primal']:.2f}", "yes" if r["rule_s"] <= TARGET * r["primal"] else "NO",
              f"{r['floor'] / r['primal']:.2f}", f"{r['rule_s'] / r['floor']:.2f}", f"{r['vjp'] / r['primal']:.2f}",
              "—" if r["autograd"] is None else f"{r['autograd'] / r['primal']:.2f}", r["note"]] for r in rows]
    if fmt == "markdown":
        align = "|" + "|".join("---" if i in (0, 1, 10) else "---:" for i in range(len(cols))) + "|"
        lines = ["| " + " | ".join(cols) + " |", align]
        lines += ["| " + " | ".join(row) + " |" for row in table]
        return "\n".join(lines)
    widths = [max(len(c), *(len(row[i]) for row in table)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in table]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rules", default="", help="comma-separated rule names (default: all)")
    p.add_argument("--budget", type=float, default=0.3, help="seconds of alternate timing per rule (default 0.3)")
    p.add_argument("--format", choices=("plain", "markdown"), default="plain")
    p.add_argument("--sizes", default="small,large",
                   help="small: 10^4 elements; large: 10^6 elements, linear algebra at 300 x 300 (default: both)")
    a = p.parse_args(argv)
    names = {n.strip() for n in a.rules.split(",") if n.strip()}
    known = {c[0] for c in cases()}
    if names - known:
        p.error(f"unknown rule(s): {', '.join(sorted(names - known))}")
    sizes = [z.strip() for z in a.sizes.split(",") if z.strip()]
    if not sizes or set(sizes) - set(SIZES):
        p.error(f"--sizes takes small, large or both, not {a.sizes!r}")
    failed = False
    for size in sizes:
        rows = run(names, a.budget, SIZES[size])
        n = SIZES[size]
        print(f"{size}: matrices {n['N']}x{n['N']}, linear algebra {n['N_LINALG']}x{n['N_LINALG']}, kron of {n['K']}x{n['K']}")
        print(render(rows, a.format))
        over = [r["rule"] for r in rows if r["rule_s"] > TARGET * r["primal"]]
        print(f"\n{size}: {len(rows) - len(over)} of {len(rows)} rules at or under {TARGET:g}x their primal"
              + (f"; over: {', '.join(over)}" if over else "") + "\n")
        failed |= any("MISMATCH" in r["note"] for r in rows)
        floors_over = [r["rule"] for r in rows if r["floor"] > TARGET * r["primal"]]
        print(f"{size}: the NumPy floor itself is over {TARGET:g}x for {len(floors_over)} of {len(rows)}"
              + (f": {', '.join(floors_over)}" if floors_over else "") + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
