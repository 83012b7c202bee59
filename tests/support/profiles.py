"""Hand-made profile documents (format version 2) for tests: what a shared, possibly hostile,
profile file can contain. Built as JSON data, so a test can put anything in any field."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def stats(id, signature, *, kind=None, served_by="derived", calls=10, time=0.1, derived=0.01, primal=0.002,
          imports=(), sample=None, location="", allocs=(1, 800)):
    """One signatures[] entry; ``derived``/``primal`` make a replay (None: not replayed)."""
    replay = None
    if derived is not None:
        replay = {"primal_s": primal, "derived_s": derived, "ratio": derived / primal if primal else None, "repeats": 5,
                  "derived_peak_bytes": None, "direct_bytes": None, "direct_floor_s": None, "imports": list(imports)}
    zero = {"forward": [0, 0], "reverse": [0, 0]}
    return {
        "id": id, "signature": signature, "function": signature.split("(")[0],
        "kind": kind or ("numpy" if signature.startswith("numpy.") else "user"), "served_by": served_by,
        "served_counts": {served_by: calls}, "location": location, "calls": calls,
        "forward_s": time / 2, "self_forward_s": time / 2, "reverse_s": time / 2, "self_reverse_s": time / 2,
        "primitives": 1, "self_primitives": 1, "allocs": {"forward": list(allocs), "reverse": [0, 0]},
        "self_allocs": zero, "replay": replay, "sample": sample,
    }


def trial(rule, outcome="agrees", rule_s=0.002, error=None):
    return {"rule": rule, "outcome": outcome, "rule_s": rule_s if outcome == "agrees" else None,
            "rule_peak_bytes": None, "verification": "", "error": error}


def document(sigs, total=0.1, command=("model.py",), **meta):
    """A whole profile: ``sigs`` all called from the program root."""
    tree = [{"parent": None, "sig": 0, "calls": 0}] + [{"parent": 0, "sig": s["id"], "calls": s["calls"]} for s in sigs]
    return {"schema": "adcli-profile", "version": 2, "command": list(command), "created": "2026-12-02T12:00:00+00:00",
            "adcli_version": "0.1.0", "partial": False, "exit_status": 0, "replay_s": 0.0,
            "totals": {"gradients": 1, "forward_s": total / 2, "reverse_s": total / 2, "gradient_s": total},
            "signatures": list(sigs), "tree": tree, **meta}


def write(path, doc) -> str:
    """Write ``doc`` as a profile file at ``path`` (no sidecar), return the path as a string."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return os.fspath(path)


# --- running programs and saving profiles, for the tests of profile files --------------------

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(ROOT, "tests", "support", "scripts")


def script(name: str) -> str:
    """The path of a test program in tests/support/scripts."""
    return os.path.join(SCRIPTS, name)


def run_adcli(*args, cwd, timeout=300):
    """``python -m adcli ARGS`` in ``cwd`` (a real process: exits, forks and signals are real)."""
    return subprocess.run([sys.executable, "-m", "adcli", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT}, timeout=timeout)


def saved(folder, name="p.json") -> str:
    """A profile with one sample array, saved as a pair in ``folder``; its path."""
    import numpy as np

    from adcli.data import store
    from adcli.data.model import Profile

    path = os.path.join(folder, name)
    store.save(Profile.from_json(document([stats(1, "numpy.sum(f64[1d])")])), path, {"s1_a0": np.ones(3)})
    return path
