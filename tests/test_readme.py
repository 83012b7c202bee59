"""The README's walkthrough is real output: a fresh run of its commands still has the shape of the
blocks the README shows (docs/walkthrough.py; numbers aside, as timings differ between runs)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_walkthrough_matches_a_fresh_run():
    res = subprocess.run([sys.executable, str(ROOT / "docs" / "walkthrough.py"), "--check"], capture_output=True,
                         text=True, cwd=ROOT, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_shape_ignores_numbers_but_not_words():
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        from walkthrough import shape
    finally:
        sys.path.pop(0)
    assert shape("│ 1 │ f(f64[1d]) │ 3.180 │ 27.3× │") == shape("│ 1 │ f(f64[1d]) │   12.5 │ 8.8× │")
    assert shape("saves 4.25 ms per run") != shape("saves 4.25 ms per call")
    assert shape("leave 151\nµs of the primal") == shape("leave 85.7 µs of the primal")  # wrapped between them
    assert shape("1. hand-write f\n   - derived 4 ms\n     + 2 ms") == shape("1. hand-write f\n   - other prose")


def test_the_walkthrough_shape_reads_a_measured_range_as_one_number():
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        import walkthrough
    finally:
        sys.path.pop(0)
    one = walkthrough.shape("│ 96% │ 4.7 ms │\n  change  -94%, faster")
    assert walkthrough.shape("│ 95-96% │ 4.74 ms │\n  change  -93% to -94%, faster") == one
    assert walkthrough.shape("│ 96% │ 4.7 ms │\n  change  slower") != one
