"""A generated program: float arguments, a list of statements, and its rendering as source text.

A program is kept as statements (so the shrinker can drop them) and rendered as a standalone
module: ``f(x0, ...)`` whose last line returns a weighted sum of every *leaf* variable (one no
later statement reads), with fixed weights from ``_w`` so wrong gradients cannot cancel.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

import numpy as np

from . import trees
from .library_specs import ODE_SOURCE

VAR = re.compile(r"\b[vx]\d+\b")

PRELUDE = '''import math

import numpy as np
import scipy.integrate as si
import scipy.interpolate as sint
import scipy.linalg as sl
import scipy.optimize as so
import scipy.signal as ss
import scipy.special as sp
import scipy.stats as st


def _w(v, k):
    """Fixed, asymmetric weights shaped like v (a plain constant)."""
    return np.cos(np.arange(np.size(v)) * 0.7 + k).reshape(np.shape(v))
''' + ODE_SOURCE


@dataclass(frozen=True)
class Stmt:
    """One statement (possibly several lines, indented relative to the function body)."""

    kind: str
    text: str

    @property
    def defines(self) -> tuple:
        """Variables this statement (re)binds or writes into."""
        out = []
        for line in self.text.splitlines():
            lhs = _lhs(line)
            if lhs is not None:
                out.extend(n for n in VAR.findall(lhs) if n not in out)
        return tuple(out)

    @property
    def uses(self) -> tuple:
        """Variables this statement reads (augmented and subscript assignment read the target)."""
        out = []
        for line in self.text.splitlines():
            lhs = _lhs(line)
            rhs = line if lhs is None else line[len(lhs) + 1:]
            names = VAR.findall(rhs)
            if lhs is not None and (re.search(r"[-+*/@]=\s*$", lhs + "=") or "[" in lhs):
                names += VAR.findall(lhs)
            out.extend(n for n in names if n not in out)
        return tuple(out)


def _lhs(line: str):
    """The assignment target part of ``line`` up to the ``=`` (including an operator), or None."""
    m = re.match(r"^\s*([^=()]*?[^=<>!])=(?!=)", line)
    if not m or line.lstrip().startswith(("for ", "while ", "if ", "return ")):
        return None
    return m.group(0)[:-1]


@dataclass
class Program:
    """A generated program and its inputs.

    ``layout`` (None, "F", "reversed", "strided") and ``argnums`` (None: every float argument)
    say how a reproduction calls it; the campaign leaves both None.
    """

    seed: int
    argnames: list
    args: list
    stmts: list
    layout: str | None = None
    argnums: tuple | None = None
    notes: dict = field(default_factory=dict)
    ret: str | None = None  # the return expression, when not the weighted sum of the leaves

    def with_(self, **changes) -> "Program":
        return replace(self, **changes)

    @property
    def float_argnums(self) -> tuple:
        return tuple(i for i, a in enumerate(self.args) if differentiable(a))

    @property
    def kinds(self) -> list:
        return [s.kind for s in self.stmts]

    def leaves(self) -> list:
        """Names whose last mention is a definition: the values the return line weighs."""
        last_def, last_use = {}, {}
        for i, s in enumerate(self.stmts):
            for n in s.uses:
                last_use[n] = i
            for n in s.defines:
                last_def[n] = i
        out = [n for n, i in last_def.items() if last_use.get(n, -1) <= i and n.startswith("v")]
        if not out:
            out = [n for n, a in zip(self.argnames, self.args) if is_float(a)][:1]
        return out

    def body(self) -> str:
        lines = []
        for s in self.stmts:
            lines.extend("    " + ln for ln in s.text.splitlines())
        terms = [f"np.sum({n} * _w({n}, {k}))" for k, n in enumerate(self.leaves())]
        lines.append("    return " + (self.ret or " + ".join(terms)))
        return "\n".join(lines)

    @property
    def source(self) -> str:
        return f"{PRELUDE}\n\ndef f({', '.join(self.argnames)}):\n{self.body()}\n"


_TOKEN = re.compile(r"np(?:\.\w+)+|\.\w+(?=\()|\.T\b|\*\*|[-+*/@]=|\]\s*=(?!=)|@|\b(?:for|while|sum|divmod|"
                    r"round|hash|abs|max)\b|math\.\w+")
_PLAIN_TOKENS = {"np.array", "np.float32", "np.float64", "np.arange", "np.sum", "np.mean"}


def api_tokens(stmts) -> frozenset:
    """The NumPy functions, methods and operators the statements use (stand-ins left out): what
    tells two failures apart better than statement kinds do."""
    out = set()
    for s in stmts:
        if s.kind != "stand-in":
            out.update(t.replace(" ", "") for t in _TOKEN.findall(s.text))
    out -= _PLAIN_TOKENS
    # np.diagonal(y) and y.diagonal() are one API; y[i] = v, y += v, y *= 2 are all writes
    return frozenset("write" if t.endswith("=") else t.removeprefix("np.").lstrip(".") for t in out)


def is_float(a) -> bool:
    return type(a) is float or (isinstance(a, (np.ndarray, np.floating)) and np.result_type(a).kind == "f")


def differentiable(a) -> bool:
    """A float argument, or a container (tests/fuzz/trees.py) whose leaves are all floats."""
    if trees.is_tree(a):
        return all(is_float(v) for v in trees.leaves(a)) and bool(trees.leaves(a))
    return is_float(a)


def subclass(a) -> bool:
    """An ndarray subclass (np.matrix, a masked array): kept as it is, in its own layout."""
    return isinstance(a, np.ndarray) and type(a) is not np.ndarray


def fresh(a):
    """A new copy of an argument (arrays C-ordered), so no run sees another's writes."""
    if trees.is_tree(a):
        return trees.tmap(fresh, a)
    if subclass(a):
        return a.copy()
    return np.array(a, copy=True) if isinstance(a, np.ndarray) else a


LAYOUTS = ("F", "reversed", "strided")


def with_layout(a, layout):
    """The same values as ``a`` in another memory layout (a fresh buffer every call)."""
    if trees.is_tree(a):
        return trees.tmap(lambda v: with_layout(v, layout), a)
    if not isinstance(a, np.ndarray) or layout is None or subclass(a):
        return fresh(a)
    if layout == "F":
        return np.asfortranarray(a.copy()) if a.ndim >= 2 else a.copy()
    if layout == "reversed":  # negative strides on every axis, same values
        rev = (slice(None, None, -1),) * a.ndim
        return a[rev].copy()[rev] if a.ndim else a.copy()
    if layout == "strided":  # every other element of a twice-as-wide buffer
        if not a.ndim:
            return a.copy()
        wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        wide[..., ::2] = a
        return wide[..., ::2]
    raise ValueError(layout)


def changes_layout(args, layout) -> bool:
    """Whether ``layout`` makes any argument's memory layout differ from C order."""
    return any(isinstance(a, np.ndarray) and not subclass(a) and (a.ndim >= 2 if layout == "F" else a.ndim >= 1)
               for arg in args for a in trees.leaves(arg))


def literal(a) -> str:
    """Source text that rebuilds ``a`` exactly (floats by repr; containers and ndarray subclasses
    by their constructors)."""
    if trees.is_tree(a):
        return trees.literal(a, literal)
    if isinstance(a, np.matrix):
        return f"np.matrix({literal(np.asarray(a))})"
    if isinstance(a, np.ma.MaskedArray):
        return f"np.ma.array({literal(np.ma.getdata(a))}, mask={np.ma.getmaskarray(a).tolist()!r})"
    if type(a) is float:
        return repr(a)
    if isinstance(a, np.floating) and not isinstance(a, np.ndarray):
        return f"np.{a.dtype.name}({float(a)!r})"
    body = _nested(a.tolist()) if a.ndim else repr(float(a))
    dt = "" if a.dtype == np.float64 else f", dtype=np.{a.dtype.name}"
    return f"np.array({body}{dt})"


def _nested(v) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_nested(e) for e in v) + "]"
    return repr(float(v)) if not math.isinf(v) else ("np.inf" if v > 0 else "-np.inf")
