"""SciPy's Python-level functions through library dispatch points (engine/library.py):
logsumexp and kin, scipy.stats distributions, convolve, scipy.linalg and odeint. Every rule
and traced argument is checked against central finite differences; values are SciPy's own."""

import numpy as np
import pytest
import scipy.integrate as si
import scipy.linalg as sl
import scipy.signal as ss
import scipy.special as sp
import scipy.stats as st
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st_h

import adcli
from adcli.engine import library
from adcli.engine.rules.scipy import stats as rules_stats
from adcli.errors import NoRuleError, TracingError, UnsupportedError
from adcli.testing import check_grad, check_rule

rng = np.random.default_rng(11)


def fd(f, x, h=1e-6):
    x = np.array(x, dtype=float)
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def assert_fd(f, x, rtol=1e-5, atol=1e-7, h=1e-6):
    """adcli's gradient of ``f`` at ``x`` equals central differences; its value is f's own."""
    value, g = adcli.value_and_grad(f)(x)
    np.testing.assert_array_equal(value, f(x))
    np.testing.assert_allclose(g, fd(f, x, h), rtol=rtol, atol=atol)
    return g


def weights(shape):
    return rng.uniform(0.5, 1.5, shape)


# --- scipy.special ---------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [{}, {"axis": 0}, {"axis": 1}, {"axis": -1, "keepdims": True}, {"axis": (0, 1)},
                                    {"keepdims": True}])
def test_logsumexp_matches_finite_differences(kwargs):
    x = rng.normal(size=(3, 4))
    w = weights(np.shape(sp.logsumexp(x, **kwargs)))
    assert_fd(lambda v: np.sum(sp.logsumexp(v, **kwargs) * w), x)


def test_logsumexp_weights_b_and_return_sign():
    a = rng.normal(size=(2, 5))
    b = rng.uniform(-1.0, 2.0, size=(5,))
    w = weights(2)
    assert_fd(lambda v: np.sum(sp.logsumexp(a, axis=1, b=v, return_sign=True)[0] * w), b)
    assert_fd(lambda v: np.sum(sp.logsumexp(v, axis=1, b=np.abs(b)) * w), a)
    res, sign = adcli.value_and_grad(lambda v: sp.logsumexp(v, b=b, return_sign=True)[0])(a)[0], \
        sp.logsumexp(a, b=b, return_sign=True)[1]
    assert np.isfinite(res) and sign in (-1.0, 1.0)


def test_logsumexp_of_a_scalar_and_of_float32():
    assert_fd(lambda v: sp.logsumexp(v * 2.0), 0.3)
    x = rng.normal(size=4).astype(np.float32)
    g = adcli.grad(lambda v: sp.logsumexp(v))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, sp.softmax(x.astype(float)), rtol=1e-5)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_softmax_and_log_softmax(axis):
    x = rng.normal(size=(3, 4))
    w = weights((3, 4))
    assert_fd(lambda v: np.sum(sp.softmax(v, axis=axis) * w), x)
    assert_fd(lambda v: np.sum(sp.log_softmax(v, axis=axis) * w), x)


def test_multigammaln_and_polygamma():
    a = rng.uniform(2.0, 4.0, size=3)
    w = weights(3)
    assert_fd(lambda v: np.sum(sp.multigammaln(v, 3) * w), a)
    assert_fd(lambda v: sp.multigammaln(v, 2), 3.3)
    for n in (0, 1, 2):
        assert_fd(lambda v: np.sum(sp.polygamma(n, v)), a)
    with pytest.raises(UnsupportedError, match="polygamma has no derivative with respect to its order"):
        adcli.grad(lambda n: np.sum(sp.polygamma(n, a)))(1.0)


# --- scipy.stats -----------------------------------------------------------------------------


def _stats_inputs(dist, shape):
    shapes = rules_stats.FAMILIES[dist][0]
    x = rng.uniform(0.2, 0.7, shape) if dist == "beta" else rng.uniform(0.3, 2.0, shape)
    if dist in ("norm", "t", "laplace", "logistic", "cauchy"):
        x = x - 1.0 + 0.05  # both signs, away from laplace's kink at loc
    return [x] + [rng.uniform(1.5, 4.0, shape) for _ in shapes] + [rng.uniform(-0.1, 0.1), rng.uniform(0.9, 1.3)]


CASES = [(d, m, k) for d, (shapes, _, _) in rules_stats.FAMILIES.items() for m in rules_stats.METHODS
         for k in range(3 + len(shapes)) if m in ("logpdf", "pdf") or not 1 <= k <= len(shapes)]


@pytest.mark.parametrize("shape", [(), (4,)])
@pytest.mark.parametrize("dist,method,k", CASES)
def test_distribution_methods_match_finite_differences(dist, method, k, shape):
    args = _stats_inputs(dist, shape)
    fn = getattr(getattr(st, dist), method)
    w = weights(shape)

    def f(v):
        a = list(args)
        a[k] = v
        return np.sum(fn(*a) * w)

    assert_fd(f, args[k], rtol=1e-5, atol=1e-8)


def test_a_cdf_refuses_a_traced_shape_parameter():
    with pytest.raises(UnsupportedError, match=r"scipy.stats.t.cdf has no derivative with respect to its shape parameter df"):
        adcli.grad(lambda df: st.t.cdf(0.3, df))(3.0)


def test_keywords_broadcasting_and_outside_the_support():
    x = rng.normal(size=(5, 1))
    mu = rng.normal(size=(1, 3))
    assert_fd(lambda v: np.sum(st.norm.logpdf(x, loc=v, scale=2.0)), mu)
    assert_fd(lambda v: np.sum(st.t.logpdf(x, df=v, scale=1.5)), 4.0)
    # gamma's density is 0 below loc: its derivative there is 0, not nan
    g = adcli.grad(lambda v: np.sum(st.gamma.pdf(np.array([-1.0, 0.5, 2.0]), v)))(2.0)
    assert np.isfinite(g)
    g = adcli.grad(lambda v: np.sum(st.gamma.logpdf(v, 2.0)[1:]))(np.array([-1.0, 0.5, 2.0]))
    assert g[0] == 0.0 and np.all(np.isfinite(g))


@pytest.mark.parametrize("method", ["logpdf", "pdf"])
def test_multivariate_normal(method):
    fn = getattr(st.multivariate_normal, method)
    a = rng.normal(size=(3, 3))
    cov = a @ a.T + 2.0 * np.eye(3)
    X = rng.normal(size=(5, 3))
    m = rng.normal(size=3)
    w = weights(5)
    assert_fd(lambda v: np.sum(fn(v, m, cov) * w), X)
    assert_fd(lambda v: fn(v, m, cov), X[0])
    assert_fd(lambda v: np.sum(fn(X, v, cov) * w), m)
    assert_fd(lambda v: np.sum(fn(X, m, v) * w), cov)  # scipy reads the lower triangle
    assert_fd(lambda v: np.sum(fn(X, m, v @ v.T + np.eye(3)) * w), a)
    assert_fd(lambda v: np.sum(fn(X, m, v) * w), 2.0)  # isotropic
    assert_fd(lambda v: np.sum(fn(X, m, v) * w), np.array([1.0, 2.0, 3.0]))  # diagonal
    assert_fd(lambda v: np.sum(fn(v, 0.5, 2.0) * w), rng.normal(size=5))  # one dimension
    with pytest.raises(UnsupportedError, match="allow_singular"):
        adcli.grad(lambda v: np.sum(fn(X, v, cov, allow_singular=True)))(m)


def test_multivariate_normal_entropy():
    a = rng.normal(size=(3, 3))
    assert_fd(lambda v: st.multivariate_normal.entropy(np.zeros(3), v @ v.T + np.eye(3)), a)


@pytest.mark.parametrize("method", ["logpdf", "pdf"])
def test_dirichlet(method):
    fn = getattr(st.dirichlet, method)
    alpha = np.array([1.5, 2.0, 3.0])
    x = np.array([0.2, 0.3, 0.5])
    xs = rng.dirichlet(alpha, size=4).T
    w = weights(4)
    assert_fd(lambda v: fn(x, v), alpha)
    assert_fd(lambda v: fn(v / np.sum(v), alpha), x)
    assert_fd(lambda v: np.sum(fn(xs, v) * w), alpha)
    assert_fd(lambda v: np.sum(fn(v / np.sum(v, axis=0), alpha) * w), xs)
    assert_fd(lambda v: fn(v, alpha), x[:2])  # the last component implied


@pytest.mark.parametrize("method", ["logpmf", "pmf", "cdf"])
def test_poisson(method):
    k = np.array([0.0, 1.0, 3.0, 5.0])
    w = weights(4)
    assert_fd(lambda mu: np.sum(getattr(st.poisson, method)(k, mu) * w), np.array([0.5, 1.5, 2.5, 4.0]))
    with pytest.raises(UnsupportedError, match="count"):
        adcli.grad(lambda kk: np.sum(getattr(st.poisson, method)(kk, 2.0)))(k)


def test_frozen_distributions_are_served():
    x = rng.normal(size=4)
    assert_fd(lambda v: np.sum(st.norm(0.3, 1.7).logpdf(v)), x)


def test_a_distribution_without_rules_names_itself_and_the_users_line():
    with pytest.raises(NoRuleError, match=r"scipy\.stats\.gumbel_r\.logpdf\(.*test_rules_scipy_functions\.py:\d+"):
        adcli.grad(lambda v: np.sum(st.gumbel_r.logpdf(v)))(np.ones(3))


# --- scipy.signal, scipy.linalg --------------------------------------------------------------


@pytest.mark.parametrize("method", ["direct", "fft"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("shapes", [((7,), (3,)), ((3,), (7,)), ((5, 6), (3, 2))])
def test_convolve(mode, method, shapes):
    a, b = rng.normal(size=shapes[0]), rng.normal(size=shapes[1])
    w = weights(ss.convolve(a, b, mode=mode).shape)
    assert_fd(lambda v: np.sum(ss.convolve(v, b, mode=mode, method=method) * w), a)
    assert_fd(lambda v: np.sum(ss.convolve(a, v, mode=mode, method=method) * w), b)


@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("trans", [0, 1, "T"])
@pytest.mark.parametrize("lower", [True, False])
def test_solve_triangular(lower, trans, unit):
    low = np.tril(rng.normal(size=(4, 4))) + 4.0 * np.eye(4)
    a = low if lower else low.T
    for b in (rng.normal(size=4), rng.normal(size=(4, 2))):
        w = weights(b.shape)
        kw = {"trans": trans, "lower": lower, "unit_diagonal": unit}
        assert_fd(lambda v: np.sum(sl.solve_triangular(v, b, **kw) * w), a)  # only the triangle it reads
        assert_fd(lambda v: np.sum(sl.solve_triangular(a, v, **kw) * w), b)


def test_sqrtm_sylvester_and_cholesky():
    s = rng.normal(size=(3, 3))
    s = s @ s.T + np.eye(3)
    w = weights((3, 3))
    assert_fd(lambda v: np.sum(sl.sqrtm(v) * w), s)
    a, b, q = rng.normal(size=(3, 3)), rng.normal(size=(2, 2)), rng.normal(size=(3, 2))
    for k in range(3):
        def f(v, k=k):
            args = [a, b, q]
            args[k] = v
            return np.sum(sl.solve_sylvester(*args) * w[:, :2])

        assert_fd(f, [a, b, q][k])
    for lower in (False, True):
        assert_fd(lambda v: np.sum(sl.cholesky(v, lower=lower) * w), s)  # reads one triangle


# --- scipy.integrate.odeint ------------------------------------------------------------------


def _lotka_volterra(y, t, a, b):
    return np.stack([a[0] * y[0] - a[1] * y[0] * y[1], -b * y[1] + a[1] * y[0] * y[1]])


def test_odeint_gradients_of_the_initial_state_and_the_parameters():
    t = np.linspace(0.0, 2.0, 6)
    y0, a, b = np.array([1.0, 0.5]), np.array([1.1, 0.4]), 0.9
    tol = {"rtol": 1e-10, "atol": 1e-10}

    def loss(y0, a, b):
        return np.sum(si.odeint(_lotka_volterra, y0, t, args=(a, b), **tol) ** 2)

    assert_fd(lambda v: loss(v, a, b), y0, rtol=1e-5, h=1e-5)
    assert_fd(lambda v: loss(y0, v, b), a, rtol=1e-5, h=1e-5)
    assert_fd(lambda v: loss(y0, a, v), b, rtol=1e-5, h=1e-5)


def test_odeint_with_tfirst_and_a_list_valued_function():
    t = np.linspace(0.0, 1.5, 5)

    def f(tt, y, k):
        return [-k * y[0], k * y[0] - 0.3 * y[1]]

    assert_fd(lambda k: np.sum(si.odeint(f, np.array([1.0, 0.0]), t, args=(k,), tfirst=True)[:, 1]), 0.7, h=1e-5)


def test_odeint_gradient_of_the_output_times():
    y0, a, b = np.array([1.0, 0.5]), np.array([1.1, 0.4]), 0.9
    w = np.arange(1.0, 7.0)[:, None]

    def loss(t):
        return np.sum(si.odeint(_lotka_volterra, y0, t, args=(a, b), rtol=1e-10, atol=1e-10) ** 2 * w)

    assert_fd(loss, np.linspace(0.1, 2.0, 6), rtol=1e-6, h=1e-5)


def test_odeint_refuses_a_function_that_reads_a_traced_closure():
    t = np.linspace(0.0, 1.0, 3)
    with pytest.raises(TracingError, match="not among its arguments.*args="):
        adcli.grad(lambda k: np.sum(si.odeint(lambda y, tt: -k * y, np.array([1.0]), t)))(0.5)


# --- every rule through check_rule (FD in random directions, output types, accumulation) ------

_X = rng.uniform(0.3, 0.7, 4)
_S = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.8]])
_L = np.tril(rng.normal(size=(3, 3))) + 3.0 * np.eye(3)


def _stats_case(dist, method):
    shapes = rules_stats.FAMILIES[dist][0]
    # a CDF has no derivative in its shapes: pass them as ints (not differentiated)
    shape_args = [2.5 + i for i in range(len(shapes))] if method in ("logpdf", "pdf") else [2 + i for i in range(len(shapes))]
    return (_X, *shape_args, 0.05, 1.2), {}


LIBRARY_CASES = {
    "scipy.special.logsumexp": ((rng.normal(size=(3, 4)),), {"axis": 1}),
    "scipy.special.softmax": ((rng.normal(size=(3, 4)),), {"axis": 0}),
    "scipy.special.log_softmax": ((rng.normal(size=5),), {}),
    "scipy.special.multigammaln": ((rng.uniform(2.0, 3.0, 3), 2), {}),
    "scipy.special.polygamma": ((1, rng.uniform(1.0, 3.0, 3)), {}),
    "scipy.signal.convolve": ((rng.normal(size=6), rng.normal(size=3)), {"mode": "same"}),
    "scipy.linalg.solve_triangular": ((_L, rng.normal(size=3)), {"lower": True}),
    "scipy.linalg.sqrtm": ((_S,), {}),
    "scipy.linalg.solve_sylvester": ((_S, _L, rng.normal(size=(3, 3))), {}),
    "scipy.linalg.cholesky": ((_S,), {}),
    "scipy.linalg.solve_banded": (((1, 1), np.array([[0.0, 0.5, 0.3], [3.0, 2.5, 2.8], [0.2, 0.4, 0.0]]),
                                   rng.normal(size=3)), {}),
    "scipy.stats.multivariate_normal.logpdf": ((rng.normal(size=(4, 3)), rng.normal(size=3), _S), {}),
    "scipy.stats.multivariate_normal.pdf": ((rng.normal(size=(4, 3)), rng.normal(size=3), _S), {}),
    "scipy.stats.multivariate_normal.entropy": ((np.zeros(3), _S), {}),
    "scipy.stats.dirichlet.logpdf": ((np.array([0.2, 0.3]), np.array([1.5, 2.0, 3.0])), {}),
    "scipy.stats.dirichlet.pdf": ((np.array([0.2, 0.3]), np.array([1.5, 2.0, 3.0])), {}),
    **{f"scipy.stats.poisson.{m}": ((np.array([0, 1, 3]), np.array([0.5, 1.5, 2.5])), {}) for m in ("logpmf", "pmf", "cdf")},
    **{f"scipy.stats.{d}.{m}": _stats_case(d, m) for d in rules_stats.FAMILIES for m in rules_stats.METHODS},
}
# odeint's output times t are float arrays, which check_rule would differentiate (refused):
# its FD tests are above.
NOT_IN_CHECK_RULE = {"scipy.integrate.odeint",
                     # np.r_/np.c_ (a NumPy dispatch point): tests/test_lists.py checks them against FD
                     "numpy.lib._index_tricks_impl.AxisConcatenator.__getitem__"}
# NumPy functions given lists of traced values (engine/rules_numpy_extra.py): tests/test_rules_ported.py
NOT_IN_CHECK_RULE |= {n for n in library.RULES if n.endswith("._implementation")}


def test_every_library_rule_has_a_check_rule_case():
    assert set(LIBRARY_CASES) | NOT_IN_CHECK_RULE == set(library.RULES)


@pytest.mark.parametrize("name", sorted(LIBRARY_CASES))
def test_check_rule(name):
    args, kwargs = LIBRARY_CASES[name]
    report = check_rule(library.key_of(name), *args, kwargs=kwargs, timing=False)
    assert report.rule == "native rule" and "finite differences" in report.checks


# --- property: random compositions of the new rules agree with finite differences ------------

# 1-d -> 1-d steps, each smooth on the values the previous ones produce (kept in (-3, 3) by tanh)
STEPS = {
    "log_softmax": lambda v: sp.log_softmax(v),
    "softmax": lambda v: sp.softmax(v) * 3.0,
    "logsumexp-keepdims": lambda v: v - sp.logsumexp(v, keepdims=True),
    "norm.logpdf": lambda v: st.norm.logpdf(v, 0.3, 1.5),
    "t.logcdf": lambda v: st.t.logcdf(v, 4.0, scale=2.0),
    "gamma.logpdf": lambda v: st.gamma.logpdf(v * v + 0.5, 2.5),
    "convolve-same": lambda v: ss.convolve(v, np.array([0.25, 0.5, 0.25]), mode="same"),
    "convolve-self": lambda v: ss.convolve(v, v[:2], mode="full")[: v.shape[0]],
    "r_": lambda v: np.r_[v[1:], v[:1] * 0.5],
    "partition": lambda v: np.partition(v + np.arange(v.shape[0]) * 1.4142e-3, 1),  # no tie but by chance
    "mvn-rows": lambda v: v + st.multivariate_normal.logpdf(np.c_[v, v * 0.5], np.zeros(2), np.eye(2) * 2.0),
    "solve_triangular": lambda v: sl.solve_triangular(np.tril(np.outer(v, v)) + 4.0 * np.eye(v.shape[0]), v,
                                                      lower=True),
    "linspace": lambda v: v + np.linspace(v[0], v[-1], v.shape[0]),
    "mean-of-list": lambda v: v - np.mean([v[0], v[-1]]),
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chain=st_h.lists(st_h.sampled_from(sorted(STEPS)), min_size=2, max_size=4),
       x=st_h.lists(st_h.floats(-2.0, 2.0), min_size=3, max_size=5))
def test_random_compositions_of_the_new_rules_match_finite_differences(chain, x):
    x = np.array(x)
    w = np.cos(np.arange(x.size) * 0.7 + 0.3)

    def f(v):
        for name in chain:
            v = np.tanh(STEPS[name](v))
        return np.sum(v * w)

    if not np.isfinite(f(x)):
        return
    check_grad(f, x)
