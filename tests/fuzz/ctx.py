"""What a statement generator sees: the NumPy values of the program so far, and helpers that turn
them into valid, smooth expressions (operands that broadcast, arguments kept away from kinks).

Every statement kind is a function ``kind(ctx) -> str`` registered with ``@kind(name, weight)``;
it returns source lines defining new variables (``ctx.new()``), or raises ``Skip`` when the
program has nothing it applies to. Values are known exactly (the generator runs the program
with NumPy after every statement), so guards look at real numbers, not estimates.
"""

from __future__ import annotations

import itertools

import numpy as np
import scipy.linalg as sl
import scipy.signal as ss
import scipy.special as sp
import scipy.stats as st

from .program import VAR, is_float

NAMESPACE: dict = {"np": np, "sp": sp, "st": st, "ss": ss, "sl": sl}  # grammar adds the rest
KINDS: dict = {}  # name -> (generator, weight)
SHAPE_KINDS: dict = {}  # the same, for the input shapes of "shapes" programs only (kinds_containers)
MAX_SIZE = 64


class Skip(Exception):
    """The kind does not apply to the current program."""


def kind(name: str, weight: float = 1.0, shapes: bool = False):
    """Register a statement kind; ``shapes``: only in programs drawn with the new input shapes
    (containers, subclasses, mixed joins), so the classic programs of every seed stay as they were."""
    table = SHAPE_KINDS if shapes else KINDS

    def register(fn):
        if name in KINDS or name in SHAPE_KINDS:
            raise ValueError(f"duplicate statement kind {name}")
        table[name] = (fn, weight)
        return fn

    return register


class Ctx:
    def __init__(self, rng, env: dict, names: list, f32: bool, counter: int, argnames: list):
        self.r = rng
        self.env = env  # name -> NumPy value after the statements so far
        self.names = names  # variables in definition order (arguments first)
        self.f32 = f32
        self.counter = counter
        self.argnames = argnames
        self.made: list = []

    # --- variables ---
    def new(self) -> str:
        self.counter += 1
        name = f"v{self.counter}"
        self.made.append(name)
        return name

    def tmp(self, stem: str) -> str:
        """A helper name (loop counters, lists) that is not a program variable."""
        return f"{stem}_{self.counter + 1}"

    def val(self, name):
        return self.env[name]

    def floats(self, pred=None) -> list:
        out = []
        for n in self.names:
            v = self.env.get(n)
            if v is None or not is_float(v):
                continue
            if pred is None or pred(np.asarray(v)):
                out.append(n)
        return out

    def pick(self, pred=None, *, array=False) -> str:
        """A float variable satisfying ``pred(np.asarray(value))``; recent ones are likelier."""
        cands = self.floats(pred)
        if array:
            cands = [n for n in cands if isinstance(self.env[n], np.ndarray)]
        if not cands:
            raise Skip
        weights = [1 + i * i for i in range(len(cands))]
        return self.r.choices(cands, weights)[0]

    def pick_nd(self, lo=1, hi=4, pred=None) -> str:
        return self.pick(lambda a: lo <= a.ndim <= hi and (pred is None or pred(a)), array=True)

    def owner(self) -> str:
        """An array a statement made that owns its memory and is no argument's view."""
        args = [self.env[a] for a in self.argnames if isinstance(self.env.get(a), np.ndarray)]

        def ok(a):
            return a.ndim >= 1 and a.base is None and not any(np.shares_memory(a, b) for b in args)

        cands = [n for n in self.floats(ok) if n not in self.argnames and isinstance(self.env[n], np.ndarray)]
        if not cands:
            raise Skip
        return self.r.choice(cands)

    def ev(self, expr: str):
        """Evaluate a side-effect-free expression over the current values."""
        with np.errstate(all="ignore"):
            try:
                return eval(expr, NAMESPACE, dict(self.env))
            except Exception as e:  # a guard asked about an invalid expression
                raise Skip from e

    def shape(self, expr: str) -> tuple:
        return np.shape(self.ev(expr))

    # --- numbers and literals ---
    def choice(self, seq):
        return self.r.choice(list(seq))

    def num(self, lo: float, hi: float) -> str:
        x = round(self.r.uniform(lo, hi), 2)
        return repr(x if x != 0 else 0.25)

    def lit(self, shape, lo=-1.5, hi=1.5) -> str:
        """A plain constant array of ``shape`` with distinct values."""
        n = int(np.prod(shape))
        vals = np.round(np.linspace(lo, hi, n + 2)[1:-1] + self.r.uniform(-0.05, 0.05), 2)
        vals = vals[np.array(self.r.sample(range(n), n), dtype=int)] if n else vals
        arr = vals.reshape(shape)
        body = repr(float(arr)) if arr.ndim == 0 else repr(arr.tolist())
        return f"np.array({body}{', dtype=np.float32' if self.f32 else ''})"

    def mask(self, shape) -> str:
        n = int(np.prod(shape))
        bits = [self.r.random() < 0.6 for _ in range(n)]
        if n and not any(bits):
            bits[self.r.randrange(n)] = True
        return f"np.array({np.array(bits, dtype=bool).reshape(shape).tolist()!r})"

    def bshape(self, shape) -> tuple:
        """A shape that broadcasts against ``shape``: leading axes dropped, some axes set to 1."""
        lead = self.r.randint(0, len(shape)) if self.r.random() < 0.4 else 0
        return tuple(1 if self.r.random() < 0.3 else n for n in shape[lead:])

    # --- operands ---
    def scalar(self, name=None) -> str:
        """A traced scalar expression from variable ``name`` (or a random one)."""
        name = name or self.pick()
        a = np.asarray(self.val(name))
        if a.ndim == 0:
            return name
        return self.choice([f"np.sum({name})", f"np.mean({name})", f"{name}[{', '.join(['0'] * a.ndim)}]",
                            f"{name}.max()" if unique_extreme(a, None) else f"np.mean({name})"])

    def operand(self, shape, traced=0.7) -> str:
        """An expression whose value broadcasts against ``shape`` without growing it much."""
        roll = self.r.random()
        if roll < traced:
            def fits(a):
                try:
                    out = np.broadcast_shapes(a.shape, shape)
                except ValueError:
                    return False
                return int(np.prod(out)) <= MAX_SIZE and len(out) <= 4
            try:
                return self.pick(fits)
            except Skip:
                pass
        if roll < 0.8:
            return self.lit(self.bshape(shape))
        if roll < 0.9:
            return self.num(-2.0, 2.0)
        return self.scalar()

    def fit(self, shape, extra_lead=True) -> str:
        """A traced expression that broadcasts *to* ``shape`` exactly (a right-hand side)."""
        shape = tuple(shape)
        options = []
        same = self.floats(lambda a: a.shape == shape)
        if same:
            v = self.r.choice(same)
            options += [v, f"{v} * 0.5 + 0.1"]
            if extra_lead and shape:
                options.append(f"{v}[None]")
        smaller = self.floats(lambda a: _broadcasts_to(a.shape, shape) and a.shape != shape)
        if smaller:
            v = self.r.choice(smaller)
            options.append(v)
            if extra_lead and shape and np.ndim(self.val(v)):
                options.append(f"{v}[None]")  # broadcasts and has an extra leading axis
        sized = self.floats(lambda a: a.size == int(np.prod(shape)) and a.ndim >= 1 and a.shape != shape)
        if sized:
            options.append(f"{self.r.choice(sized)}.reshape({shape!r})")
        options.append(f"{self.scalar()} * {self.lit(shape)}")
        return self.r.choice(options)

    # --- guards: keep arguments away from kinks and domain edges ---
    def positive(self, name, margin=0.3) -> str:
        """An expression of ``name`` whose values are all >= margin (for log, sqrt, ...)."""
        a = np.asarray(self.val(name), dtype=float)
        opts = [f"({name} * {name} + {self.num(0.5, 1.5)})", f"np.exp(np.tanh({name}))", f"np.cosh({name})"]
        lo = float(a.min())
        shift = round(margin - lo + self.r.uniform(0.0, 1.0), 2)
        opts.append(f"({name} + {shift!r})" if shift > 0 else name)
        if np.abs(a).max() < 5:
            opts.append(f"np.exp({name})")
        return self.r.choice(opts)

    def bounded(self, name, lim=3.0) -> str:
        a = np.asarray(self.val(name), dtype=float)
        if np.abs(a).max() <= lim and self.r.random() < 0.7:
            return name
        return self.choice([f"np.tanh({name}) * {lim}", f"np.sin({name}) * {lim}"])

    def away(self, expr, points=(0.0,), margin=0.15) -> str:
        """``expr`` shifted (if needed) so no value is within ``margin`` of any of ``points``."""
        a = np.asarray(self.ev(expr), dtype=float)
        for shift in itertools.chain([0.0], (round(self.r.uniform(-3, 3), 2) for _ in range(12))):
            if all(np.all(np.abs(a + shift - p) >= margin) for p in points):
                return expr if shift == 0 else f"({expr} + {shift!r})"
        raise Skip

    def threshold(self, expr, margin=0.08) -> str:
        """A number between two values of ``expr`` that is at least ``margin`` from all of them."""
        a = np.sort(np.asarray(self.ev(expr), dtype=float).ravel())
        a = np.concatenate([[a[0] - 1.0], a, [a[-1] + 1.0]])
        gaps = [(a[i] + a[i + 1]) / 2 for i in range(len(a) - 1) if a[i + 1] - a[i] >= 2 * margin + 0.02]
        if not gaps:
            raise Skip
        return repr(round(float(self.r.choice(gaps)), 3))


def _broadcasts_to(small, big) -> bool:
    if len(small) > len(big):
        return False
    return all(s in (1, b) for s, b in zip(small[::-1], big[::-1]))


def separated(a, b, margin=0.05) -> bool:
    """Whether no broadcast pair of ``a`` and ``b`` is within ``margin`` (no ties for max/min)."""
    with np.errstate(all="ignore"):
        d = np.abs(np.asarray(a, float) - np.asarray(b, float))
    return bool(np.all(d >= margin))


def unique_extreme(a, axis, margin=0.05) -> bool:
    """Whether max and min along ``axis`` are attained once, by a margin."""
    a = np.asarray(a, float)
    if a.size == 0:
        return False
    s = np.sort(a.reshape(-1) if axis is None else np.moveaxis(a, axis, -1), axis=-1)
    if s.shape[-1] < 2:
        return True
    return bool(np.all(s[..., -1] - s[..., -2] >= margin) and np.all(s[..., 1] - s[..., 0] >= margin))


def var_names(text: str) -> list:
    return VAR.findall(text)
