"""Run autograd 1.9.1's own test files against adcli's reverse mode and measure the pass rate.

autograd's tests import ``autograd``, ``autograd.numpy``, ``autograd.scipy.*`` and
``autograd.test_util``. This harness runs them, unmodified, in a pytest subprocess whose
``sys.path`` starts with ``shim/``: a package named ``autograd`` of our own that maps those
names onto adcli (``autograd.numpy`` is NumPy itself, ``autograd.scipy`` is SciPy, ``grad``,
``value_and_grad``, ``jacobian``, ``make_vjp``, ... are adcli's reverse mode, and
``check_grads`` compares adcli's VJP with central finite differences at first order). Nothing
outside that subprocess sees the shim.

The target is real values, reverse mode, first order. Tests of complex numbers, forward mode,
higher-order derivatives and autograd's own machinery are excluded, each with a category
(``scope.py`` explains the rules); inside in-scope tests, order-2 and forward-mode checks are
reduced to first-order reverse checks and complex or nested-differentiation cases are skipped,
and all of that is counted per test.

The test files are run, never copied into this repository: give the sdist, the extracted sdist
or its ``tests`` folder, or nothing (then ``pip download autograd==1.9.1 --no-binary :all:``
fetches the sdist into ``$XDG_CACHE_HOME/adcli/autograd-suite``, ``~/.cache`` by default).

Run from the repository root with the project's environment:

    .venv/bin/python benchmarks/autograd_suite/run.py                      # download, run, report
    .venv/bin/python benchmarks/autograd_suite/run.py /tmp/agsdist/autograd-1.9.1.tar.gz
    .venv/bin/python benchmarks/autograd_suite/run.py path/to/autograd-1.9.1 --format markdown
    .venv/bin/python benchmarks/autograd_suite/run.py SDIST --upstream      # also run autograd itself

Options: ``--format text|markdown|json``; ``--upstream`` also runs the same files against the
installed autograd and marks in-scope failures that fail there too; ``--timeout`` seconds per
test (default 300); ``-k EXPR`` selects tests as pytest's ``-k``; ``--summary-only`` leaves out
the one-line-per-test list; ``--results FILE`` keeps the raw per-test records (JSON lines).
The exit status is 0 when the run completed, whatever the pass rate.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHIM = HERE / "shim"
REPO = HERE.parent.parent
VERSION = "1.9.1"

sys.path.insert(0, str(HERE))
import report  # noqa: E402
import scope  # noqa: E402


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "adcli" / "autograd-suite"


def download_sdist(dest: Path) -> Path:
    """autograd's sdist from the package registry, with pip (cached)."""
    sdist = dest / f"autograd-{VERSION}.tar.gz"
    if sdist.exists():
        return sdist
    dest.mkdir(parents=True, exist_ok=True)
    print(f"downloading autograd=={VERSION} (sdist) into {dest} ...", file=sys.stderr)
    cmd = [sys.executable, "-m", "pip", "download", f"autograd=={VERSION}", "--no-deps", "--no-binary", ":all:", "-d", str(dest)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    if not sdist.exists():
        raise SystemExit(f"pip did not produce {sdist.name} in {dest}")
    return sdist


def extract_tests(sdist: Path, dest: Path) -> Path:
    """The sdist's ``<root>/tests/`` files, written under ``dest/tests`` (nothing else extracted)."""
    out = dest / "tests"
    if (out / "test_core.py").exists():
        return out
    found = 0
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if len(parts) < 3 or parts[1] != "tests" or not member.isfile() or ".." in parts:
                continue
            target = out.joinpath(*parts[2:])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tar.extractfile(member).read())
            found += 1
    if not found:
        raise SystemExit(f"{sdist} has no tests/ folder: autograd's sdist no longer ships its tests")
    return out


def locate_tests(source: str | None, workdir: Path) -> Path:
    if source is None:
        sdist = download_sdist(cache_dir())
        return extract_tests(sdist, cache_dir() / f"autograd-{VERSION}")
    path = Path(source).expanduser().resolve()
    if path.is_file():
        return extract_tests(path, workdir / "sdist")
    for candidate in (path / "tests", path):
        if (candidate / "test_core.py").exists() or any(candidate.glob("test_*.py")):
            return candidate
    raise SystemExit(f"{path}: neither an sdist, an extracted sdist, nor a folder of autograd's test files")


def run_pytest(tests: Path, workdir: Path, label: str, with_shim: bool, args) -> list[dict]:
    """One pytest subprocess over ``tests``; the plugin's records (a session record first)."""
    out = workdir / f"{label}.jsonl"
    ini = workdir / "pytest.ini"
    ini.write_text("[pytest]\n")  # our own, empty: the sdist's pytest settings need xdist and coverage
    paths = ([str(SHIM)] if with_shim else []) + [str(HERE), str(REPO)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update(ADCLI_SUITE_OUT=str(out), ADCLI_SUITE_TIMEOUT=str(args.timeout), PYTHONDONTWRITEBYTECODE="1")
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(tests),
        "-p",
        "no:cacheprovider",
        "-p",
        "suite_plugin",
        "-q",
        "-c",
        str(ini),
        "--rootdir",
        str(tests),
    ]
    if args.k:
        cmd += ["-k", args.k]
    print(f"running autograd's tests ({label}) ...", file=sys.stderr)
    log = workdir / f"{label}.log"
    with open(log, "w") as fh:
        proc = subprocess.run(cmd, cwd=workdir, env=env, stdout=fh, stderr=subprocess.STDOUT)
    records = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    if proc.returncode not in (0, 1) or not any(r.get("kind") != "session" for r in records):
        tail = "".join(io.StringIO(log.read_text()).readlines()[-30:])
        raise SystemExit(f"pytest exited with status {proc.returncode} ({label}); last lines of its output:\n{tail}")
    return records


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", nargs="?", help="autograd sdist (.tar.gz), extracted sdist, or its tests folder")
    ap.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    ap.add_argument("--upstream", action="store_true", help="also run the files against the installed autograd")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per test (0: no limit)")
    ap.add_argument("-k", help="pytest -k expression selecting tests")
    ap.add_argument("--summary-only", action="store_true", help="leave out the list of every test")
    ap.add_argument("--results", help="write the classified per-test records here (JSON lines)")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="autograd-suite-") as tmp:
        workdir = Path(tmp)
        tests = locate_tests(args.source, workdir)
        records = run_pytest(tests, workdir, "adcli", True, args)
        upstream = run_pytest(tests, workdir, "upstream", False, args) if args.upstream else []

    session = next((r for r in records if r.get("kind") == "session"), {})
    if not str(session.get("autograd_file", "")).startswith(str(SHIM)):
        raise SystemExit(f"the subprocess imported autograd from {session.get('autograd_file')}, not from the shim")
    header = {
        "autograd_tests": VERSION,
        "tests_dir": str(tests),
        **{k: session.get(k) for k in ("adcli", "numpy", "scipy", "python")},
    }
    tests_run = [scope.classify(r) for r in records if r.get("kind") != "session"]
    if upstream:
        outcome = {r["nodeid"]: r["outcome"] for r in upstream if r.get("kind") != "session"}
        for t in tests_run:
            t["upstream"] = outcome.get(t["nodeid"], "not run")
        counts: dict[str, int] = {}
        for o in outcome.values():
            counts[o] = counts.get(o, 0) + 1
        version = next((r.get("autograd") for r in upstream if r.get("kind") == "session"), "?")
        header["upstream"] = f"autograd {version}: " + ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))
    if args.results:
        with open(args.results, "w") as fh:
            for t in tests_run:
                fh.write(json.dumps(t, default=repr) + "\n")
    sys.stdout.write(report.render(tests_run, header, args.format, per_test=not args.summary_only))
    return 0


if __name__ == "__main__":
    sys.exit(main())
