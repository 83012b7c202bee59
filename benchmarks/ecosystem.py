"""The corpus issue's measurements: a real corpus run on a two-worker Dask cluster, and scale.

    python benchmarks/ecosystem.py materialize OUT [--fuzz 20]   # the corpus as scripts in OUT
    python benchmarks/ecosystem.py run --store S [--fuzz 20] [--workers 2] [--replay-budget 10]
    python benchmarks/ecosystem.py scale --from S --store S2 --profiles 10000
    python benchmarks/ecosystem.py overhead [--programs 40] [--workers 2]
    python benchmarks/ecosystem.py defaults --store S [--workers 2] [--replay-budget 60] [--fixture DIR]

The corpus (``materialize``): the published examples ported in ``benchmarks/corpus`` (copied), a
driver script for each program of ``tests/ported`` (its ``loss`` differentiated on
``make_inputs(seed)`` for three seeds, as a user's training loop would), and fuzzer programs that
take a gradient (``tests/fuzz``: seeds from 1000, those that run cleanly, each script calling
``adcli.grad`` on its float arguments three times). ``profiles/`` is left out: the issue asks for
programs from outside it.

``run`` materializes the corpus into a temporary folder, runs ``adcli corpus run`` on it with a
local cluster and prints the run's summary (programs, failures by reason, wall time) and the
library tier (``adcli corpus suggest --format markdown``).

``scale`` makes a store of ``--profiles`` programs from a real one (each real program's rows
repeated under new keys in one SQL statement, its profile file hard-linked) and times the library
tier over it: the index's query alone, and the advisor over every profile.

``defaults`` profiles the bundled corpus (``profiles/``) with the engine's shipped library rules
taken out (``benchmarks/advised_out.py``: roll, var, outer, triu, tril derived again) and prints
what the corpus advice picks against what the engine ships; ``--fixture tests/data/corpus_defaults``
saves its profiles for the test that checks the shipped defaults against the advice
(tests/test_corpus_defaults.py: profiling 23 programs takes over a minute, too long for CI).

``overhead`` times the scheduler's cost per program: a corpus of programs that take one tiny
gradient, run on the cluster, against the sum of their own wall times.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

DRIVER = '''"""Driver for the ported program {name} (tests/ported/{name}.py): its loss differentiated on three
of its inputs, as a training loop would."""
import sys

sys.path.insert(0, {root!r})

import adcli  # noqa: E402
from tests.ported._load import load  # noqa: E402

loss, make_inputs = load({name!r}, "adcli")

if __name__ == "__main__":
    for seed in range(3):
        adcli.grad(loss)(*make_inputs(seed))
'''

FUZZ = '''
import adcli

if __name__ == "__main__":
    args = ({args},)
    for _ in range(3):
        adcli.grad(f, argnums={argnums!r})(*args)
'''


def materialize(out: Path, fuzz: int) -> list[str]:
    """Write the corpus into ``out``; the names of its programs."""
    from tests.fuzz import trees
    from tests.fuzz.grammar import generate, within_limits
    from tests.fuzz.program import literal
    from tests.ported._load import names

    out.mkdir(parents=True, exist_ok=True)
    (out / "examples").mkdir(exist_ok=True)
    written = []
    for path in sorted((HERE / "corpus").glob("*.py")):  # under their own names: they import each other
        if path.name in ("run.py",):
            continue
        shutil.copy(path, out / "examples" / path.name)
        if path.name != "optimizers.py":  # a module the others import, not a program
            written.append(f"examples/{path.name}")
    for name in names():
        (out / f"ported_{name}.py").write_text(DRIVER.format(name=name, root=str(ROOT)))
        written.append(f"ported_{name}.py")
    seed = 1000
    while sum(w.startswith("fuzz_") for w in written) < fuzz:
        seed += 1
        try:
            prog = generate(seed)
        except RuntimeError:
            continue
        if not prog.float_argnums or any(trees.is_tree(a) for a in prog.args) or not within_limits(prog):
            continue  # containers of the fuzzer's own classes cannot be written as literals of a script
        text = prog.source + FUZZ.format(args=", ".join(literal(a) for a in prog.args), argnums=prog.float_argnums)
        (out / f"fuzz_{seed}.py").write_text(text)
        written.append(f"fuzz_{seed}.py")
    return written


def _adcli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "adcli", *args], capture_output=True, text=True)


def run(store: str, fuzz: int, workers: int, replay_budget: str) -> int:
    with tempfile.TemporaryDirectory(prefix="adcli-ecosystem-") as tmp:
        written = materialize(Path(tmp), fuzz)
        print(f"corpus: {len(written)} programs ({sum(w.startswith('examples/') for w in written)} published examples, "
              f"{sum(w.startswith('ported_') for w in written)} ported programs' drivers, "
              f"{sum(w.startswith('fuzz_') for w in written)} fuzzer programs)", flush=True)
        start = time.perf_counter()
        res = _adcli("-q", "corpus", "run", tmp, "--store", store, "--workers", str(workers),
                     "--replay-budget", replay_budget, "--timeout", "900")
        print(f"corpus run: {time.perf_counter() - start:.1f} s wall\n{res.stdout}{res.stderr}", flush=True)
    res = _adcli("corpus", "suggest", "--store", store, "--format", "markdown")
    print(res.stdout + res.stderr)
    return res.returncode


def scale(source: str, store: str, n: int) -> int:
    import duckdb

    from adcli import app

    Path(store, "profiles").mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(source, "index.duckdb"), Path(store, "index.duckdb"))
    db = duckdb.connect(str(Path(store, "index.duckdb")))
    real = db.execute("SELECT key FROM programs WHERE gradient_s IS NOT NULL").fetchall()
    db.execute("DELETE FROM signatures WHERE key NOT IN (SELECT key FROM programs WHERE gradient_s IS NOT NULL)")
    db.execute("DELETE FROM programs WHERE gradient_s IS NULL")
    copies = -(-n // len(real))
    start = time.perf_counter()
    db.execute(f"INSERT INTO programs SELECT md5(key || '-' || i), program || '#' || i, kind, status, reason, wall_s, "
               f"gradient_s, signatures, host, adcli_version, stored_at FROM programs, range(1, {copies}) t(i)")
    db.execute(f"INSERT INTO signatures SELECT md5(key || '-' || i), signature, function, kind, served_by, calls, gradient_s, "
               f"derived_s, share FROM signatures, range(1, {copies}) t(i)")
    rows = db.execute("SELECT (SELECT count(*) FROM programs), (SELECT count(*) FROM signatures)").fetchone()
    db.close()
    made = time.perf_counter() - start
    import hashlib

    for (key,) in real:  # the copies' files: hard links to the real profile, under the keys md5(key-i) above
        src = Path(source, "profiles", f"{key}.json")
        for i in range(copies):
            name = key if i == 0 else hashlib.md5(f"{key}-{i}".encode()).hexdigest()
            dst = Path(store, "profiles", f"{name}.json")
            if not dst.exists():
                os.link(src, dst)
    size = Path(store, "index.duckdb").stat().st_size
    print(f"store: {rows[0]} programs, {rows[1]} (program, signature) rows, index {size / 2**20:.1f} MiB "
          f"({size / rows[1]:.0f} B per row), made in {made:.1f} s")
    start = time.perf_counter()
    quick = app.corpus_suggest(store, verdicts=False)
    print(f"library tier, the index's query: {quick.query_s * 1e3:.1f} ms ({len(quick.rows)} signatures); "
          f"with opening the store {time.perf_counter() - start:.2f} s")
    start = time.perf_counter()
    full = app.corpus_suggest(store)
    print(f"library tier with the advisor's verdicts over {full.profiles} profiles: {full.advisor_s:.1f} s "
          f"({full.advisor_s / max(full.profiles, 1) * 1e3:.2f} ms per profile); in all {time.perf_counter() - start:.1f} s")
    return 0


def overhead(programs: int, workers: int) -> int:
    from adcli import app

    with tempfile.TemporaryDirectory(prefix="adcli-overhead-") as tmp:
        for k in range(programs):
            Path(tmp, f"tiny{k}.py").write_text(
                f"import numpy as np\n\nimport adcli\n\nif __name__ == '__main__':\n"
                f"    adcli.grad(lambda x: np.sum(x * {k + 1}.0))(np.ones(3))\n")
        start = time.perf_counter()
        result = app.corpus_run([tmp], [], str(Path(tmp, "store")), workers=workers, replay_budget="0.5")
        wall = time.perf_counter() - start
        import duckdb

        db = duckdb.connect(str(Path(tmp, "store", "index.duckdb")), read_only=True)
        own = db.execute("SELECT sum(wall_s) FROM programs").fetchone()[0]
    ideal = own / workers
    print(f"{programs} tiny programs on {workers} workers: {wall:.1f} s wall ({result.summary.counts}); their own "
          f"wall times sum to {own:.1f} s, {ideal:.1f} s over {workers} workers; the rest, {wall - ideal:.1f} s, "
          f"is the cluster's start and the scheduling: {(wall - ideal) / programs * 1e3:.0f} ms per program")
    return 0


SHIPPED = {"numpy.roll", "numpy.var", "numpy.outer", "numpy.triu", "numpy.tril"}


def defaults(store: str, workers: int, replay_budget: str, fixture: str | None = None) -> int:
    import json

    start = time.perf_counter()
    res = _adcli("-q", "corpus", "run", str(ROOT / "profiles"), "--store", store, "--workers", str(workers),
                 "--replay-budget", replay_budget, "--rules", str(HERE / "advised_out.py"), "--timeout", "900")
    print(f"corpus run ({time.perf_counter() - start:.0f} s): {res.stdout}{res.stderr}", flush=True)
    res = _adcli("corpus", "suggest", "--store", store, "--format", "json")
    advice = json.loads(res.stdout)
    picked = {}
    for row in advice["rows"]:
        if row["action"] != "keep-derived":
            picked.setdefault(row["function"], []).append(f"{row['signature']}: {row['action']}")
    derived = {row["function"] for row in advice["rows"]}
    print("| function | shipped | derived in the corpus | the corpus advice |\n|---|---|---|---|")
    for fn in sorted(SHIPPED | set(picked)):
        print(f"| {fn} | {'yes' if fn in SHIPPED else 'no'} | {'yes' if fn in derived else 'no'} | "
              f"{'; '.join(picked.get(fn, ['keep derived']))} |")
    agree = set(picked) == SHIPPED
    print(f"\nthe advice picks {'exactly the shipped rules' if agree else 'another set than the shipped rules'}: "
          f"picked {sorted(picked)}, shipped {sorted(SHIPPED)}")
    if fixture:
        save_fixture(store, Path(fixture))
    return 0


def save_fixture(store: str, out: Path) -> None:
    """The store's profiles as tests/data/corpus_defaults (its test reads them): one
    ``<program>.json`` each, the samples left out (the tier reads the profiles' measurements)."""
    from adcli.corpus.store import CorpusStore

    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.json"):
        old.unlink()
    with CorpusStore(store, create=False, read_only=True) as db:
        rows = db.db.execute("SELECT key, program FROM programs WHERE status = 'ok' ORDER BY program").fetchall()
        for key, program in rows:
            shutil.copyfile(db.profile_path(key), out / (Path(program).stem + ".json"))
    print(f"wrote {len(rows)} profiles to {out}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("materialize")
    m.add_argument("out")
    m.add_argument("--fuzz", type=int, default=20)
    r = sub.add_parser("run")
    r.add_argument("--store", required=True)
    r.add_argument("--fuzz", type=int, default=20)
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--replay-budget", default="10")
    s = sub.add_parser("scale")
    s.add_argument("--from", dest="source", required=True)
    s.add_argument("--store", required=True)
    s.add_argument("--profiles", type=int, default=10000)
    d = sub.add_parser("defaults")
    d.add_argument("--store", required=True)
    d.add_argument("--workers", type=int, default=2)
    d.add_argument("--replay-budget", default="60")  # every replay done: an incomplete profile cannot weigh an import
    d.add_argument("--fixture", default=None, help="save the profiles for the test (tests/data/corpus_defaults)")
    o = sub.add_parser("overhead")
    o.add_argument("--programs", type=int, default=40)
    o.add_argument("--workers", type=int, default=2)
    a = p.parse_args()
    if a.command == "materialize":
        print("\n".join(materialize(Path(a.out), a.fuzz)))
        return 0
    if a.command == "run":
        return run(a.store, a.fuzz, a.workers, a.replay_budget)
    if a.command == "defaults":
        return defaults(a.store, a.workers, a.replay_budget, a.fixture)
    if a.command == "scale":
        return scale(a.source, a.store, a.profiles)
    return overhead(a.programs, a.workers)


if __name__ == "__main__":
    sys.exit(main())
