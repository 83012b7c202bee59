"""Traced values where rules used to miss them: inside lists and tuples handed to SciPy's rules
and NumPy's functions, inside nested pytree containers, beside ndarray subclasses; and library
bodies and callbacks that would carry them into compiled code. Each is differentiated (checked
against central finite differences) or refused with adcli's own one-line error."""

from __future__ import annotations

import dataclasses
from collections import OrderedDict, defaultdict

import numpy as np
import pytest
import scipy.integrate as si
import scipy.linalg as sl
import scipy.optimize as so
import scipy.signal as ss
import scipy.special as sp
import scipy.stats as st
from numpy.lib.stride_tricks import sliding_window_view

import adcli
from adcli.errors import AdcliError, GradInputError, UnsupportedError
from adcli.testing import check_grad

X = np.array([0.1, -0.9, 0.9])


# --- A: SciPy rules, containers in their arguments -----------------------------------------------


def test_logsumexp_of_a_list_of_traced_scalars():
    g = check_grad(lambda x: sp.logsumexp([x[0], x[1], x[2]]), X)
    np.testing.assert_allclose(g, np.exp(X - sp.logsumexp(X)), rtol=1e-10)


@pytest.mark.parametrize("container", [list, tuple])
def test_norm_logpdf_with_loc_a_container_of_traced_values(container):
    g = check_grad(lambda a: np.sum(st.norm.logpdf(0.3, loc=container([a, a * 2.0]))), 0.5)
    assert g == pytest.approx((0.3 - 0.5) + 2.0 * (0.3 - 1.0))


def test_a_traced_shape_parameter_in_a_list_is_refused_as_when_bare():
    with pytest.raises(UnsupportedError, match="df"):
        adcli.grad(lambda df: np.sum(st.t.cdf(0.3, [df, df])))(3.0)


def test_solve_triangular_of_a_list_right_hand_side():
    A = np.array([[2.0, 0.0], [1.0, 3.0]])
    g = check_grad(lambda x: np.sum(sl.solve_triangular(A, [x, x * 2.0], lower=True)), 0.5)
    assert g == pytest.approx(np.sum(np.linalg.solve(A, [1.0, 2.0])))


def test_a_plain_list_beside_a_traced_argument():
    b = [[1.0, 0.0], [0.0, 2.0]]
    check_grad(lambda x: np.sum(sl.solve_sylvester(np.eye(2) * x[0] + 1.0, b, np.ones((2, 2)))), X)
    check_grad(lambda x: np.sum(st.norm.logpdf([0.1, 0.2], x[0], [1.0, 2.0])), X)


def _mlp_field(y, t, params):
    h = y
    for W, b in params:
        h = np.tanh(h @ W + b)
    return h


def test_odeint_args_a_list_of_weight_pairs():
    """A neural ODE's parameters: a list of (W, b) pairs in args (each leaf differentiated)."""
    rng = np.random.default_rng(0)
    params = [(rng.normal(size=(2, 3)) * 0.5, rng.normal(size=3) * 0.1),
              (rng.normal(size=(3, 2)) * 0.5, rng.normal(size=2) * 0.1)]
    t = np.array([0.0, 0.5, 1.0])

    def loss(params):
        ys = si.odeint(_mlp_field, np.array([0.3, -0.2]), t, args=(params,), rtol=1e-10, atol=1e-10)
        return np.sum(ys[-1] ** 2)

    grads = check_grad(loss, params, rtol=1e-4, atol=1e-7)
    assert all(np.any(gW) and np.any(gb) for gW, gb in grads)


@pytest.mark.parametrize("container", [list, tuple])
def test_odeint_of_a_container_initial_state_and_times(container):
    def f(y, t, k):
        return -k * y

    g = check_grad(lambda a: np.sum(si.odeint(f, container([a, 2.0 * a]), [0.0, 1.0], args=(1.0,))[-1]), 0.5)
    assert g == pytest.approx(3.0 * np.exp(-1.0), rel=1e-6)
    gt = check_grad(lambda t1: np.sum(si.odeint(f, [1.0, 2.0], container([0.0, t1]), args=(1.0,))[-1]), 1.0,
                    rtol=1e-4)
    assert gt == pytest.approx(-3.0 * np.exp(-1.0), rel=1e-5)


def test_odeint_refuses_a_container_it_cannot_open_in_args():
    @dataclasses.dataclass
    class Params:
        k: object

    with pytest.raises(UnsupportedError, match="Params"):
        adcli.grad(lambda k: si.odeint(lambda y, t, p: -p.k * y, [1.0], [0.0, 1.0], args=(Params(k),))[-1, 0])(1.0)


# --- B: concatenations mixing traced arrays and lists of traced scalars ---------------------------


@pytest.mark.parametrize("scale", [1.0, 3.0])
def test_concatenate_mixing_arrays_and_lists_of_traced_scalars(scale):
    g = check_grad(lambda x: np.sum(np.concatenate([x[:2], [x[2], x[0]]]) * scale), X)
    np.testing.assert_allclose(g, scale * np.array([2.0, 1.0, 1.0]))


def test_stack_and_vstack_of_lists_of_traced_scalars():
    check_grad(lambda x: np.sum(np.stack([x[:2], [x[2], x[0] * x[1]]]) ** 2), X)
    check_grad(lambda x: np.sum(np.vstack([x[:2], (x[2], 1.0)]) ** 2), X)


def test_functions_of_a_traced_array_and_a_list_of_traced_values():
    g = check_grad(lambda x: np.inner(x, [x[0], x[1] * x[2], 1.0]), X)
    assert g.shape == (3,)
    check_grad(lambda x: np.sum(np.dot(x[:2], [[x[0], 1.0], [2.0, x[2]]])), X)


def test_a_list_of_traced_values_beside_plain_arrays_is_refused():
    """No traced value at the top: NumPy converts the list in C, asking each element for its
    numbers, which the traced ones refuse (the dispatch protocol never sees the call)."""
    A = np.arange(6.0).reshape(2, 3)
    with pytest.raises(AdcliError, match="test_hidden_tracers.py"):
        adcli.grad(lambda x: np.sum(np.dot(A, [x[0], x[1] * x[2], 1.0])))(X)


# --- C: ndarray subclasses ----------------------------------------------------------------------


def test_a_matrix_operand_is_refused_by_name():
    M = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(UnsupportedError, match="numpy.matrix"):
        adcli.grad(lambda x: np.sum(np.multiply(x, M)))(np.ones((2, 2)))
    with pytest.raises(UnsupportedError, match="matrix"):
        adcli.grad(lambda x: np.sum(x * M))(np.ones((2, 2)))
    with pytest.raises(UnsupportedError, match="matrix"):
        adcli.grad(lambda x: np.sum(np.dot(x, M)))(np.ones((2, 2)))


def test_subclass_arguments_are_refused_by_name():
    masked = np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    with pytest.raises(GradInputError, match="MaskedArray"):
        adcli.grad(lambda x: np.mean(x))(masked)
    with pytest.raises(GradInputError, match="matrix"):
        adcli.grad(lambda x: np.sum(x))(np.matrix([[1.0, 2.0]]))
    with pytest.raises(UnsupportedError, match="MaskedArray"):
        adcli.grad(lambda x: np.sum(x * masked))(np.ones(3))


def test_a_memory_mapped_array_is_an_ndarray(tmp_path):
    m = np.memmap(tmp_path / "m.dat", dtype=np.float64, mode="w+", shape=(3,))
    m[:] = [1.0, 2.0, 3.0]
    g = adcli.grad(lambda x: np.sum(x * x))(m)
    assert type(g) is np.ndarray
    np.testing.assert_allclose(g, [2.0, 4.0, 6.0])


# --- D: nested containers in a differentiated pytree ---------------------------------------------


def test_nested_ordered_and_default_dicts_are_differentiated():
    params = {"a": OrderedDict(b=1.5, c=np.array([1.0, 2.0])), "d": defaultdict(float, e=2.0)}
    g = adcli.grad(lambda p: p["a"]["b"] ** 2 + np.sum(p["a"]["c"] * p["d"]["e"]))(params)
    assert type(g["a"]) is OrderedDict and type(g["d"]) is defaultdict
    assert g["a"]["b"] == pytest.approx(3.0) and g["d"]["e"] == pytest.approx(3.0)
    np.testing.assert_allclose(g["a"]["c"], [2.0, 2.0])


@dataclasses.dataclass
class _Layer:
    W: object
    b: object


class _MyDict(dict):
    pass


class _MyList(list):
    pass


@pytest.mark.parametrize("inner", [
    lambda: _Layer(np.ones(2), 0.5), lambda: _MyDict(w=1.0), lambda: _MyList([1.0, 2.0]),
], ids=["dataclass", "dict-subclass", "list-subclass"])
@pytest.mark.parametrize("outer", [lambda v: {"layer": v}, lambda v: [v, 1.0]], ids=["in-dict", "in-list"])
def test_nested_containers_holding_numbers_are_refused_as_at_the_top(inner, outer):
    with pytest.raises(GradInputError, match="only dict, OrderedDict"):
        adcli.grad(lambda p: 1.0)(outer(inner()))


def test_nested_settings_pass_through():
    @dataclasses.dataclass
    class Settings:
        name: str
        steps: int

    g = adcli.grad(lambda p: p["w"] * 2.0)({"w": 1.0, "cfg": Settings("a", 3)})
    assert g["w"] == 2.0 and g["cfg"] is None


# --- crashes: each works or gives adcli's error naming the function ------------------------------


def _copyto(x):
    y = x * 1.0
    np.copyto(y[:2], [x[0], x[1] * 2.0])
    return np.sum(y * y)


def test_copyto_a_list_of_traced_values():
    check_grad(_copyto, X)


LIBRARY_BODIES = {
    "np.meshgrid": lambda x: sum(np.sum(m) for m in np.meshgrid([x[0], x[1]], [1.0, 2.0])),
    "np.broadcast_to": lambda x: np.sum(np.broadcast_to([x[0], x[1]], (3, 2))),
    "np.sliding_window_view": lambda x: np.sum(sliding_window_view([x[0], x[1], x[2]], 2)),
    "scipy.linalg.toeplitz": lambda x: np.sum(sl.toeplitz([x[0], x[1]])),
    "scipy.linalg.toeplitz ": lambda x: np.sum(sl.toeplitz(x)),
    "scipy.linalg.expm": lambda x: np.sum(sl.expm([[x[0], 0.0], [0.0, x[1]]])),
    "scipy.linalg.expm ": lambda x: np.sum(sl.expm(np.diag(x))),
    "scipy.integrate.cumulative_trapezoid": lambda x: np.sum(si.cumulative_trapezoid([x[0], x[1], x[2]])),
    "scipy.signal.lfilter": lambda x: np.sum(ss.lfilter([1.0], [1.0, -0.5], [x[0], x[1]])),
    "scipy.interpolate.make_interp_spline": lambda x: __import__("scipy.interpolate").interpolate.make_interp_spline(
        [0.0, 1.0, 2.0, 3.0], [x[0], x[1], x[2], 1.0])(0.5),
    "scipy.optimize.minimize_scalar": lambda x: so.minimize_scalar(lambda t: (t - x[0]) ** 2).x,
    "scipy.optimize.brentq": lambda x: so.brentq(lambda t: t - x[0], -2.0, 2.0),
    "scipy.optimize.bisect": lambda x: so.bisect(lambda t: t - x[0], -2.0, 2.0),
    "scipy.optimize.fsolve": lambda x: so.fsolve(lambda t: t - x[0], 0.0)[0],
    "scipy.optimize.minimize": lambda x: so.minimize(lambda t: np.sum((t - x[0]) ** 2), np.zeros(1)).x[0],
    "scipy.optimize.minimize ": lambda x: so.minimize(lambda t: np.sum((t - 1.0) ** 2), x[:1]).x[0],
    "scipy.integrate.quad": lambda x: si.quad(lambda t: t * x[0], 0.0, 1.0)[0],
}


@pytest.mark.parametrize("name", list(LIBRARY_BODIES))
def test_library_bodies_and_callbacks_refuse_with_adcli_error_naming_the_function(name):
    with pytest.raises(AdcliError) as e:
        adcli.grad(LIBRARY_BODIES[name])(X)
    message = str(e.value)
    assert name.strip().split(".")[-1] in message and "test_hidden_tracers.py:" in message
    assert "\n" not in message


def test_callbacks_of_plain_values_still_work_inside_a_gradient():
    def f(x):
        root = so.brentq(lambda t: t ** 3 - 2.0, 0.0, 2.0)  # a constant: no traced value reaches it
        return x * root

    assert adcli.grad(f)(1.0) == pytest.approx(2.0 ** (1 / 3))
    assert so.brentq(lambda t: t - 0.25, 0.0, 1.0) == pytest.approx(0.25)  # and outside one


# --- NumPy's constructors bound to other names --------------------------------------------------

from numpy import array as _array  # noqa: E402  (bound before any gradient, as programs do)
from numpy import asarray as _asarray  # noqa: E402


def test_constructors_imported_by_name_build_traced_arrays():
    g = check_grad(lambda x: np.sum(_array([x[0], x[1] * 2.0]) ** 2) + np.sum(_asarray([x[2], 1.0])), X)
    np.testing.assert_allclose(g, [2 * X[0], 8 * X[1], 1.0])
    assert _array is np.array and globals()["_array"] is np.array  # put back after the gradient


def test_constructors_bound_in_an_exec_d_module_are_rebound_too():
    scope: dict = {"__name__": "user_model"}
    exec("from numpy import array\ndef f(x):\n    return (array([x[0], x[1]]) ** 2).sum()", scope)  # noqa: S102
    np.testing.assert_allclose(adcli.grad(scope["f"])(X), [2 * X[0], 2 * X[1], 0.0])
    assert scope["array"] is np.array


# --- an in-place operator on an array the function made, with a traced operand ----------------


def _quotient(x0, x1):
    v0 = x1 + 0.0
    v0 /= x0
    return np.sum(v0 * v0)


def _in_a_list(x0, x1):
    v = [x1 * 1.0]
    v[0] *= x0
    return np.sum(v[0] ** 2)


@pytest.mark.parametrize("f", [_quotient, _in_a_list])
def test_in_place_operators_do_not_depend_on_argnums(f):
    x0, x1 = np.array([2.0, 4.0]), np.array([3.0, 5.0])
    g_both = check_grad(f, x0, x1, argnums=(0, 1))
    g_first = check_grad(f, x0, x1, argnums=0)
    np.testing.assert_array_equal(g_first, g_both[0])


def test_in_place_operator_keeps_numpys_dtype_and_shape_rules():
    def f(x):
        p = np.ones(2, dtype=np.float32)
        p += x
        assert p.dtype == np.float32
        return np.sum(p)

    np.testing.assert_allclose(adcli.grad(f)(np.array([1.0, 2.0])), [1.0, 1.0])
    with pytest.raises(ValueError, match="non-broadcastable output"):
        adcli.grad(lambda x: np.sum(_add_into(np.ones(2), x)))(np.ones((3, 2)))


def _add_into(p, x):
    p = p + 0.0
    p += x
    return p


def _aliased(x0, x1):
    v0 = x1 + 0.0
    w = v0  # noqa: F841  (a second name sees the buffer: NumPy would change it too)
    v0 /= x0
    return np.sum(v0)


def _viewed(x0, x1):
    v0 = x1 + 0.0
    w = v0[:1]  # noqa: F841
    v0 /= x0
    return np.sum(v0)


def _callers(x0, x1):
    x1 /= x0  # the caller's array
    return np.sum(x1)


@pytest.mark.parametrize("f", [_aliased, _viewed, _callers])
def test_in_place_operators_seen_elsewhere_are_refused(f):
    with pytest.raises(adcli.errors.TracingError, match="in-place operator on a plain array.*something else holds"):
        adcli.grad(f)(np.array([2.0, 4.0]), np.array([3.0, 5.0]))
