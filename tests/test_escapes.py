"""Every route by which a traced value could silently drop out of the gradient raises a clear
error naming the operation and the user's file:line; stop_gradient is the explicit way out."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import adcli
from adcli.engine.core import Tracer
from adcli.errors import AdcliError, NoRuleError, TracingError, UnsupportedError
from adcli.testing import check_grad

_HELD = {"array": np.array, "full": np.full}  # NumPy's own function held in a dict, out of the rebinding's reach

THIS_FILE = "test_escapes.py"
X = np.array([0.5, 1.5, 2.5])


def raises_here(f, exc, *words, x=None):
    """Run grad(f) and check the error: its class, the words naming the operation, and this
    file's name with the line of the offending statement."""
    x = X.copy() if x is None else x
    with pytest.raises(exc) as info:
        adcli.grad(f)(x)
    msg = str(info.value)
    assert THIS_FILE in msg, f"no file:line in: {msg}"
    m = re.search(re.escape(THIS_FILE) + r":(\d+)", msg)
    assert m, f"no line number in: {msg}"
    line = int(m.group(1))
    src = open(__file__).read().splitlines()[line - 1]
    for w in words:
        assert w in msg, f"{w!r} not in: {msg}"
    np.testing.assert_array_equal(x, X)  # the caller's array is untouched
    return msg, src


ESCAPES = {
    "float()": (lambda x: float(x[0]), TracingError, ["float()"], "float(x[0])"),
    "float() of 0-d": (lambda x: float(np.sum(x)), TracingError, ["float()"], "float(np.sum(x))"),
    "int()": (lambda x: int(x[1]), TracingError, ["int()"], "int(x[1])"),
    "complex()": (lambda x: complex(x[1]), TracingError, ["complex()"], "complex(x[1])"),
    "math.sin(x)": (lambda x: math.sin(x), TracingError, [], "math.sin(x)"),
    "math.exp(x[0])": (lambda x: math.exp(x[0]), TracingError, ["float()"], "math.exp(x[0])"),
    "math.sqrt(sum)": (lambda x: math.sqrt(np.sum(x)), TracingError, ["float()"], "math.sqrt(np.sum(x))"),
    ".item()": (lambda x: x.item(0), TracingError, [".item()"], "x.item(0)"),
    "scalar .item()": (lambda x: x[0].item(), TracingError, [".item()"], "x[0].item()"),
    ".tolist()": (lambda x: sum(x.tolist()), TracingError, [".tolist()"], "x.tolist()"),
    # np.asarray(x) / np.array(x) of a traced value keep it traced (tests/test_lists.py)
    # np.array([...]) of traced values works (tests/test_lists.py), through names bound to it in the
    # program's globals too (tests/test_hidden_tracers.py), but not through NumPy's own function held
    # elsewhere (an attribute, a dict, a default argument)
    "captured np.array of list": (
        lambda x: np.sum(_HELD["array"]([x[0], x[1]])), TracingError, ["np.array"], '_HELD["array"]([x[0], x[1]])'
    ),
    "np.float64(x)": (lambda x: np.float64(x[0]), TracingError, [], "np.float64(x[0])"),
    "np.float64(np.sum)": (lambda x: np.float64(np.sum(x)), TracingError, [], "np.float64(np.sum(x))"),
}


@pytest.mark.parametrize("name", list(ESCAPES))
def test_escape_raises_tracing_error(name):
    f, exc, words, code = ESCAPES[name]
    msg, src = raises_here(f, exc, *words)
    assert code in src, f"the message points at {src!r}, not at the offending line"
    # the source line itself is quoted too
    assert code in msg


def test_writing_traced_scalar_into_plain_array():
    def f(x):
        plain = np.zeros(3) + 0.0  # computed, not a constructor's own
        seen = [plain]  # noqa: F841  (held elsewhere too: NumPy would change what the list holds)
        plain[0] = x[0]
        return np.sum(plain)

    msg, src = raises_here(f, TracingError)
    assert "plain[0] = x[0]" in src


def test_writing_traced_array_into_plain_array():
    def f(x):
        plain = np.zeros((2, 3)) + 0.0
        seen = [plain]  # noqa: F841  (held elsewhere: no rebinding)
        plain[1] = x * 2.0
        return np.sum(plain)

    msg, src = raises_here(f, TracingError)
    assert "plain[1] = x * 2.0" in src


def test_writing_traced_0d_into_plain_array():
    def f(x):
        plain = np.zeros(3) + 0.0
        seen = [plain]  # noqa: F841  (held elsewhere: no rebinding)
        plain[2] = np.sum(x)
        return np.sum(plain)

    msg, src = raises_here(f, TracingError)
    assert "plain[2] = np.sum(x)" in src


@pytest.mark.parametrize(
    "f",
    [
        lambda x: np.sum(_HELD["full"](3, x[0])),  # NumPy's own np.full (a traced fill: tests/test_fills.py)
        lambda x: np.sum(np.copyto(np.zeros(3) + 0.0, x)),  # into a computed array, not a constructor's
    ],
    ids=["np.full-held", "np.copyto"],
)
def test_constructors_fed_a_traced_value(f):
    with pytest.raises((TracingError, NoRuleError)) as info:
        adcli.grad(f)(X.copy())
    assert THIS_FILE in str(info.value)


def test_writing_traced_array_into_plain_slice():
    def f(x):
        plain = np.zeros(5) + 0.0
        seen = [plain]  # noqa: F841  (held elsewhere: no rebinding)
        plain[1:4] = x
        return np.sum(plain)

    msg, src = raises_here(f, TracingError)
    assert "plain[1:4] = x" in src


def test_round_of_traced_scalar():
    # round() gives an integer (zero derivative, like np.floor): either a plain result, or a clear
    # error at the user's line -- not a bare "type Tracer doesn't define __round__".
    def f(x):
        return round(x[1]) * x[0]

    try:
        v, g = adcli.value_and_grad(f)(X.copy())
    except AdcliError as e:
        assert THIS_FILE in str(e)
    else:
        assert v == 2.0 * 0.5
        np.testing.assert_array_equal(g, [2.0, 0.0, 0.0])


def test_plain_inplace_operator_with_traced_operand():
    # plain += traced where another name sees the plain array: NumPy would write the traced numbers
    # into it through out=, which that name would keep (alone, the name is rebound: test_hidden_tracers)
    def f(x):
        plain = np.ones(3) + 0.0
        alias = plain  # noqa: F841
        plain += x
        return np.sum(plain)

    with pytest.raises(AdcliError) as info:
        adcli.grad(f)(X.copy())
    assert THIS_FILE in str(info.value)

    def lone(x):
        plain = np.ones(3)
        plain += x
        return np.sum(plain * x)

    np.testing.assert_allclose(adcli.grad(lone)(X.copy()), 1.0 + 2.0 * X)


# --- functions without a rule ----------------------------------------------------------------

NO_RULE = {
    "fft": (lambda x: np.sum(np.abs(np.fft.fft(x))), "numpy.fft.fft(f64[1d]"),
    "lstsq": (lambda x: np.sum(np.linalg.lstsq(np.eye(3), x)[0]), "numpy.linalg.lstsq(f64[2d], f64[1d]"),
    "convolve": (lambda x: np.sum(np.convolve(x, np.ones(2))), "numpy.convolve(f64[1d], f64[1d]"),
    "interp": (
        lambda x: np.sum(np.interp(x, np.arange(3.0), np.arange(3.0))), "numpy.interp(f64[1d], f64[1d], f64[1d]"
    ),
}


@pytest.mark.parametrize("name", list(NO_RULE))
def test_unsupported_numpy_function_raises_no_rule_error(name):
    f, sig = NO_RULE[name]
    msg, _ = raises_here(f, NoRuleError)
    assert sig in msg


def test_no_rule_error_names_2d_and_keyword_arguments():
    msg, _ = raises_here(lambda x: np.sum(np.fft.fft2(x.reshape(1, 3), axes=(0, 1))), NoRuleError, x=X.copy())
    assert "numpy.fft.fft2(f64[2d]" in msg
    assert "axes=tuple(int, int)" in msg


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda x: np.sum(np.add.reduceat(x, [0, 2])), "numpy.add.reduceat(f64[1d]"),
        (lambda x: np.sum(np.maximum.accumulate(x)), "numpy.maximum.accumulate(f64[1d]"),
        (lambda x: np.sum(np.subtract.accumulate(x)), "numpy.subtract.accumulate(f64[1d]"),
    ],
    ids=["add.reduceat", "maximum.accumulate", "subtract.accumulate"],
)
def test_unsupported_ufunc_method(call, name):
    msg, _ = raises_here(call, NoRuleError)
    assert name in msg


def test_ufunc_at_other_than_add_and_subtract_is_refused():
    # np.add.at and np.subtract.at into traced arrays work (tests/test_rules_ported.py)
    def f(x):
        y = x * 1.0
        np.multiply.at(y, [0, 0], 2.0)
        return np.sum(y)

    raises_here(f, AdcliError, "multiply")


# --- out= and where= -------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["np.sin", "np.add"])
def test_ufunc_out_argument_into_a_plain_array_is_refused(form):
    def f(x):
        if form == "np.sin":
            buf = np.zeros(3) + 0.0
            np.sin(x, out=buf)
            return np.sum(buf)
        buf = np.zeros(3) + 0.0
        np.add(x, 1.0, out=buf)
        return np.sum(buf)

    raises_here(f, UnsupportedError, "out=")


def test_ufunc_out_argument_into_a_traced_array_writes_it():
    # NumPy semantics: out= is written (every alias sees it) and returned
    w = np.array([1.0, 2.0, 3.0])

    def f(x):
        buf = x * 1.0
        alias = buf
        r = np.multiply(buf, x, out=buf)
        assert r is buf
        s = np.sin(x[:2], out=buf[1:])  # through a view: buf changes too
        return np.sum(alias * w) + np.sum(s)

    v, grad = adcli.value_and_grad(f)(X.copy())
    assert v == f(X.copy())
    check_grad(f, X.copy())

    def g(x):
        buf = x * 1.0
        alias = buf
        np.multiply(buf, x, out=(buf,))
        return np.sum(alias * w)

    v, grad = adcli.value_and_grad(g)(X.copy())
    assert v == np.sum(X * X * w)
    np.testing.assert_allclose(grad, 2 * X * w)
    check_grad(g, X.copy())


@pytest.mark.parametrize("fn", ["np.sum", "np.cumsum", "np.max", "np.clip", "np.concatenate"])
def test_out_argument_of_numpy_functions_is_refused(fn):
    def f(x):
        if fn == "np.sum":
            return np.sum(x, out=np.zeros(()))
        if fn == "np.cumsum":
            return np.sum(np.cumsum(x, out=np.zeros(3)))
        if fn == "np.max":
            return np.max(x, out=np.zeros(()))
        if fn == "np.clip":
            return np.sum(np.clip(x, 0.0, 1.0, out=np.zeros(3)))
        return np.sum(np.concatenate([x, x], out=np.zeros(6)))

    with pytest.raises(UnsupportedError, match="out="):
        adcli.grad(f)(X.copy())


def test_where_argument_is_refused():
    with pytest.raises(UnsupportedError, match="where="):
        adcli.grad(lambda x: np.sum(np.sin(x, where=x > 1.0)))(X.copy())
    with pytest.raises(UnsupportedError, match="where="):
        adcli.grad(lambda x: np.sum(x, where=x > 1.0))(X.copy())


# --- escaping the gradient computation ----------------------------------------------------

LEAKED: list = []


def _leak(x):
    LEAKED.append(x)
    LEAKED.append(x[0] * 2.0)
    return np.sum(x)


@pytest.mark.parametrize("use", ["mul", "np.sin", "index", "np.sum", "grad-again"])
def test_traced_value_escaping_grad_raises_when_used(use):
    LEAKED.clear()
    adcli.grad(_leak)(X.copy())
    leaked, leaked_scalar = LEAKED
    with pytest.raises((RuntimeError, AdcliError)) as info:
        if use == "mul":
            leaked_scalar * 2.0
        elif use == "np.sin":
            np.sin(leaked)
        elif use == "index":
            leaked[1]
        elif use == "np.sum":
            np.sum(leaked)
        else:
            adcli.grad(lambda y: np.sum(y * leaked))(X.copy())
    assert "gradient computation" in str(info.value)


def test_traced_value_escaping_grad_error_names_the_location():
    LEAKED.clear()
    adcli.grad(_leak)(X.copy())
    with pytest.raises((RuntimeError, AdcliError)) as info:
        np.sin(LEAKED[0])
    assert THIS_FILE in str(info.value), f"no file:line in: {info.value}"


def test_traced_value_escaping_grad_is_an_adcli_error():
    # The CLI turns every AdcliError (and only those) into a one-line message.
    LEAKED.clear()
    adcli.grad(_leak)(X.copy())
    with pytest.raises(AdcliError):
        LEAKED[1] + 1.0


def test_escaped_value_in_closure():
    keep = {}

    def f(x):
        keep["t"] = np.exp(x)
        return np.sum(keep["t"])

    adcli.grad(f)(X.copy())
    with pytest.raises((RuntimeError, AdcliError)):
        np.sum(keep["t"] * 2.0)


# --- higher order ---------------------------------------------------------------------------


def test_grad_of_grad_raises_unsupported():
    inner = adcli.grad(lambda y: np.sum(y**3))

    with pytest.raises(UnsupportedError, match="higher-order"):
        adcli.grad(lambda x: np.sum(inner(x)))(X.copy())


def test_grad_of_grad_via_closure_raises_unsupported():
    def outer(x):
        return np.sum(adcli.grad(lambda y: np.sum(x * y))(np.ones(3)))

    with pytest.raises(UnsupportedError, match="higher-order"):
        adcli.grad(outer)(X.copy())


def test_grad_of_grad_scalar():
    dsin = adcli.grad(lambda a: np.sin(a))
    with pytest.raises(UnsupportedError):
        adcli.grad(lambda a: dsin(a))(0.3)


# --- stop_gradient --------------------------------------------------------------------------


def test_stop_gradient_makes_a_constant():
    x = np.array([1.0, 2.0, 3.0])
    v, g = adcli.value_and_grad(lambda x: np.sum(x * adcli.stop_gradient(x)))(x)
    assert v == 14.0
    np.testing.assert_array_equal(g, x)  # not 2x


def test_stop_gradient_result_is_plain_and_can_escape():
    seen = {}

    def f(x):
        c = adcli.stop_gradient(x[0] * 3.0)
        assert not isinstance(c, Tracer)
        seen["c"] = c
        math.exp(c)  # allowed: it is a plain number
        return np.sum(x) + c

    np.testing.assert_array_equal(adcli.grad(f)(X.copy()), [1.0, 1.0, 1.0])
    assert seen["c"] == 1.5


def test_stop_gradient_only_output_gives_zero_gradient():
    g = adcli.grad(lambda x: np.sum(adcli.stop_gradient(x) ** 2))(X.copy())
    np.testing.assert_array_equal(g, np.zeros(3))


def test_stop_gradient_on_pytree_and_plain_values():
    def f(x):
        d = adcli.stop_gradient({"a": x, "b": [x[0], 2.0], "c": None})
        assert type(d["a"]) is np.ndarray and not isinstance(d["b"][0], Tracer) and d["c"] is None
        return np.sum(x * d["a"]) + d["b"][0] * x[1]

    # d/dx sum(x * c) = c; + c0 * x1
    np.testing.assert_array_equal(adcli.grad(f)(X.copy()), [0.5, 1.5 + 0.5, 2.5])
    assert adcli.stop_gradient(3.0) == 3.0
    plain = np.ones(2)
    assert adcli.stop_gradient(plain) is plain


def test_stop_gradient_value_is_not_changed_by_later_assignment():
    def f(x):
        y = x * 1.0
        c = adcli.stop_gradient(y)
        y[0] = 100.0
        return np.sum(y) + np.sum(c)

    v, g = adcli.value_and_grad(f)(X.copy())
    # NumPy semantics would make c alias y; adcli's constant may or may not alias, but the
    # gradient must be that of the value computed: check value and gradient are consistent.
    if v == pytest.approx(100.0 + 1.5 + 2.5 + 0.5 + 1.5 + 2.5):
        np.testing.assert_array_equal(g, [0.0, 1.0, 1.0])
    else:
        assert v == pytest.approx(2 * (100.0 + 1.5 + 2.5))
        np.testing.assert_array_equal(g, [0.0, 1.0, 1.0])
