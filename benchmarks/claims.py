"""The decomposition's timing claims, measured: what tests/test_decompose.py checks only as
structure (which nodes it counts and keeps whole) because timings are not stable unit tests on a
shared machine. Each claim is a share of one decomposition (profiler/decompose.py) of a small
gradient, with the bound it should keep; each is measured ``--repeats`` times and reported as
the median share and how many runs kept the bound.

    python benchmarks/claims.py               # ~20 s
    python benchmarks/claims.py --repeats 9 --format markdown

Run it on a quiet machine: a busy one adds time to single runs, which the shares then carry.
The exit status is 1 when a claim's median misses its bound.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_var] = "1"  # BLAS pinned to one thread before NumPy loads, as in the replays

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

from adcli.engine.grad import vjp  # noqa: E402
from adcli.profiler.decompose import decompose  # noqa: E402


def _scalar_loop():
    x = np.linspace(0.1, 1.0, 200)

    def loop(v):
        total = 0.0
        for i in range(200):
            total = total + v[i] * 2.0
        return total
    return vjp(loop, 0, 1.0), [x]


def _big():
    return vjp(lambda m: np.sum(np.sin(m) * m), 0, 1.0), [np.random.default_rng(0).standard_normal((400, 400))]


def _outers():
    rng = np.random.default_rng(1)

    def outers(a, b):
        y = np.outer(a[0], b[0])
        for k in range(1, 8):
            y = y + np.outer(a[k], b[k])
        return np.sum(y)
    return vjp(outers, (0, 1), 1.0), [rng.standard_normal((8, 3)), rng.standard_normal((8, 2))]


def _reshaped():
    return (vjp(lambda m: np.sum(np.reshape(m, (900, 100)) ** 2), 0, 1.0),
            [np.random.default_rng(2).standard_normal((300, 300))])


def _passes():
    rng = np.random.default_rng(3)
    return (vjp(lambda x, y: np.sum(np.maximum(x, y) / y), (0, 1), 1.0),
            [rng.standard_normal((300, 300)), rng.uniform(1.0, 2.0, (300, 300))])


def _matmul():
    rng = np.random.default_rng(4)
    return vjp(lambda x, y: np.sum(x @ y), (0, 1), 1.0), [rng.standard_normal((200, 200)), rng.standard_normal((200, 200))]


def _solve(rhs):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((300, 300)) + 300 * np.eye(300)
    if rhs == 1:
        return vjp(lambda m, v: np.sum(np.linalg.solve(m, v)), (0, 1), 1.0), [a, rng.standard_normal(300)]
    return vjp(lambda m, v: np.sum(np.linalg.solve(m, v)), 0, 1.0), [a, rng.standard_normal((300, rhs))]


def _cholesky():
    rng = np.random.default_rng(6)
    A = rng.standard_normal((200, 200))

    def loglik(k, v):
        L = np.linalg.cholesky(k)
        z = np.linalg.solve(L, v)
        return -0.5 * np.dot(z, z) - np.sum(np.log(np.diagonal(L)))
    return vjp(loglik, (0, 1), 1.0), [A @ A.T + 200 * np.eye(200), rng.standard_normal(200)]


def _chain():
    def chain(v):
        for _ in range(40):
            v = np.sin(v) * 1.01
        return np.mean(v)
    return vjp(chain, 0, 1.0), [np.random.default_rng(3).standard_normal(4)]


def _vector_over_work(p):
    return p.vector_pullback_s / p.work_s


def _lean_over_vector(p):
    return p.lean_pullback_s / p.vector_pullback_s


def _closed_over_fixed(p):
    return p.closed_fixed_s / (p.work_s - p.vector_pullback_s)


# (claim, workload, share of the decomposition, "<" or ">", bound)
CLAIMS = [
    ("a scalar loop's NumPy work is per-call cost", _scalar_loop, "vector / work", _vector_over_work, "<", 0.5),
    ("work on 400x400 arrays is work on data", _big, "vector / work", _vector_over_work, ">", 0.8),
    ("outer's own fixed cost is not work on data", _outers, "vector / work", _vector_over_work, "<", 0.35),
    ("a reshape keeps the generic constant: mostly data", _reshaped, "vector / work", _vector_over_work, ">", 0.5),
    ("maximum and divide: a closed form does fewer passes", _passes, "lean / vector", _lean_over_vector, "<", 0.8),
    ("a matrix product's reverse is kept whole", _matmul, "lean / vector", _lean_over_vector, ">", 0.9),
    ("a solve with one right-hand side reuses the factor", lambda: _solve(1), "lean / vector", _lean_over_vector,
     "<", 0.7),
    ("a solve with 300 right-hand sides is kept whole", lambda: _solve(300), "lean / vector", _lean_over_vector,
     ">", 0.9),
    ("a Gaussian likelihood needs only K^-1 from its factor", _cholesky, "lean / vector", _lean_over_vector, "<", 0.9),
    ("a closed form pays each operation's call once", _chain, "closed fixed / fixed", _closed_over_fixed, "<", 0.2),
]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5, help="decompositions per claim (default 5)")
    p.add_argument("--format", choices=("plain", "markdown"), default="plain")
    args = p.parse_args(argv)
    rows, missed = [], 0
    for claim, workload, name, share, op, bound in CLAIMS:
        grad, inputs = workload()
        shares = [share(decompose(grad, inputs)) for _ in range(args.repeats)]
        kept = sum((s < bound) if op == "<" else (s > bound) for s in shares)
        median = statistics.median(shares)
        ok = median < bound if op == "<" else median > bound
        missed += not ok
        rows.append((claim, f"{name} {op} {bound:g}", f"{median:.3f}", f"{kept}/{len(shares)}", "yes" if ok else "NO"))
    head = ("claim", "bound", "median", "runs kept", "holds")
    if args.format == "markdown":
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        for row in [head, *rows]:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths)))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
