"""Concrete-type descriptors: the one place that says how a value's type is spelled, and reads
it back (docs/descriptors.md).

=====================  ===========================================================
``f64[2d]``            float64 ndarray, 2-d, C-contiguous (1-d and 0-d are always plain)
``f64[2d,F]``          float64 ndarray, 2-d, Fortran-contiguous and not C-contiguous
``f64[2d,strided]``    float64 ndarray, 2-d, neither (a non-contiguous view, e.g. ``x[:20, :20]``)
``f32[1d]``            float32 ndarray (likewise ``f16``, ``c128``, ``i64``, ``u8``, ``b`` ...)
``f64``                NumPy scalar (``np.float64(1.0)``, what ``x[i]`` gives)
``float`` ``int``      Python scalars (``bool``, ``complex``, ``str``, ``bytes``, ``None`` likewise)
``tuple(int, int)``    tuples and lists list their items; ``list(f64[1d]*100)`` for long uniform ones
``dict{a: f64[1d]}``   dicts list keys (an identifier as is, a literal by repr, others by type)
``fn(pkg.mod.f)``      callables by qualified name; other objects as ``obj(pkg.mod.Class)``
=====================  ===========================================================

A traced value is described by the value it stands for: tracing does not change a descriptor.
Shapes are not part of a descriptor, only the number of dimensions and the memory layout (as
Julia's ``Matrix{Float64}`` vs a ``SubArray``), so a rule for ``f64[2d]`` serves every size.
Text read back (from a profile, which is untrusted data) goes through the strict grammar of
``parse_type``: anything ``describe`` cannot write is refused with a one-line ValueError.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
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
    # The profiler describes every call's arguments: the common cases (an array, a tracer of
    # one, a Python scalar) take one type lookup and a cached text, no isinstance chain.
    t = type(x)
    if t in _TRACERS or (t not in _SCALARS and t is not ndarray and isinstance(x, Tracer)):
        x = x.value
        t = type(x)
    text = _FIXED.get(t)
    if text is not None:
        return text
    if t is ndarray or isinstance(x, ndarray):
        nd = x.ndim
        key = (x.dtype, nd, True, False) if nd <= 1 else (x.dtype, nd, x.flags.c_contiguous, x.flags.f_contiguous)
        text = _ARRAYS.get(key)
        return text if text is not None else remember(_ARRAYS, key, _array_text(*key))
    if isinstance(x, np.generic):
        text = dtype_code(x.dtype)
        # one code per type for the numeric kinds (not so for str_, datetime64: their dtypes vary)
        return remember(_FIXED, t, text) if x.dtype.kind in "fciub" else text
    if t is tuple or t is list:
        parts = [describe(v) for v in x]
        if len(parts) > _MAX_ITEMS:
            return f"{t.__name__}({_items(parts)})"
        key = (t, *parts)  # short ones cached by their parts, as dicts
        text = _SEQUENCES.get(key)
        return text if text is not None else remember(_SEQUENCES, key, f"{t.__name__}({_items(parts)})")
    if t is dict:  # the text cached by its parts: a program passes the same dict of parameters to every call
        parts = tuple([(_key(k), describe(val)) for k, val in x.items()])
        text = _DICTS.get(parts)
        return text if text is not None else remember(_DICTS, parts, "dict{" + ", ".join(f"{k}: {d}" for k, d in parts) + "}")
    if isinstance(x, (FunctionType, BuiltinFunctionType, MethodType, np.ufunc)) or (callable(x) and not isinstance(x, type)):
        return f"fn({_dotted(x)})"
    if isinstance(x, type):
        return f"type({_dotted(x)})"
    if isinstance(x, tuple):  # namedtuple
        return f"{_dotted(t)}({_items([describe(v) for v in x])})"
    if getattr(t, "_adcli_fill", False):  # an array made by np.zeros & co. (engine.fills): what it stands for
        return describe(x.now())
    return f"obj({_dotted(t)})"


def remember(table: dict, key, text):
    """``text`` (a descriptor, or a tuple of them), kept in ``table`` under ``key`` while the
    table is under 4096 entries (the descriptor caches: bounded whatever a program passes)."""
    if len(table) < 4096:
        table[key] = text
    return text


ndarray = np.ndarray
_FIXED = dict(_SCALARS)  # types whose every value has the same descriptor: Python's scalars, NumPy's numeric ones
_TRACERS = frozenset({Tracer, *Tracer.__subclasses__()})  # the engine's own; a subclass made later takes isinstance


_ARRAYS: dict = {}


def _array_text(dtype, nd: int, c_contiguous: bool, f_contiguous: bool) -> str:
    code = dtype_code(dtype)
    if c_contiguous:
        return f"{code}[{nd}d]"
    if f_contiguous:
        return f"{code}[{nd}d,F]"
    return f"{code}[{nd}d,strided]"


def _items(parts: list) -> str:
    """A sequence's item descriptors joined: ``f64[1d]*4`` for a long uniform one."""
    if len(parts) > 3 and len(set(parts)) == 1:
        return f"{parts[0]}*{len(parts)}"
    if len(parts) > _MAX_ITEMS:
        return ", ".join(parts[:_MAX_ITEMS]) + f", ...{len(parts) - _MAX_ITEMS} more"
    return ", ".join(parts)


_KEYS: dict = {}
_DICTS: dict = {}
_SEQUENCES: dict = {}
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NAME_PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|<[a-z]+>|\?")


def _key(k) -> str:
    """A dict key: an identifier as is, a literal (str, number, bool, None) by repr, any other
    key by its type, ``<module.Type>`` (a repr could be anything)."""
    if type(k) is str:  # the usual key: its text cached (a pattern match per key per call adds up)
        text = _KEYS.get(k)
        return text if text is not None else remember(_KEYS, k, k if IDENT.fullmatch(k) else repr(k))
    if isinstance(k, str) and IDENT.fullmatch(k):
        return k
    if type(k) in (str, int, float, bool) or k is None:
        return repr(k)
    return f"<{_dotted(type(k))}>"


def _dotted(obj) -> str:
    """``module.qualname`` of a callable or class, checked against the name grammar (a name
    that does not fit, e.g. one made up at run time, is replaced part by part with ``?``)."""
    module, qualname = callable_name(obj)
    return ".".join(p if NAME_PART.fullmatch(p) else "?" for p in f"{module}.{qualname}".split("."))


def callable_name(func) -> tuple[str, str]:
    """``(module, qualname)`` of a callable; NumPy's in their public spelling
    (``numpy._core.fromnumeric.sum`` -> ``("numpy", "sum")``, ufuncs -> ``("numpy", name)``)."""
    if isinstance(func, np.ufunc):
        return "numpy", func.__name__
    name = getattr(func, "__name__", None) or type(func).__name__
    module = getattr(func, "__module__", None) or "?"
    if module == "numpy" or module.startswith("numpy."):
        public = "numpy"
        for sub in ("numpy.linalg", "numpy.fft", "numpy.random"):
            if module.startswith(sub):
                public = sub
        if isinstance(func, type):
            return public, getattr(func, "__qualname__", name)
        return public, name
    return module, getattr(func, "__qualname__", None) or name



_DTYPES = {"f16", "f32", "f64", "f128", "c64", "c128", "c256", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "b"}
# dtype codes dtype_code writes: f64, c128, i8, u16, b; O, U5, S3, V8; M8[ns], m8[s]
_CODE = re.compile(r"(?:[fciu]\d+|b|O|[USV]\d+|[Mm]8(?:\[[A-Za-z]+\])?)(?![A-Za-z0-9_])")
_ARRAY_TAIL = re.compile(r"\[(\d+)d(?:,(F|strided))?\]")
_LITERAL_KEY = re.compile(r"'(?:[^'\\\x00-\x1f\x7f]|\\[^\x00-\x1f\x7f])*'|\"(?:[^\"\\\x00-\x1f\x7f]|\\[^\x00-\x1f\x7f])*\""
                          r"|-?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan)|True|False|None")
_CONTAINERS = {"tuple", "list"}
_REFS = {"fn", "obj", "type"}


@dataclass(frozen=True)
class ArrayType:
    """What an array descriptor says: dtype code, number of dimensions, layout."""

    code: str
    ndim: int
    layout: str  # "C" (or 0-d / 1-d), "F" or "strided"

    @property
    def dtype(self) -> np.dtype | None:
        """The NumPy dtype of a known numeric code, else None."""
        if self.code == "b":
            return np.dtype(bool)
        if self.code in _DTYPES:
            kind, bits = self.code[0], int(self.code[1:])
            return np.dtype(f"{kind}{bits // 8}") if kind != "f" or bits != 128 else np.dtype(np.longdouble)
        return None


def array_type(desc: str) -> ArrayType | None:
    """The array a descriptor names (``f64[2d,F]`` -> ArrayType("f64", 2, "F")), or None."""
    m = _CODE.match(desc)
    if m is None:
        return None
    t = _ARRAY_TAIL.fullmatch(desc, m.end())
    if t is None:
        return None
    return ArrayType(m.group(0), int(t.group(1)), t.group(2) or "C")


def is_float(desc: str) -> bool:
    """A float array, NumPy float scalar or Python float."""
    if desc == "float":
        return True
    a = array_type(desc)
    code = a.code if a is not None else desc
    return code in ("f16", "f32", "f64", "f128")


def shown(text: str, limit: int = 80) -> str:
    """``text`` for an error message: repr'd (no control character reaches a terminal), cut."""
    r = repr(text)
    return r if len(r) <= limit else r[: limit - 4] + "...'"


class Parser:
    """Recursive descent over the descriptor grammar; builds the normalised text."""

    def __init__(self, text: str, i: int = 0):
        self.text, self.i = text, i

    def fail(self, why: str):
        raise ValueError(f"malformed type {shown(self.text)} at position {self.i}: {why}")

    def skip(self) -> None:
        while self.i < len(self.text) and self.text[self.i] == " ":
            self.i += 1

    def peek(self) -> str:
        self.skip()
        return self.text[self.i: self.i + 1]

    def take(self, s: str) -> bool:
        self.skip()
        if self.text.startswith(s, self.i):
            self.i += len(s)
            return True
        return False

    def expect(self, s: str) -> None:
        if not self.take(s):
            self.fail(f"expected {s!r}")

    def name(self) -> str:
        self.skip()
        m = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*|<[a-z]+>|\?)(?:\.(?:[A-Za-z_][A-Za-z0-9_]*|<[a-z]+>|\?))*").match(
            self.text, self.i)
        if m is None:
            self.fail("expected a dotted name")
        self.i = m.end()
        return m.group(0)

    def descriptor(self) -> str:
        self.skip()
        text, i = self.text, self.i
        if text.startswith("dict{", i):
            self.i += 5
            entries = []
            if self.peek() != "}":
                while True:
                    key = self.key()
                    self.expect(":")
                    entries.append(f"{key}: {self.descriptor()}")
                    if not self.take(","):
                        break
            self.expect("}")
            return "dict{" + ", ".join(entries) + "}"
        name = self.name()
        if name in _REFS and self.peek() == "(":
            self.expect("(")
            ref = self.name()
            self.expect(")")
            return f"{name}({ref})"
        if name in _CONTAINERS or "." in name:  # tuple(...), list(...), a namedtuple pkg.Point(...)
            if not (name in _CONTAINERS or IDENT.fullmatch(name.rsplit(".", 1)[-1])):
                self.fail("bad container name")
            self.expect("(")
            items = self.items()
            self.expect(")")
            return f"{name}({items})"
        self.i = i
        m = _CODE.match(text, i)
        if m is not None:
            t = _ARRAY_TAIL.match(text, m.end())
            if t is not None:
                if int(t.group(1)) <= 1 and t.group(2):
                    self.fail("0-d and 1-d arrays have no layout flag")
                self.i = t.end()
                return text[i: self.i]
            self.i = m.end()
            return m.group(0)
        if name in _SCALARS.values():
            self.i = i + len(name)
            return name
        self.fail("expected a type descriptor")

    def items(self) -> str:
        if self.peek() == ")":
            return ""
        parts = [self.descriptor()]
        if self.take("*"):
            m = re.compile(r"\s*(\d+)").match(self.text, self.i)
            if m is None:
                self.fail("expected a count after '*'")
            self.i = m.end()
            return f"{parts[0]}*{m.group(1)}"
        while self.take(","):
            m = re.compile(r"\s*\.\.\.(\d+) more").match(self.text, self.i)
            if m is not None:
                self.i = m.end()
                return ", ".join(parts) + f", ...{m.group(1)} more"
            parts.append(self.descriptor())
        return ", ".join(parts)

    def key(self) -> str:
        self.skip()
        m = _LITERAL_KEY.match(self.text, self.i)
        if m is not None and not _is_repr(m.group(0)):
            self.fail("a dict key must be written as repr() writes it")
        if m is None:
            m = _TYPE_KEY.match(self.text, self.i) or IDENT.match(self.text, self.i)
        if m is None:
            self.fail("expected a dict key")
        self.i = m.end()
        return m.group(0)


_TYPE_KEY = re.compile(r"<[A-Za-z0-9_.?<>]+?>(?=\s*:)")


def _is_repr(token: str) -> bool:
    """``token`` is exactly what ``repr`` writes for the literal it stands for (so it holds no
    raw control character, surrogate or alternative spelling)."""
    if token in ("inf", "-inf", "nan"):
        return True
    try:
        return repr(ast.literal_eval(token)) == token
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False


def parse_type(text: str) -> str:
    """Any descriptor ``describe`` can write, normalised; ValueError for anything else."""
    if not isinstance(text, str):
        raise ValueError(f"a type descriptor is text, not {type(text).__name__}")
    p = Parser(text)
    out = p.descriptor()
    p.skip()
    if p.i != len(text):
        p.fail("unexpected text after the type")
    return out


_DECLARED_ARRAY = re.compile(r"^(?P<code>[a-zA-Z]+\d*)\[(?P<ndim>\d+)d(?:,(?P<layout>F|strided))?\]$")


def parse_descriptor(text: str) -> str:
    """Validate a descriptor a *rule declaration* uses and return it normalised (spaces
    stripped): concrete types only, numeric dtype codes from the known list.

    Raises ValueError with a one-line reason for an unknown or abstract type.
    """
    s = text.strip()
    m = _DECLARED_ARRAY.match(s)  # looser than the grammar: a misspelt code gets its own message
    if m:
        if m.group("code") not in _DTYPES:
            raise ValueError(f"unknown dtype code {m.group('code')!r} in {text!r} (known: {', '.join(sorted(_DTYPES))})")
        if int(m.group("ndim")) <= 1 and m.group("layout"):
            raise ValueError(f"{text!r}: 0-d and 1-d arrays have no layout flag")
        return s
    if s in _DTYPES or s in _SCALARS.values():
        return s
    if re.match(r"^(tuple|list)\(.*\)$|^dict\{.*\}$|^(fn|obj|type)\(.+\)$", s):
        try:
            return parse_type(s)
        except ValueError:
            pass
    raise ValueError(
        f"unknown type descriptor {text!r}: use a concrete type such as 'f64[2d]', 'f32[1d]', 'f64[2d,F]', "
        "'f64[2d,strided]', 'f64', 'float', 'int' (see docs/descriptors.md)"
    )
