"""Concrete-type descriptors: describe() and parse_descriptor() (docs/descriptors.md)."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import adcli
from adcli.engine.descriptors import array_type, describe, parse_descriptor, parse_type
from adcli.engine.signature import Signature, call_signature, signature_key

Point = collections.namedtuple("Point", ["x", "y"])


def user_function(a):
    return a


class Widget:
    def method(self):
        return 1


BIG = np.zeros((40, 30))

DESCRIBE = [
    # arrays: dtype code, number of dimensions, layout for 2-d and more
    (np.zeros((3, 4)), "f64[2d]"),
    (np.zeros((3, 4)).T, "f64[2d,F]"),
    (np.asfortranarray(np.zeros((3, 4))), "f64[2d,F]"),
    (BIG[:20, :20], "f64[2d,strided]"),
    (BIG[::2], "f64[2d,strided]"),
    (BIG[:, ::3], "f64[2d,strided]"),
    (BIG[5:9], "f64[2d]"),  # a block of whole rows is still C-contiguous
    (np.zeros((2, 3, 4)), "f64[3d]"),
    (np.zeros((2, 3, 4)).transpose(2, 1, 0), "f64[3d,F]"),
    (np.zeros((2, 3, 4)).transpose(0, 2, 1), "f64[3d,strided]"),
    (np.zeros(5), "f64[1d]"),
    (np.zeros(10)[::2], "f64[1d]"),  # 1-d strided is still plain 1-d, by design
    (np.zeros(10)[::-1], "f64[1d]"),
    (BIG[:, 3], "f64[1d]"),
    (np.zeros(()), "f64[0d]"),
    (np.zeros(3, np.float32), "f32[1d]"),
    (np.zeros((2, 2), np.float32), "f32[2d]"),
    (np.zeros(3, np.float16), "f16[1d]"),
    (np.zeros(3, np.complex128), "c128[1d]"),
    (np.zeros(3, np.complex64), "c64[1d]"),
    (np.zeros(3, np.int64), "i64[1d]"),
    (np.zeros(3, np.int32), "i32[1d]"),
    (np.zeros(3, np.uint8), "u8[1d]"),
    (np.zeros((2, 2), bool), "b[2d]"),
    # NumPy scalars
    (np.float64(1.0), "f64"),
    (np.float32(1.0), "f32"),
    (np.int64(3), "i64"),
    (np.bool_(True), "b"),
    (np.complex128(1j), "c128"),
    # Python scalars
    (1.5, "float"),
    (3, "int"),
    (True, "bool"),
    (False, "bool"),
    (None, "None"),
    ("abc", "str"),
    (b"abc", "bytes"),
    (2j, "complex"),
    # containers
    ((1, 2), "tuple(int, int)"),
    ((), "tuple()"),
    ([np.zeros(2), 1.0], "list(f64[1d], float)"),
    ([np.zeros(2)] * 3, "list(f64[1d], f64[1d], f64[1d])"),
    ([np.zeros(2)] * 4, "list(f64[1d]*4)"),
    ([np.zeros(2)] * 100, "list(f64[1d]*100)"),
    ((1.0,) * 5, "tuple(float*5)"),
    ([], "list()"),
    ({"W1": np.zeros((2, 2)), "b1": np.zeros(2)}, "dict{W1: f64[2d], b1: f64[1d]}"),
    ({"a b": 1, 3: None}, "dict{'a b': int, 3: None}"),
    ({}, "dict{}"),
    ({"outer": {"inner": [1, 2.0]}}, "dict{outer: dict{inner: list(int, float)}}"),
    ((np.zeros((2, 2)).T, (1, "s")), "tuple(f64[2d,F], tuple(int, str))"),
    # non-native byte order, an ndarray subclass, a str subclass as a key (the cached fast paths)
    (np.zeros(3, ">f8"), "f64[1d]"),
    (np.zeros((2, 2), "<f4").T, "f32[2d,F]"),
    (np.ma.zeros((2, 2)), "f64[2d]"),
    (np.zeros(3, "U5"), "U5[1d]"),
    (np.datetime64("2020-01-01"), "M8[D]"),  # NumPy scalar types whose dtype varies are not cached by type
    (np.datetime64(1, "ns"), "M8[ns]"),
    ({type("Key", (str,), {})("xy"): 1}, "dict{xy: int}"),
    # callables and other objects
    (np.sin, "fn(numpy.sin)"),
    (np.add, "fn(numpy.add)"),
]


@pytest.mark.parametrize("value,expected", DESCRIBE, ids=[d[1] + f"-{i}" for i, d in enumerate(DESCRIBE)])
def test_describe(value, expected):
    assert describe(value) == expected
    assert describe(value) == expected  # again: from the caches the first call filled


def test_describe_long_mixed_list_is_truncated():
    items = [1, 2.0, "s", None, 1, 2.0, "s", None, 1, 2.0]
    d = describe(items)
    assert d.startswith("list(int, float, str, None, int, float, str, None")
    assert "2 more" in d
    assert len(d) < 80


def test_describe_user_function():
    assert describe(user_function) == f"fn({user_function.__module__}.user_function)"


def test_describe_lambda_and_method_and_class_and_object():
    lam = lambda: None  # noqa: E731
    assert describe(lam) == f"fn({__name__}.test_describe_lambda_and_method_and_class_and_object.<locals>.<lambda>)"
    assert describe(Widget().method) == f"fn({__name__}.Widget.method)"
    assert describe(Widget) == f"type({__name__}.Widget)"
    assert describe(object()) == "obj(builtins.object)"
    assert describe(np.dtype("f8")).startswith("obj(numpy.")


def test_describe_numpy_function():
    assert describe(np.linalg.solve) == f"fn({np.linalg.solve.__module__}.solve)"
    assert describe(len) == "fn(builtins.len)"


def test_describe_namedtuple():
    assert describe(Point(1.0, np.zeros(3))) == f"{__name__}.Point(float, f64[1d])"


def test_describe_is_independent_of_shape_and_values():
    assert describe(np.zeros((2, 3))) == describe(np.ones((50, 7)))
    assert describe(np.zeros(1)) == describe(np.zeros(1000))
    assert describe(np.float64(0.0)) == describe(np.float64(np.nan))


# --- tracers are described like their values -------------------------------------------------

TRACED = [
    (np.zeros((3, 4)), lambda x: x, "f64[2d]"),
    (np.zeros((3, 4)), lambda x: x.T, "f64[2d,F]"),
    (np.zeros((40, 30)), lambda x: x[:20, :20], "f64[2d,strided]"),
    (np.zeros(6), lambda x: x[::2], "f64[1d]"),
    (np.zeros(6), lambda x: x[0], "f64"),
    (np.zeros(6, np.float32), lambda x: x, "f32[1d]"),
    (np.zeros(6, np.float32), lambda x: x[1], "f32"),
    (np.zeros(6), lambda x: np.sum(x), "f64"),
    (np.zeros(6), lambda x: np.sum(x, keepdims=True).reshape(()), "f64[0d]"),
    (1.5, lambda x: x, "float"),
    (np.float64(1.5), lambda x: x, "f64"),
    (np.zeros(6), lambda x: [x, x[0]], "list(f64[1d], f64)"),
    (np.zeros(6), lambda x: {"p": x.reshape(2, 3)}, "dict{p: f64[2d]}"),
]


@pytest.mark.parametrize("arg,make,expected", TRACED, ids=[t[2] + f"-{i}" for i, t in enumerate(TRACED)])
def test_tracer_is_described_like_its_value(arg, make, expected):
    seen = {}

    def f(x):
        v = make(x)
        seen["traced"] = describe(v)
        seen["plain"] = describe(adcli.stop_gradient(v))
        return np.sum(x) * 1.0

    adcli.grad(f)(arg)
    assert seen["traced"] == expected
    assert seen["plain"] == expected


def test_signature_key_and_call_signature():
    args = (np.zeros((2, 2)), np.zeros(3).reshape(3, 1).T)
    kwargs = {"b_flag": True, "axis": 1}
    assert signature_key(args, kwargs) == ("f64[2d]", "f64[2d]", "axis=int", "b_flag=bool")
    assert call_signature(args, kwargs) == "f64[2d], f64[2d], axis=int, b_flag=bool"
    assert call_signature((BIG[:20, :20], 2.0), {}) == "f64[2d,strided], float"
    assert call_signature((), {}) == ""
    # keywords sorted by name whatever order they came in (and from the cache the first call filled)
    for _ in range(2):
        assert signature_key((), {"a1": 1, "a": 2.0}) == ("a=float", "a1=int")
        assert signature_key((), {"a": 2.0, "a1": 1}) == ("a=float", "a1=int")
        assert signature_key((), {"a": 2, "a1": 1.0}) == ("a=int", "a1=float")


def test_signature_key_is_hashable_and_distinguishes_layouts():
    k1 = signature_key((np.zeros((2, 2)),), {})
    k2 = signature_key((np.zeros((2, 3)).T,), {})
    assert k1 != k2
    assert {k1: 1}[signature_key((np.ones((9, 9)),), {})] == 1


# --- parse_descriptor --------------------------------------------------------------------------

VALID = [
    "f64[2d]", "f64[2d,F]", "f64[2d,strided]", "f64[3d,F]", "f32[1d]", "f64[0d]", "f16[4d]", "c128[1d]",
    "c64[2d,strided]", "i64[1d]", "i32[2d]", "u8[1d]", "b[2d]", "f64", "f32", "i64", "b", "c128",
    "float", "int", "bool", "complex", "str", "bytes", "None",
    "tuple(int, int)", "tuple()", "list(f64[1d]*100)", "list(f64[1d], float)", "dict{W1: f64[2d], b1: f64[1d]}",
    "fn(numpy.sin)", "fn(pkg.mod.f)", "obj(pkg.mod.Class)", "type(pkg.mod.Class)",
]


@pytest.mark.parametrize("text", VALID)
def test_parse_valid(text):
    assert parse_descriptor(text) == text


@pytest.mark.parametrize("text", ["  f64[2d]  ", "\tfloat\n", " fn(numpy.sin) "])
def test_parse_strips_whitespace(text):
    assert parse_descriptor(text) == text.strip()


@pytest.mark.parametrize(
    "text,word",
    [
        ("f63[1d]", "f63"),
        ("float64[2d]", "float64"),
        ("x64[1d]", "x64"),
        ("i128[1d]", "i128"),
        ("F64[1d]", "F64"),
    ],
)
def test_parse_unknown_dtype_code(text, word):
    with pytest.raises(ValueError) as info:
        parse_descriptor(text)
    msg = str(info.value)
    assert word in msg
    assert "f64" in msg  # lists the known codes


@pytest.mark.parametrize(
    "text",
    [
        "array", "ndarray", "Array", "float-like", "number", "Any", "object", "f64[]", "f64[d]", "f64[2]",
        "f64[2d,C]", "f64[2d,f]", "f64[1d,F]", "f64[0d,strided]", "f64[1d,strided]", "", "   ", "f64 [2d]",
        "f64[2d]x", "fn()", "tuple", "dict", "list[int]", "int64", "float32", "np.float64", "double",
    ],
)
def test_parse_rejects_abstract_or_malformed(text):
    with pytest.raises(ValueError):
        parse_descriptor(text)


ROUND_TRIP = [
    np.zeros((3, 4)), np.zeros((3, 4)).T, BIG[:20, :20], np.zeros(3, np.float32), np.zeros(()), np.zeros(4, bool),
    np.zeros(2, np.uint16), np.zeros(2, np.complex64), np.float64(1.0), np.float32(2.0), np.int32(1), np.bool_(False),
    1.0, 2, True, None, "s", b"b", 1j, (1, 2.0), [np.zeros(2)] * 5, {"a": np.zeros(2), "b": [1, 2]}, np.sin,
    user_function, Widget, Widget(),
]


@pytest.mark.parametrize("value", ROUND_TRIP, ids=[describe(v) for v in ROUND_TRIP])
def test_parse_accepts_everything_describe_produces(value):
    d = describe(value)
    assert parse_descriptor(d) == d


# --- Signature: one __str__, one parse ---------------------------------------------------------

SIGNATURES = [
    Signature("numpy", "kron", ("f64[2d,strided]", "f64[2d]")),
    Signature("numpy", "sum", ("f64[2d]",), (("axis", "int"), ("keepdims", "bool"))),
    Signature("numpy.linalg", "solve", ("f64[2d]", "f64[1d]")),
    Signature("__main__", "lml", ("dict{W1: f64[2d], 'a b': list(f64[1d]*100)}",)),
    Signature("pkg.mod", "Model.loss", ("obj(pkg.mod.Model)", "f64[1d]")),
    Signature("pkg.mod", "make.<locals>.loss", ("tuple(int, float, ...3 more)",)),
    Signature("scipy.special", "gammaln", ("f32[1d]",)),
    Signature("m", "f", ()),
    Signature("m", "f", (), (("x", "f64"),)),
    Signature("m", "f", ("M8[ns][1d]", "U5[2d]", "fn(numpy.sin)", "type(builtins.int)", "m.Point(float, f64[1d])")),
]


@pytest.mark.parametrize("sig", SIGNATURES, ids=str)
def test_signature_round_trips_through_its_text(sig):
    assert Signature.parse(str(sig)) == sig


def test_signature_text_and_parts():
    sig = Signature("numpy", "sum", ("f64[2d]",), (("axis", "int"),))
    assert str(sig) == "numpy.sum(f64[2d], axis=int)"
    assert sig.function == "numpy.sum" and sig.target == "numpy:sum" and sig.key == ("f64[2d]", "axis=int")
    assert sig.is_numpy and not Signature("__main__", "f").is_numpy
    # a dotted qualname is marked with ':' so the module boundary is never guessed
    assert str(Signature("pkg.mod", "Model.loss", ("f64[1d]",))) == "pkg.mod:Model.loss(f64[1d])"
    assert Signature.parse("pkg.mod.loss(f64[1d])") == Signature("pkg.mod", "loss", ("f64[1d]",))


def test_signature_of_call_and_from_key_agree_with_signature_key():
    args, kwargs = (np.zeros((2, 2)).T, 1.0), {"b": True, "a": 1}
    sig = Signature.of_call("numpy", "f", args, kwargs)
    assert sig.key == signature_key(args, kwargs)
    assert Signature.from_key("numpy", "f", signature_key(args, kwargs)) == sig


def test_signature_of_every_described_value_parses():
    for value in ROUND_TRIP + [v for v, _ in DESCRIBE]:
        sig = Signature.of_call("m", "f", (value,), {"k": value})
        assert Signature.parse(str(sig)) == sig


@pytest.mark.parametrize("text", [
    "numpy.kron(f64[2d]", "numpy.kron f64[2d])", "kron(f64[2d])", "numpy.kron(f64[2d]))", "numpy.kron(f64[2d]\n)",
    "numpy.kron(f64[2d])\nimport os", "numpy.kron(\x1b[31mf64[2d])", "numpy.kron([/]f64[2d])", "numpy.kron(x[/])",
    "numpy.kron(W[in])", "__main__.f(dict{'a\nb': int})", "__main__.f(b=int, a=int)", "__main__.f(a=int, f64)",
    "a b.f(int)", "os.system('x')(int)", "m.f(obj(a b))", "", "m.f(f64[1d,F])", "m.f(list(int*))", "m.f(int, )",
])
def test_signature_parse_refuses_anything_else(text):
    with pytest.raises(ValueError) as info:
        Signature.parse(text)
    assert "\n" not in str(info.value) and "\x1b" not in str(info.value)


def test_dict_keys_that_are_not_literals_are_described_by_type():
    class K:
        def __repr__(self):
            return "[/]\x1b]8;;x\x07\nboom"

    d = describe({K(): 1.0, (1, 2): 2.0})
    assert "\n" not in d and "\x1b" not in d and "[/]" not in d
    assert parse_type(d) == d


def test_array_type():
    assert array_type("f64[2d,F]").layout == "F" and array_type("f64[2d,F]").ndim == 2
    assert array_type("f32[1d]").dtype == np.float32 and array_type("b[0d]").dtype == np.bool_
    assert array_type("f64") is None and array_type("list(f64[1d])") is None
