"""Example inputs for verifying an imported autograd rule: values of the declared types,
inside each function's domain (``_DOMAINS``), or built by a per-function maker (``_EXAMPLES``)."""

from __future__ import annotations

import numpy as np

from ..engine.descriptors import array_type, describe, is_float
from ..errors import RuleError

_N = 4  # size of every generated array axis (square matrices fit every contraction)


def _domain(rng, shape, kind):
    """An array of ``shape`` inside a function's domain."""
    size = int(np.prod(shape)) if shape else 1
    if kind == "pos":
        return rng.uniform(0.5, 2.0, shape)
    if kind == "unit":
        return rng.uniform(-0.8, 0.8, shape)
    if kind == "gt1":
        return rng.uniform(1.2, 3.0, shape)
    if kind == "prob":
        return rng.uniform(0.1, 0.9, shape)
    if kind == "erfc":
        return rng.uniform(0.2, 1.8, shape)
    if kind == "away0":
        return rng.choice([-1.0, 1.0], shape) * rng.uniform(0.5, 2.0, shape)
    if kind == "distinct":  # well separated values: sorts and maxima keep their order under FD steps
        return (rng.permutation(size) + rng.uniform(0.2, 0.8, size)).reshape(shape) * 0.5
    if kind == "spd" and len(shape) == 2:
        b = rng.standard_normal(shape)
        return b @ b.T / shape[0] + np.eye(shape[0])
    if len(shape) == 2 and shape[0] == shape[1]:  # a well-conditioned random matrix
        return rng.standard_normal(shape) / np.sqrt(shape[0]) + 2.0 * np.eye(shape[0])
    return rng.standard_normal(shape)


def _value(rng, desc: str, kind=None, n: int = _N):
    """A value of descriptor ``desc``."""
    t = array_type(desc)
    if t is not None:
        shape = (n,) * t.ndim
        if t.layout == "strided":
            base = _value(rng, f"{t.code}[{t.ndim}d]", kind, 2 * n)
            return base[(slice(None, None, 2),) * t.ndim]
        dtype = t.dtype
        if dtype is None or dtype.kind == "c":
            raise RuleError(f"no example values for {desc!r}: pass example_args=")
        if dtype.kind == "b":
            a = rng.random(shape) > 0.5
        elif dtype.kind in "iu":
            a = rng.integers(0, 3, shape).astype(dtype)
        else:
            a = _domain(rng, shape, kind).astype(dtype)
        return np.asfortranarray(a) if t.layout == "F" else np.ascontiguousarray(a) if t.ndim > 1 else a
    if desc == "float":
        return float(_domain(rng, (), kind))
    if desc in ("f16", "f32", "f64"):
        return np.dtype("float" + desc[1:]).type(_domain(rng, (), kind))
    if desc == "int":
        return 1
    if desc == "bool":
        return True
    if desc == "None":
        return None
    raise RuleError(f"no example value for descriptor {desc!r}: pass example_args= (and example_kwargs=)")


# Per-function domains: one kind for every argument, or a tuple with one kind per position.
_DOMAINS: dict = {
    **dict.fromkeys(["numpy.log", "numpy.log2", "numpy.log10", "numpy.log1p", "numpy.sqrt", "numpy.reciprocal",
                     "scipy.special.gamma", "scipy.special.gammaln", "scipy.special.psi", "scipy.special.rgamma",
                     "scipy.special.y0", "scipy.special.y1", "scipy.special.beta", "scipy.special.betaln",
                     "scipy.special.gammainc", "scipy.special.gammaincc", "scipy.special.yn", "scipy.special.iv",
                     "scipy.special.ive", "scipy.special.jn"], "pos"),
    **dict.fromkeys(["numpy.arcsin", "numpy.arccos", "numpy.arctanh", "numpy.tan", "scipy.special.erfinv"], "unit"),
    **dict.fromkeys(["numpy.absolute", "numpy.fabs", "numpy.prod", "numpy.sinc", "numpy.angle"], "away0"),
    **dict.fromkeys(["numpy.sort", "numpy.partition", "numpy.max", "numpy.min", "numpy.amax", "numpy.amin"],
                    "distinct"),
    "numpy.arccosh": "gt1",
    "scipy.special.logit": "prob",
    "scipy.special.erfcinv": "erfc",
    "numpy.linalg.cholesky": "spd",
    "numpy.power": ("pos", None),
    "numpy.divide": (None, "away0"),
}


def _pairs_apart(rng, types, kw):
    """maximum/minimum/fmax/fmin: two arguments that are never close to a tie."""
    x = _value(rng, types[0])
    y = x + rng.choice([-1.0, 1.0], np.shape(x)) * rng.uniform(0.3, 1.0, np.shape(x))
    return [x, _like(y, types[1])], {}


def _remainder(rng, types, kw):
    y = _value(rng, types[1], "pos") + 1.0
    x = (rng.integers(-2, 3, np.shape(y)) + rng.uniform(0.2, 0.8, np.shape(y))) * y  # x / y away from integers
    return [_like(x, types[0]), y], {}


def _like(v, desc):
    if desc == "float":
        return float(v)
    if desc in ("f16", "f32", "f64"):
        return np.dtype("float" + desc[1:]).type(v)
    return np.asarray(v)


def _fixed(*values, kwargs=None):
    """Examples: the first argument generated from its descriptor, then fixed values."""
    def make(rng, types, kw, kind=None, shape_n=_N):
        return [_value(rng, types[0], kind, shape_n), *values][: len(types)], dict(kwargs or {})
    return make


def _with_shape(shape, *values, kind=None):
    """Examples: every float array argument of ``shape``, then fixed values."""
    def make(rng, types, kw):
        arrays = [_domain(rng, shape, kind) for t in types if array_type(t) is not None and is_float(t)]
        return [*arrays, *values][: len(types)], {}
    return make


def _betainc(rng, types, kw):
    return [_value(rng, types[0], "pos"), _value(rng, types[1], "pos"), _value(rng, types[2], "prob")], {}


def _clip(rng, types, kw):
    x = rng.choice([-1.0, 0.0, 1.0], (_N,) * _ndim(types[0])) + rng.uniform(-0.3, 0.3, (_N,) * _ndim(types[0]))
    return [x, -0.5, 0.5][: len(types)], {}


def _where(rng, types, kw):
    return [_value(rng, types[0]), _value(rng, types[1]), _value(rng, types[2])], {}


def _einsum(rng, types, kw):
    subs = {2: "ij,jk->ik", 3: "ij,jk,kl->il"}.get(len(types) - 1, ",".join("ij" for _ in types[1:]) + "->ij")
    return [subs, *(_value(rng, t) for t in types[1:])], {}


def _ndim(desc: str) -> int:
    t = array_type(desc)
    return t.ndim if t is not None else 0


_EXAMPLES: dict = {
    "numpy.maximum": _pairs_apart,
    "numpy.minimum": _pairs_apart,
    "numpy.fmax": _pairs_apart,
    "numpy.fmin": _pairs_apart,
    "numpy.remainder": _remainder,
    "numpy.clip": _clip,
    "numpy.where": _where,
    "numpy.einsum": _einsum,
    "scipy.special.betainc": _betainc,
    "numpy.reshape": _fixed((2, 8)),
    "numpy.expand_dims": _fixed(1),
    "numpy.repeat": _fixed(2),
    "numpy.tile": _fixed(2),
    "numpy.roll": _fixed(1),
    "numpy.swapaxes": _fixed(0, 1),
    "numpy.moveaxis": _fixed(0, 1),
    "numpy.rollaxis": _fixed(1),
    "numpy.partition": lambda rng, types, kw: ([_value(rng, types[0], "distinct"), 2], {}),
    "numpy.diagonal": _fixed(0, -1, -2),
    "numpy.pad": _fixed(1, "constant"),
    "numpy.squeeze": _with_shape((_N, 1)),
    "numpy.broadcast_to": _with_shape((1, _N), (_N, _N)),
    "numpy.cross": _with_shape((3,)),
    "numpy.gradient": _with_shape((7,)),
    "numpy.linspace": lambda rng, types, kw: ([0.3, 1.7, 5][: len(types)], {}),
}


def examples(entry, sig: tuple, keywords: dict, example_args, example_kwargs, seed: int, union=frozenset()):
    """Positional and keyword example values for ``entry`` called with types ``sig`` (the
    caller's ``example_args`` when they have these types, or the types of another member of
    the ``union`` being imported; else generated)."""
    rng = np.random.default_rng(seed)
    given = tuple(describe(a) for a in example_args) if example_args is not None else None
    if given is not None and given != sig and given not in union:
        raise RuleError(f"example_args have types ({', '.join(given)}), the rule is for ({', '.join(sig)})")
    if given == sig:
        args = list(example_args)
        kwargs = dict(example_kwargs or {})
    else:  # generated (for the other members of a union of types, too)
        if entry.name in _EXAMPLES:
            args, kwargs = _EXAMPLES[entry.name](rng, sig, keywords)
            args = list(args)
        else:
            dom = _DOMAINS.get(entry.name)
            kinds = dom if isinstance(dom, tuple) else (dom,) * len(sig)
            args = [_value(rng, d, k) for d, k in zip(sig, kinds)]
            kwargs = {}
        kwargs.update(example_kwargs or {})
        got = tuple(describe(a) for a in args)
        if got != sig:
            raise RuleError(
                f"cannot verify {entry.name}({', '.join(sig)}): no example inputs of these types; pass example_args="
            )
    for k, desc in keywords.items():
        if k not in kwargs:
            kwargs[k] = _KW_DEFAULTS.get((entry.name, k), _KW_DEFAULTS.get(k, None))
            if kwargs[k] is None:
                kwargs[k] = _value(rng, desc)
        if describe(kwargs[k]) != desc:
            raise RuleError(
                f"example keyword {k}={kwargs[k]!r} is {describe(kwargs[k])}, the rule says {desc}: "
                "pass example_kwargs="
            )
    return args, kwargs


# Example values of keyword arguments (by function and name, or by name).
_KW_DEFAULTS: dict = {
    "axis": 1,
    "keepdims": True,
    "ddof": 1,
    ("numpy.linalg.svd", "compute_uv"): False,
    ("numpy.linalg.svd", "full_matrices"): False,
    "mode": "constant",
    "k": 1,
    "offset": 1,
}
