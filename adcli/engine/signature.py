"""Concrete-type descriptors: the one place that says how a value's type is spelled.

A *signature* is a callable plus the concrete types of its arguments; the profiler, the
advisor and rule declarations all print and parse these strings (docs/descriptors.md):

=====================  ===========================================================
``f64[2d]``            float64 ndarray, 2-d, C-contiguous (1-d and 0-d are always plain)
``f64[2d,F]``          float64 ndarray, 2-d, Fortran-contiguous and not C-contiguous
``f64[2d,strided]``    float64 ndarray, 2-d, neither (a non-contiguous view, e.g. ``x[:20, :20]``)
``f32[1d]``            float32 ndarray (likewise ``f16``, ``c128``, ``i64``, ``u8``, ``b`` ...)
``f64``                NumPy scalar (``np.float64(1.0)``, what ``x[i]`` gives)
``float`` ``int``      Python scalars (``bool``, ``complex``, ``str``, ``bytes``, ``None`` likewise)
``tuple(int, int)``    tuples and lists list their items; ``list(f64[1d]*100)`` for long uniform ones
``dict{a: f64[1d]}``   dicts list keys (repr'd unless identifiers) and value types in order
``fn(pkg.mod.f)``      callables by qualified name; other objects as ``obj(pkg.mod.Class)``
=====================  ===========================================================

A traced value is described by the value it stands for: tracing does not change a signature.
Shapes are not part of a descriptor, only the number of dimensions and the memory layout (as
Julia's ``Matrix{Float64}`` vs a ``SubArray``), so a rule for ``f64[2d]`` serves every size.
"""

from __future__ import annotations

import re
from types import BuiltinFunctionType, FunctionType, MethodType

import numpy as np

from .core import Tracer

_KIND = {"f": "f", "c": "c", "i": "i", "u": "u"}
_SCALARS = {float: "float", int: "int", bool: "bool", complex: "complex", str: "str", bytes: "bytes", type(None): "None"}
_MAX_ITEMS = 8


def dtype_code(dtype: np.dtype) -> str:
    """``f64`` for float64, ``b`` for bool, ``O`` for object, ..."""
    if dtype.kind == "b":
        return "b"
    if dtype.kind in _KIND:
        return f"{_KIND[dtype.kind]}{dtype.itemsize * 8}"
    return dtype.str.lstrip("<>|=")


def describe(x) -> str:
    """The concrete-type descriptor of ``x`` (a tracer is described by its value)."""
    v = x.value if isinstance(x, Tracer) else x
    t = type(v)
    if t in _SCALARS:
        return _SCALARS[t]
    if isinstance(v, np.ndarray):
        return _describe_array(v)
    if isinstance(v, np.generic):
        return dtype_code(v.dtype)
    if t is tuple or t is list:
        return f"{t.__name__}({_items(v)})"
    if t is dict:
        return "dict{" + ", ".join(f"{_key(k)}: {describe(val)}" for k, val in v.items()) + "}"
    if isinstance(v, (FunctionType, BuiltinFunctionType, MethodType, np.ufunc)) or (callable(v) and not isinstance(v, type)):
        return f"fn({_qualname(v)})"
    if isinstance(v, type):
        return f"type({_qualname(v)})"
    if isinstance(v, tuple):  # namedtuple
        return f"{_qualname(t)}({_items(v)})"
    return f"obj({_qualname(t)})"


def _describe_array(a: np.ndarray) -> str:
    code = dtype_code(a.dtype)
    if a.ndim <= 1 or a.flags.c_contiguous:
        return f"{code}[{a.ndim}d]"
    if a.flags.f_contiguous:
        return f"{code}[{a.ndim}d,F]"
    return f"{code}[{a.ndim}d,strided]"


def _items(seq) -> str:
    parts = [describe(v) for v in seq]
    if len(parts) > 3 and len(set(parts)) == 1:
        return f"{parts[0]}*{len(parts)}"
    if len(parts) > _MAX_ITEMS:
        return ", ".join(parts[:_MAX_ITEMS]) + f", ...{len(parts) - _MAX_ITEMS} more"
    return ", ".join(parts)


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _key(k) -> str:
    return k if isinstance(k, str) and _IDENT.match(k) else repr(k)


def _qualname(obj) -> str:
    if isinstance(obj, np.ufunc):
        return f"numpy.{obj.__name__}"
    module = getattr(obj, "__module__", None) or "?"
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__
    return f"{module}.{name}"


def signature_key(args: tuple, kwargs: dict) -> tuple:
    """The hashable registry key of a call: positional descriptors, then sorted keyword ones."""
    key = tuple(describe(a) for a in args)
    if kwargs:
        key += tuple(f"{k}={describe(v)}" for k, v in sorted(kwargs.items()))
    return key


def call_signature(args: tuple, kwargs: dict) -> str:
    """``f64[2d], f64[2d], axis=int`` — the argument part of a signature string."""
    return ", ".join(signature_key(args, kwargs))


# --- parsing (rule declarations name types with these strings) ---
_ARRAY = re.compile(r"^(?P<code>[a-zA-Z]+\d*)\[(?P<ndim>\d+)d(?:,(?P<layout>F|strided))?\]$")
_DTYPES = {"f16", "f32", "f64", "f128", "c64", "c128", "c256", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "b"}


def parse_descriptor(text: str) -> str:
    """Validate a descriptor string and return it normalised (spaces stripped).

    Raises ValueError with a one-line reason for an unknown or abstract type.
    """
    s = text.strip()
    m = _ARRAY.match(s)
    if m:
        if m.group("code") not in _DTYPES:
            raise ValueError(f"unknown dtype code {m.group('code')!r} in {text!r} (known: {', '.join(sorted(_DTYPES))})")
        if int(m.group("ndim")) <= 1 and m.group("layout"):
            raise ValueError(f"{text!r}: 0-d and 1-d arrays have no layout flag")
        return s
    if s in _DTYPES or s in _SCALARS.values():
        return s
    if re.match(r"^(tuple|list)\(.*\)$|^dict\{.*\}$|^(fn|obj|type)\(.+\)$", s):
        return s
    raise ValueError(
        f"unknown type descriptor {text!r}: use a concrete type such as 'f64[2d]', 'f32[1d]', 'f64[2d,F]', "
        "'f64[2d,strided]', 'f64', 'float', 'int' (see docs/descriptors.md)"
    )
