"""Findings: a minimal failing program written as a standalone script that reproduces it.

``python <finding>.py`` prints what is wrong and exits 1 while the bug is present; it exits 0
when adcli answers correctly or refuses with an adcli error (both are acceptable answers).
"""

from __future__ import annotations

import hashlib
import re
import textwrap
import warnings

import numpy as np

import adcli

from . import trees
from .oracle import Outcome
from .program import PRELUDE, Program, Stmt, api_tokens, differentiable, literal

_LAYOUT_CODE = {
    None: "a",
    "F": "np.asfortranarray(a)",
    "reversed": "a[(slice(None, None, -1),) * a.ndim].copy()[(slice(None, None, -1),) * a.ndim]",
    "strided": "_strided(a)",
}

CHECKER = '''

def _strided(a):
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    wide[..., ::2] = a
    return wide[..., ::2]


def args():
    """Fresh arguments (in LAYOUT) for every call."""
    out = []
    for a in ARGS:
        if isinstance(a, np.ndarray):
            a = a.copy()
            if a.ndim and type(a) is np.ndarray:
                a = {layout}
        else:
            a = copy.deepcopy(a)
        out.append(a)
    return out


def _is_tree(a):
    return "_trees" in globals() and _trees.is_tree(a)


def _bump(arg, j, idx, s):
    """arg (leaf j of it, for a container) moved by s at idx."""
    if j is not None:
        leaves = _trees.leaves(arg)
        leaves[j] = _bump(leaves[j], None, idx, s)
        return _trees.rebuild(arg, leaves)
    if isinstance(arg, np.ndarray):
        arg[idx] += s
        return arg
    return arg + s


def _twin_ok():
    """Whether f_float64 computes f (not so when a view-or-copy answer depends on the dtype)."""
    a = [x.astype(np.float64) if isinstance(x, np.ndarray) else x for x in args()]
    return abs(float(f_float64(*a)) - float(f(*args()))) <= 1e-4 * max(1.0, abs(float(f(*args()))))


def _fd(k, j, gradient):
    """Per-element central differences for argument k (its leaf j, for a container; of the
    float64 twin of a float32 program): the step agreeing best with adcli, and whether the steps
    agree with each other (where they do not, the point is a kink or a jump and the element is not
    judged)."""
    a0 = args()[k] if j is None else _trees.leaves(args()[k])[j]
    est, smooth = np.zeros(np.shape(a0)), np.ones(np.shape(a0), bool)
    for idx in np.ndindex(*np.shape(a0)):
        ds = []
        for h in (1e-4, 1e-5, 1e-6):
            vals = []
            for s in (h, -h):
                a = [x.astype(np.float64) if isinstance(x, np.ndarray) else x for x in args()] if F32 else args()
                a[k] = _bump(a[k], j, idx, s)
                vals.append(float((f_float64 if F32 else f)(*a)))
            ds.append((vals[0] - vals[1]) / (2 * h))
        est[idx] = min(ds, key=lambda d: abs(d - float(np.ma.getdata(gradient)[idx])))
        smooth[idx] = max(ds) - min(ds) <= 1e-3 * (1 + max(abs(d) for d in ds))
    return est, smooth


def main():
    np.seterr(all="ignore")
    expected = f(*args())
    try:
        value, grads = adcli.value_and_grad(f, ARGNUMS)(*args())
        again = adcli.value_and_grad(f, ARGNUMS)(*args())
    except adcli.AdcliError as e:
        if isinstance(e, RuleError):
            raise  # a built-in rule broke its contract: a bug, not a refusal
        print(f"adcli refused (an acceptable answer): {{type(e).__name__}}: {{e}}")
        return 0
    rtol = 3e-3 if F32 else 1e-5
    failed = False
    if not (float(value) == float(expected) or (np.isnan(float(value)) and np.isnan(float(expected)))):  # NumPy's bits
        print(f"wrong value: NumPy {{expected!r}}, adcli {{value!r}}")
        failed = True
    if float(again[0]) != float(value) or any(not np.array_equal(g, h) for g, h in zip(grads, again[1])):
        print("a second run gave different results:", again, (value, grads))
        failed = True
    if F32 and not _twin_ok():
        print("f_float64 computes something else than f here: gradients not checked")
        grads = ()
    for k, g_arg in zip(ARGNUMS, grads):
        a_arg = args()[k]
        if _is_tree(a_arg):
            if _trees.structure(g_arg) != _trees.structure(a_arg):
                print(f"gradient {{k}} is {{g_arg!r}}: not the structure of argument {{a_arg!r}}")
                failed = True
                continue
            pairs = list(enumerate(zip(_trees.leaves(a_arg), _trees.leaves(g_arg))))
        else:
            pairs = [(None, (a_arg, g_arg))]
        for j, (a, g) in pairs:
            sub = isinstance(a, np.ndarray) and type(a) is not np.ndarray and type(g) is np.ndarray
            if (type(g) is not type(a) and not sub) or np.shape(g) != np.shape(a) \\
                    or getattr(g, "dtype", None) != getattr(a, "dtype", None):
                print(f"gradient {{k}} (leaf {{j}}) has type {{type(g).__name__}} {{np.shape(g)}} {{getattr(g, 'dtype', '')}}, "
                      f"argument {{type(a).__name__}} {{np.shape(a)}} {{getattr(a, 'dtype', '')}}")
                failed = True
                continue
            fd, smooth = _fd(k, j, g)
            close = np.isclose(np.ma.getdata(g).astype(float), fd, rtol=rtol,
                               atol=rtol * (1 + np.max(np.abs(fd), initial=0)))
            if not np.all(close | ~smooth):
                print(f"wrong gradient for argument {{k}} (leaf {{j}}):\\n  finite differences {{fd!r}}\\n"
                      f"  adcli              {{g!r}}")
                failed = True
    print("FAILS" if failed else "passes")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
'''


def finding_key(outcome: Outcome, prog: Program) -> str:
    """What makes two findings the same: category, check and message; for wrong answers (whose
    message says little) also the NumPy functions and operators left in the minimal program."""
    if outcome.category in ("crash", "refused"):
        return outcome.key
    return f"{outcome.key}|{' '.join(sorted(api_tokens(prog.stmts)))}"


def file_name(key: str, category: str) -> str:
    return f"{category}-{hashlib.sha1(key.encode()).hexdigest()[:8]}.py"


def describe(prog: Program, outcome: Outcome) -> tuple:
    """(expected, observed) in words, with per-element gradients for gradient findings."""
    exp, obs = outcome.expected, outcome.observed
    if outcome.category in ("wrong-gradient", "layout-mismatch") and "gradient" in (outcome.check + outcome.detail
                                                                                      + outcome.category):
        try:
            ns: dict = {}
            exec(script(prog, outcome, header=False), ns)
            f, argnums = ns["f"], ns["ARGNUMS"]
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _, grads = adcli.value_and_grad(f, argnums)(*ns["args"]())
                fds = [ns["_fd"](k, None, g)[0] for k, g in zip(argnums, grads)]
            exp = "; ".join(f"d/d{prog.argnames[k]} = {_short(d)}" for k, d in zip(argnums, fds)) + " (finite differences)"
            obs = "; ".join(f"d/d{prog.argnames[k]} = {_short(g)}" for k, g in zip(argnums, grads)) + " (adcli)"
        except Exception as e:  # the description is a courtesy; the outcome stands
            obs += f" [per-element comparison failed: {type(e).__name__}: {e}]"
    return exp, obs


def _short(a) -> str:
    return re.sub(r"\s+", " ", np.array2string(np.asarray(a, float), precision=6, max_line_width=10_000))


def script(prog: Program, outcome: Outcome, header: bool = True, found_as: Outcome | None = None) -> str:
    """The standalone reproduction script for a failing program."""
    argnums = outcome.argnums if outcome.argnums is not None else prog.float_argnums
    math = "import math\n" if "math." in prog.body() else ""
    src = PRELUDE.replace("import math\n", "import copy\n" + math + "import sys\n").replace(
        "import numpy as np\n", "import numpy as np\n\nimport adcli\nfrom adcli.errors import RuleError\n")
    if any(trees.is_tree(a) for a in prog.args):
        src = src.replace("import adcli\n", "import adcli\nfrom tests.fuzz import trees as _trees\n"
                          "from tests.fuzz.trees import *  # noqa: F403 (the containers of ARGS)\n")
    code = src + f"\n\ndef f({', '.join(prog.argnames)}):\n{prog.body()}\n\n\n"
    f32 = any(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in prog.args)
    if f32:
        code += (f"def f_float64({', '.join(prog.argnames)}):\n"
                 f"    \"\"\"f in float64, for finite differences of float32 gradients.\"\"\"\n"
                 f"{prog.body().replace('float32', 'float64')}\n\n\n")
    code += f"ARGS = [{', '.join(literal(a) for a in prog.args)}]\nARGNUMS = {tuple(argnums)!r}\n"
    code += f"LAYOUT = {outcome.layout!r}\nF32 = {f32!r}\n"
    code += CHECKER.format(layout=_LAYOUT_CODE[outcome.layout])
    if not header:
        return code
    exp, obs = describe(prog, outcome)
    lines = [f"Fuzz finding: {outcome.category} ({outcome.check}{': ' + outcome.detail if outcome.detail else ''})",
             "", f"seed {prog.seed}; statement kinds: {', '.join(prog.kinds)}"]
    if found_as is not None and found_as.key != outcome.key:
        lines.append(f"found as {found_as.category} ({found_as.check}) with argnums "
                     f"{found_as.argnums or 'all float arguments'!s}, layout {found_as.layout or 'C order'}")
    lines += [f"argnums {tuple(argnums)!r}; input layout: {outcome.layout or 'C order'}", "",
              "expected: " + _indent(exp), "observed: " + _indent(obs), "",
              "Reproduce: python <this file> (exits 1 while the bug is present)."]
    physical = "\n".join(lines).splitlines()
    doc = "\n".join(textwrap.fill(ln, 110, subsequent_indent="    ") if len(ln) > 110 else ln for ln in physical)
    doc = doc.replace('"""', "'''").replace("\\", "\\\\")
    return f'"""{doc}\n"""\n# ruff: noqa: E501\n' + code


def _indent(text: str) -> str:
    text = text.strip() or "-"
    if len(text) > 3000:
        text = text[:3000] + " ..."
    return text.replace("\n", "\n    ")



def load(path: str) -> Program:
    """The program of a finding script (its statements, arguments, argnums and layout)."""
    with open(path) as fh:
        text = fh.read()
    ns: dict = {"__name__": "finding"}
    exec(compile(text, path, "exec"), ns)
    m = re.search(r"^def f\(([^)]*)\):\n(.*?)^    return (.*?)$", text, re.S | re.M)
    if m is None:
        raise ValueError(f"{path} has no function f")
    stmts: list = []
    for line in m.group(2).splitlines():
        if line.startswith("        ") and stmts:
            stmts[-1] += "\n" + line[4:]
        elif line.strip():
            stmts.append(line[4:])
    seed = re.search(r"seed (\d+)", text)
    args = list(ns["ARGS"])
    argnums = tuple(ns["ARGNUMS"])
    return Program(seed=int(seed.group(1)) if seed else 0, argnames=[a.strip() for a in m.group(1).split(",")],
                   args=args, stmts=[Stmt("replayed", t) for t in stmts], layout=ns.get("LAYOUT"), ret=m.group(3),
                   argnums=None if argnums == tuple(i for i, a in enumerate(args) if differentiable(a)) else argnums)
