"""``python -m tests.fuzz``: run a fuzzing campaign, or replay one finding.

    python -m tests.fuzz --minutes 10 --jobs 2          # a campaign; findings in tests/fuzz/findings/
    python -m tests.fuzz --programs 300 --seed 1        # a fixed number of programs
    python -m tests.fuzz --replay tests/fuzz/findings/wrong-value-1a2b3c4d.py

Exits 1 when any program failed (wrong value or gradient, crash, layout mismatch, nondeterminism).
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import traceback

from .campaign import campaign, table, write_findings, write_summary
from .oracle import FAILURES, run
from .report import load

FINDINGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "findings")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, help="wall-clock budget")
    ap.add_argument("--programs", type=int, help="number of programs (all jobs together)")
    ap.add_argument("--seed", type=int, default=0, help="first seed (job j checks seed+j, seed+j+jobs, ...)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes")
    ap.add_argument("--findings", default=FINDINGS, help="where to write minimal reproductions")
    ap.add_argument("--no-shrink", action="store_true", help="count failures without shrinking or writing them")
    ap.add_argument("--summary", help="write a JSON summary here")
    ap.add_argument("--quiet", action="store_true", help="no live count")
    ap.add_argument("--shapes", type=float, help="share of programs with the container, subclass and mixed-join "
                    "input shapes (default 0.3; 0: classic programs only, 1: shapes programs only)")
    ap.add_argument("--replay", metavar="FILE", help="rerun one finding script")
    a = ap.parse_args(argv)
    if a.replay:
        return replay(a.replay)
    if a.minutes is None and a.programs is None:
        a.programs = 200
    stats = campaign(seconds=None if a.minutes is None else a.minutes * 60, programs=a.programs, seed=a.seed,
                     jobs=max(1, a.jobs), shrink_failures=not a.no_shrink, live=not a.quiet, shapes=a.shapes)
    print(table(stats))
    if stats["findings"]:
        paths = write_findings(stats, a.findings)
        print(f"wrote {len(paths)} finding(s) to {a.findings}")
    if a.summary:
        write_summary(stats, a.summary)
        print(f"wrote summary to {a.summary}")
    return 1 if any(stats["counts"].get(c) for c in FAILURES) else 0


def replay(path: str) -> int:
    """Run a finding script (its exit status says whether the bug is still there) and show the
    oracle's verdict on its program."""
    print(f"replaying {path}")
    try:
        o = run(load(path))
        print(f"oracle: {o.category}" + (f" ({o.check}: {o.detail})" if o.check else ""))
    except Exception as e:  # the script itself still decides
        print(f"oracle could not load the program: {type(e).__name__}: {e}")
    try:
        runpy.run_path(path, run_name="__main__")
    except Exception:  # a crash inside adcli: the finding still reproduces
        traceback.print_exc()
        print("still fails (crash)")
        return 1
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        print("still fails" if code else "no longer fails")
        return code
    print("no longer fails")
    return 0


if __name__ == "__main__":
    sys.exit(main())
