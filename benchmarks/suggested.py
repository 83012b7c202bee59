"""adcli with its own suggested rules: predicted vs measured saving per workload.

For each profiles/ case: profile it (as `adcli profile` does, replays included), ask the advisor
for suggestions (default thresholds), then serve the case with those rules and measure the
gradient again. Imports are imported exactly as `adcli export` writes them. Hand-written
suggestions are served by the reference implementations below (written here, in the benchmark,
not in the engine), so the real saving of a hand-written rule can be measured against the
advisor's estimate. A suggestion without a reference implementation is reported as such.
"""

from __future__ import annotations

import os
import tempfile
import types

import numpy as np

import adcli
from adcli.advisor import suggest
from adcli.profiler.api import profile_program
from adcli.profiler.instrument import instrument
from adcli.render.stubs import split_signature
from adcli.rules import register, unregister
from adcli.rules.autograd_import import import_rule, unimport

# --- reference hand-written rules (by case and function name) --------------------------------


def _sum_loop(x):
    return float(np.sum(x)), lambda g: (np.full_like(x, g),)


def _sum_sin_loop(x):
    return float(np.sum(np.sin(x))), lambda g: (g * np.cos(x),)


def _sin_cos_exp_sum(x):
    e = np.exp(x)
    c = np.cos(e)
    return np.sum(np.sin(c)), lambda g: (g * np.cos(c) * -np.sin(e) * e,)


def _large_single_block(x):
    y = x[0] * x[1] ** 400

    def pullback(g):
        out = np.zeros_like(x)
        out[0] = g * x[1] ** 400
        out[1] = g * 400.0 * x[0] * x[1] ** 399
        return (out,)

    return y, pullback


def _low_rank_reconstruct(U, V):
    # Y = sum_k outer(U[k], V[k]) = U.T @ V
    return U.T @ V, lambda g: (V @ g.T, U @ g)


REFERENCE = {
    ("low_rank", "reconstruct"): _low_rank_reconstruct,
    ("_sum_1000", "f"): _sum_loop,
    ("_sum_sin_1000", "f"): _sum_sin_loop,
    ("naive_map_sin_cos_exp", "f"): _sin_cos_exp_sum,
    ("map_sin_cos_exp", "f"): _sin_cos_exp_sum,
    ("large_single_block", "f"): _large_single_block,
}


def _instrumented(mod, name: str):
    """The case compiled as `adcli profile` compiles it, as module ``name``: every function a
    dispatch point, so rules declared for ``name:function`` serve it."""
    inst = types.ModuleType(name)
    inst.__file__ = mod.__file__
    import sys

    sys.modules[name] = inst
    with open(mod.__file__, "rb") as f:
        exec(instrument(f.read(), mod.__file__), inst.__dict__)
    return inst


def run(mods: dict, measure, budget: float, thresholds=None) -> list[dict]:
    """One row per case; ``thresholds`` (advisor Thresholds) default to the advisor's own."""
    rows = []
    for case, mod in mods.items():
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "p.json")
            import contextlib
            import io

            with contextlib.redirect_stdout(io.StringIO()):
                profile, _ = profile_program(mod.__file__, [], output=out, replay_budget=0.1)
        suggestions, _ = suggest([profile], thresholds)
        chosen = [s for s in suggestions if s.action != "keep-derived"]
        row = {"case": case, "suggested": [f"{s.action} {s.signature}" for s in chosen],
               "predicted_s": sum(s.saving_s for s in chosen), "derived_s": None, "with_rules_s": None, "note": ""}
        if not chosen:
            row["note"] = "nothing suggested"
            rows.append(row)
            continue
        name = f"bench_suggested_{case}"
        inst = _instrumented(mod, name)
        args = mod.inputs()
        vg = adcli.value_and_grad(inst.f, argnums=inst.ARGNUMS)
        installed, missing = [], []
        try:
            row["derived_s"] = measure(lambda: vg(*args), budget)
            for s in chosen:
                target, descs = split_signature(s.signature)
                if s.action == "import":
                    installed += [("import", r) for r in import_rule(_numpy(target), *descs)]
                else:
                    func = target.rsplit(".", 1)[-1]
                    ref = REFERENCE.get((case, func))
                    if ref is None:
                        missing.append(s.signature)
                        continue
                    register(f"{name}:{func}", descs, ref)
                    installed.append(("rule", f"{name}:{func}"))
            if missing:
                row["note"] = f"no reference rule for {', '.join(missing)}"
            else:
                vg(*args)
                row["with_rules_s"] = measure(lambda: vg(*args), budget)
        finally:
            for kind, r in installed:
                if kind == "import":
                    unimport(r)
                else:
                    unregister(r)
        rows.append(row)
    return rows


def _numpy(name: str):
    obj = np
    for part in name.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def render(rows: list[dict], fmt: str) -> str:
    head = ["case", "suggested", "derived only", "with suggested rules", "predicted saving", "measured saving",
            "measured / predicted"]
    table = []
    for r in rows:
        d, w, p = r["derived_s"], r["with_rules_s"], r["predicted_s"]
        measured = (d - w) if d is not None and w is not None else None
        table.append([
            r["case"], "; ".join(r["suggested"]) or "—",
            "—" if d is None else f"{d * 1e3:.3f} ms", "—" if w is None else f"{w * 1e3:.3f} ms",
            f"{p * 1e3:.3f} ms" if r["suggested"] else "—",
            "—" if measured is None else f"{measured * 1e3:.3f} ms",
            "—" if measured is None or p <= 0 else f"{measured / p:.2f}" + (f" ({r['note']})" if r["note"] else ""),
        ] if not r["note"] or measured is not None else [r["case"], "; ".join(r["suggested"]) or "—", "—", "—",
                                                          f"{p * 1e3:.3f} ms" if r["suggested"] else "—", "—", r["note"]])
    if fmt == "markdown":
        lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
        lines += ["| " + " | ".join(row) + " |" for row in table]
        return "\n".join(lines)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *table)]
    fmt_line = lambda line: "  ".join(str(x).ljust(w) for x, w in zip(line, widths))  # noqa: E731
    return "\n".join([fmt_line(head), "  ".join("-" * w for w in widths)] + [fmt_line(t) for t in table])
