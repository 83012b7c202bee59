"""Delta debugging: reduce a failing program to a minimal one that fails the same way.

A candidate is kept when NumPy still runs it cleanly and the oracle reports the same category
and check (and, for crashes, the same exception class, place and message). Passes: drop
statements (halves, quarters, ..., single ones), drop unused arguments, shrink argument shapes,
round argument values and constants, and finally renumber the variables.
"""

from __future__ import annotations

import re
import time

import numpy as np

from .grammar import _execute, runs_cleanly, within_limits
from .oracle import Outcome, run
from .program import VAR, Program, Stmt, is_float

FLOAT = re.compile(r"(?<![\w.])-?\d+\.\d{2,}")


class _Budget:
    def __init__(self, seconds: float, runs: int):
        self.deadline = time.monotonic() + seconds
        self.runs = runs

    def spent(self) -> bool:
        return self.runs <= 0 or time.monotonic() > self.deadline


def same_failure(o: Outcome, target: Outcome) -> bool:
    if (o.category, o.check) != (target.category, target.check):
        return False
    return o.detail == target.detail if o.category in ("crash", "refused") else True


def shrink(prog: Program, outcome: Outcome, seconds: float = 30.0, runs: int = 600) -> tuple:
    """``(minimal program, its outcome)`` failing like ``outcome``.

    A failure of a variant (an argnums subset, another memory layout) is shrunk as that variant
    (``prog.argnums`` / ``prog.layout`` set), where it fails as a plain wrong value, wrong
    gradient or crash: otherwise a smaller program failing in C order first would not count.
    """
    budget = _Budget(seconds, runs)
    if outcome.check in ("subset", "layout"):
        variant = prog.with_(argnums=outcome.argnums, layout=outcome.layout)
        o = run(variant)
        if o.failed:
            prog, outcome = variant, o
    best = [prog, outcome]

    def attempt(p: Program) -> bool:
        if budget.spent():
            return False
        budget.runs -= 1
        if not runs_cleanly(p) or not within_limits(p):
            return False
        o = run(p)
        if same_failure(o, outcome):
            best[:] = [p, o]
            return True
        return False

    for _ in range(3):
        before = _size(best[0])
        _drop_statements(best, attempt)
        if _bypass(best, attempt) | _replace_statements(best, attempt):
            _drop_statements(best, attempt)
        _drop_arguments(best, attempt)
        _shrink_shapes(best, attempt)
        _round_values(best, attempt)
        _simplify_constants(best, attempt)
        if _size(best[0]) == before or budget.spent():
            break
    attempt(_renumber(best[0]))
    return best[0], best[1]


def _size(p: Program) -> tuple:
    return (len(p.stmts), sum(len(s.text) for s in p.stmts), sum(np.size(a) for a in p.args))


def _drop_statements(best, attempt):
    n = max(1, len(best[0].stmts) // 2)
    while n >= 1:
        i = 0
        while i < len(best[0].stmts):
            p = best[0]
            if len(p.stmts) > n and attempt(p.with_(stmts=p.stmts[:i] + p.stmts[i + n:])):
                continue  # the same position now holds the next chunk
            i += n
        n //= 2


def _bypass(best, attempt) -> bool:
    """Make statements read an argument (reshaped if need be) instead of an earlier variable of
    the same shape, so that the statement defining the variable can go."""
    changed = False
    for i in range(len(best[0].stmts)):
        p = best[0]
        if i >= len(p.stmts):
            break
        env = _execute(p.argnames, p.args, p.stmts[:i]) or {}
        for u in [n for n in p.stmts[i].uses if n.startswith("v") and n in env and is_float(env[n])]:
            for expr in _stand_ins(p, env, np.shape(env[u])):
                stmts = list(best[0].stmts)
                stmts[i] = Stmt(stmts[i].kind, re.sub(rf"\b{u}\b", expr, stmts[i].text))
                if attempt(best[0].with_(stmts=stmts)):
                    changed = True
                    break
    return changed


def _replace_statements(best, attempt) -> bool:
    """Replace a statement defining one variable by a plain stand-in of the same shape made
    from an argument (``v3 = x0 * 1.0``): loops and chains that only feed a value go."""
    changed = False
    for i in range(len(best[0].stmts)):
        p = best[0]
        if i >= len(p.stmts) or len(p.stmts[i].defines) != 1 or p.stmts[i].kind == "stand-in":
            continue
        name = p.stmts[i].defines[0]
        first = p.stmts[i].text.splitlines()[0]
        if not re.match(rf"{name} = ", first) or name in VAR.findall(first.split("=", 1)[1]):
            continue  # a write into an existing variable, not a definition
        env = _execute(p.argnames, p.args, p.stmts[: i + 1]) or {}
        if not is_float(env.get(name)):
            continue
        for expr in _stand_ins(p, env, np.shape(env[name]), generic=True):
            stmts = list(best[0].stmts)
            stmts[i] = Stmt("stand-in", f"{name} = {expr} * 1.0")
            if attempt(best[0].with_(stmts=stmts)):
                changed = True
                break
    return changed


def _stand_ins(p, env, shape, generic=False) -> list:
    """Expressions of the arguments with ``shape``: the argument itself, reshaped, or (generic)
    its sum plus distinct constants."""
    out, last = [], []
    for a in p.argnames:
        v = env.get(a)
        if not is_float(v):
            continue
        if np.shape(v) == shape:
            out.insert(0, a)
        elif np.size(v) == int(np.prod(shape)) and isinstance(v, np.ndarray):
            out.append(f"{a}.reshape({shape!r})")
        elif generic and shape == ():
            last.append(f"np.sum({a})")
        elif generic:
            last.append(f"(np.sum({a}) + np.arange({float(np.prod(shape))!r}).reshape({shape!r}))")
    return out + last[:1]


def _drop_arguments(best, attempt):
    for name in list(best[0].argnames):
        p = best[0]
        if len(p.argnames) == 1 or any(name in VAR.findall(s.text) for s in p.stmts):
            continue
        keep = [i for i, n in enumerate(p.argnames) if n != name]
        attempt(p.with_(argnames=[p.argnames[i] for i in keep], args=[p.args[i] for i in keep]))


def _shrink_shapes(best, attempt):
    changed = True
    while changed:
        changed = False
        for i, a in enumerate(best[0].args):
            if type(a) is not np.ndarray:  # containers and ndarray subclasses keep their shapes
                continue
            for axis in range(a.ndim):
                for k in (1, a.shape[axis] - 1):
                    if 1 <= k < best[0].args[i].shape[axis]:
                        args = list(best[0].args)
                        args[i] = np.take(args[i], range(k), axis=axis)
                        if attempt(best[0].with_(args=args)):
                            changed = True
                            break


def _round_values(best, attempt):
    for i, a in enumerate(best[0].args):
        if type(a) not in (np.ndarray, float):  # containers and ndarray subclasses keep their values
            continue
        for decimals in (1, 0):
            args = list(best[0].args)
            if isinstance(a, np.ndarray):
                r = np.array(np.round(args[i], decimals), dtype=a.dtype)
                r[r == 0] = 0.5
                if np.array_equal(r, args[i]):
                    continue
                args[i] = r
            else:
                args[i] = float(round(args[i], decimals)) or 0.5
            attempt(best[0].with_(args=args))


def _simplify_constants(best, attempt):
    tried: set = set()
    for si in range(len(best[0].stmts)):
        for _ in range(20):
            stmts = best[0].stmts
            if si >= len(stmts):
                return
            text = stmts[si].text
            m = next((m for m in FLOAT.finditer(text) if (si, m.group(0)) not in tried), None)
            if m is None:
                break
            tried.add((si, m.group(0)))
            short = repr(round(float(m.group(0)), 1))
            new = text[: m.start()] + short + text[m.end():]
            attempt(best[0].with_(stmts=stmts[:si] + [Stmt(stmts[si].kind, new)] + stmts[si + 1:]))


def _renumber(p: Program) -> Program:
    """Rename the variables v1, v2, ... in order of definition."""
    mapping: dict = {}
    for s in p.stmts:
        for n in s.defines:
            if n.startswith("v") and n not in mapping:
                mapping[n] = f"v{len(mapping) + 1}"
    stmts = [Stmt(s.kind, VAR.sub(lambda m: mapping.get(m.group(0), m.group(0)), s.text)) for s in p.stmts]
    return p.with_(stmts=stmts)
