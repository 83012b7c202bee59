"""autograd 1.9.1's own test files, run against adcli's reverse mode through our shim
(benchmarks/autograd_suite/run.py): real values, first order. The sdist is fetched with pip
(a package registry, as the rest of the set-up uses), its tests run in a subprocess."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The in-scope failures left, both refusals by design: np.int64(traced array) (an escape: the
# engine refuses conversions of traced values to NumPy scalars), and multivariate_normal with
# allow_singular=True (no gradient where the covariance is singular).
KNOWN = {"test_numpy.py::test_cast_to_int", "test_scipy.py::test_mvn_sing_cov"}


def test_autograds_own_tests_pass_at_least_95_percent():
    # the sdist is cached under ~/.cache/adcli/autograd-suite (fetched once, about 30 s)
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "autograd_suite" / "run.py"), "--format", "json",
                          "--summary-only"], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout)
    summary = report["summary"]
    assert summary["in_scope"] >= 450 and summary["pass_pct"] >= 95.0, summary
    failed = {t["nodeid"] for t in report["tests"] if t["status"] == "fail"}
    assert failed <= KNOWN, f"new failures: {sorted(failed - KNOWN)}"
