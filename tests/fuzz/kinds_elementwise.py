"""Statement kinds: elementwise unary and binary operations, with broadcasting."""

from __future__ import annotations

import numpy as np

from .ctx import Skip, kind, separated


def _unary(name, template, weight=1.0, arg="any"):
    """Register ``new = template.format(x=<guarded operand>)``."""

    def gen(c):
        v = c.pick()
        x = {"any": lambda: v, "bounded": lambda: c.bounded(v), "positive": lambda: c.positive(v),
             "nonzero": lambda: c.away(v, (0.0,), 0.3), "unit": lambda: f"np.tanh({v}) * 0.9"}[arg]()
        return f"{c.new()} = {template.format(x=x)}"

    kind(name, weight)(gen)


for _name, _tpl, _arg in [
    ("sin", "np.sin({x})", "any"), ("cos", "np.cos({x})", "any"), ("tanh", "np.tanh({x})", "any"),
    ("exp", "np.exp({x})", "bounded"), ("expm1", "np.expm1({x})", "bounded"), ("exp2", "np.exp2({x})", "bounded"),
    ("sinh", "np.sinh({x})", "bounded"), ("cosh", "np.cosh({x})", "bounded"),
    ("log", "np.log({x})", "positive"), ("log1p", "np.log1p({x})", "positive"), ("log2", "np.log2({x})", "positive"),
    ("log10", "np.log10({x})", "positive"), ("sqrt", "np.sqrt({x})", "positive"),
    ("reciprocal", "np.reciprocal({x})", "nonzero"), ("one-over", "1.0 / {x}", "nonzero"),
    ("square", "np.square({x})", "any"), ("pow2", "{x} ** 2", "any"), ("pow3", "{x} ** 3", "bounded"),
    ("negative", "np.negative({x})", "any"), ("neg-op", "-{x}", "any"), ("pos-op", "+{x}", "any"),
    ("arctan", "np.arctan({x})", "any"), ("arcsinh", "np.arcsinh({x})", "any"),
    ("arcsin", "np.arcsin({x})", "unit"), ("arccos", "np.arccos({x})", "unit"), ("tan", "np.tan({x})", "unit"),
    ("arctanh", "np.arctanh({x})", "unit"), ("cbrt", "np.cbrt({x})", "nonzero"),
    ("abs", "np.abs({x})", "nonzero"), ("abs-builtin", "abs({x})", "nonzero"), ("fabs", "np.fabs({x})", "nonzero"),
    ("sqrt-pow", "{x} ** 0.5", "positive"), ("deg2rad", "np.deg2rad({x})", "any"),
]:
    _unary(_name, _tpl, arg=_arg)


@kind("power-scalar")
def _power_scalar(c):
    v = c.pick()
    e = c.choice(["0.5", "1.5", "-0.5", "2.5", "-1.0", "3"])
    return f"{c.new()} = np.power({c.positive(v)}, {e})"


@kind("scalar-arith", 1.5)
def _scalar_arith(c):
    v = c.pick()
    a, b = c.num(-2, 2), c.num(-2, 2)
    return f"{c.new()} = " + c.choice([f"{v} * {a} + {b}", f"{a} - {v}", f"{b} / {c.away(v, (0.0,), 0.3)}",
                                       f"({v} + {a}) * {b}"])


@kind("mod-frac", 0.5)
def _mod_frac(c):
    v = c.pick()
    a = np.asarray(c.val(v), float)
    frac = a - np.floor(a)
    if np.any(frac < 0.06) or np.any(frac > 0.94):
        raise Skip  # a jump of the sawtooth is too close
    return f"{c.new()} = " + c.choice([f"{v} % 1.0", f"np.mod({v}, 1.0)", f"{v} - np.floor({v})"])


# --- binary, with broadcasting ---
def _binary(name, template, weight=1.0, guard=None):
    def gen(c):
        a = c.pick()
        b = c.operand(np.shape(c.val(a)))
        if guard == "nonzero":
            b = c.away(b, (0.0,), 0.3)
        elif guard == "positive":
            b = c.away(b, (0.0,), 0.3) if np.all(np.asarray(c.ev(b)) > 0.3) else f"np.exp(np.tanh({b}))"
        elif guard == "tie":
            if not separated(c.ev(a), c.ev(b)):
                b = _separate(c, a, b)
        if guard not in ("nonzero", "positive") and c.r.random() < 0.3:
            a, b = b, a  # the guarded operand keeps its place
        return f"{c.new()} = {template.format(a=a, b=b)}"

    kind(name, weight)(gen)


def _separate(c, a, b):
    av, bv = np.asarray(c.ev(a), float), np.asarray(c.ev(b), float)
    for _ in range(10):
        s = round(c.r.uniform(-2.5, 2.5), 2)
        if separated(av, bv + s):
            return f"({b} + {s!r})"
    raise Skip


for _name, _tpl, _w, _g in [
    ("add", "{a} + {b}", 3, None), ("sub", "{a} - {b}", 2, None), ("mul", "{a} * {b}", 3, None),
    ("div", "{a} / {b}", 2, "nonzero"), ("np-add", "np.add({a}, {b})", 1, None),
    ("np-subtract", "np.subtract({a}, {b})", 0.5, None), ("np-multiply", "np.multiply({a}, {b})", 1, None),
    ("np-divide", "np.divide({a}, {b})", 0.5, "nonzero"), ("maximum", "np.maximum({a}, {b})", 1, "tie"),
    ("minimum", "np.minimum({a}, {b})", 1, "tie"), ("fmax", "np.fmax({a}, {b})", 0.5, "tie"),
    ("hypot", "np.hypot({a}, {b})", 1, "nonzero"), ("arctan2", "np.arctan2({a}, {b})", 1, "positive"),
    ("logaddexp", "np.logaddexp({a}, {b})", 0.5, None), ("pow-traced", "np.power({b}, np.tanh({a}))", 0.5, "positive"),
]:
    _binary(_name, _tpl, _w, _g)


@kind("where-literal")
def _where_literal(c):
    a = c.pick()
    shape = np.shape(c.val(a))
    b = c.operand(shape)
    cond = c.mask(c.bshape(shape)) if shape else c.choice(["True", "False"])
    return f"{c.new()} = np.where({cond}, {a}, {b})"


@kind("where-compare")
def _where_compare(c):
    a = c.pick()
    b = c.operand(np.shape(c.val(a)))
    t = c.threshold(a)
    return f"{c.new()} = np.where({a} > {t}, {a}, {b})"


@kind("rpow")
def _rpow(c):
    v = c.pick()
    return f"{c.new()} = {c.num(0.5, 2.5)} ** {c.bounded(v, 2.0)}"


@kind("zero-d-operand")
def _zero_d(c):
    v = c.pick()
    s = c.num(-2, 2)
    op = c.choice([f"np.float64({s})", f"np.array({s})", f"np.float32({s})" if c.f32 else f"np.array({s})"])
    return f"{c.new()} = " + c.choice([f"{v} * {op}", f"{op} + {v}", f"{op} - {v}"])


@kind("clip", 1.0)
def _clip(c):
    v = c.pick()
    lo, hi = c.threshold(v, 0.1), c.threshold(v, 0.1)
    lo, hi = sorted([float(lo), float(hi)])
    if hi - lo < 0.1:
        hi = lo + 1.0
        if np.any(np.abs(np.asarray(c.val(v)) - hi) < 0.1):
            raise Skip
    return f"{c.new()} = " + c.choice([f"np.clip({v}, {lo!r}, {hi!r})", f"{v}.clip({lo!r}, {hi!r})"])


@kind("sinc", 0.5)
def _sinc(c):
    v = c.pick()
    return f"{c.new()} = np.sinc({c.away(v, (0.0,), 0.2)})"


# --- scipy.special's ufuncs (engine/rules_scipy.py), on smooth maps into their domains ---
_SP_ANY = ["expit", "erf", "erfc", "ndtr", "log_ndtr", "log_expit", "i0", "i0e"]
_SP_POSITIVE = ["gammaln", "digamma", "rgamma", "i1e", "j0", "y0"]  # of v * v + 0.5
_SP_UNIT = ["logit", "ndtri", "erfinv", "entr"]  # of expit(v) * 0.8 + 0.1, in (0.1, 0.9)


@kind("scipy-special-unary", 1.5)
def _scipy_unary(c):
    v = c.pick()
    group = c.r.random()
    if group < 0.45:
        return f"{c.new()} = sp.{c.choice(_SP_ANY)}({v})"
    if group < 0.8:
        return f"{c.new()} = sp.{c.choice(_SP_POSITIVE)}({v} * {v} + 0.5)"
    return f"{c.new()} = sp.{c.choice(_SP_UNIT)}(sp.expit({v}) * 0.8 + 0.1)"


@kind("scipy-special-binary", 1.0)
def _scipy_binary(c):
    a = c.pick()
    b = c.operand(np.shape(c.val(a)))
    fn = c.choice(["xlogy", "xlog1py", "betaln", "rel_entr", "kl_div"])
    if fn in ("xlogy", "xlog1py"):
        return f"{c.new()} = sp.{fn}({a}, {b} * {b} + 0.5)"
    return f"{c.new()} = sp.{fn}({a} * {a} + 0.5, {b} * {b} + 0.5)"
