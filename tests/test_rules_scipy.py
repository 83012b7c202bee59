"""Native rules for scipy.special's ufuncs (engine/rules_scipy.py): each checked by check_rule
(central finite differences, output type/shape/dtype, inputs unchanged, accumulation) on several
shapes and dtypes; both import forms, under plain grad and under the profiler."""

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.special as sp  # a test dependency (pyproject.toml [test])

import adcli
from adcli.engine.rules.scipy import special as rules_scipy
from adcli.testing import check_rule

rng = np.random.default_rng(3)


def pos(shape, lo=0.5, hi=3.0):
    return rng.uniform(lo, hi, shape)


def unit(shape):
    return rng.uniform(0.1, 0.9, shape)


def sym(shape, r=1.5):
    return rng.uniform(-r, r, shape)


# Inputs inside each function's domain (away from poles, branch points and kinks).
DOMAIN = {
    "gammaln": pos, "digamma": pos, "psi": pos, "gamma": pos, "rgamma": pos,
    "erf": sym, "erfc": sym, "erfinv": lambda s: sym(s, 0.8), "erfcinv": lambda s: pos(s, 0.2, 1.8),
    "expit": lambda s: sym(s, 4.0), "logit": unit, "log_expit": lambda s: sym(s, 4.0),
    "ndtr": sym, "log_ndtr": sym, "ndtri": unit,
    "i0": sym, "i1": sym, "i0e": lambda s: np.where(np.abs(sym(s)) < 0.1, 0.5, sym(s)), "i1e": pos,
    "j0": pos, "j1": pos, "y0": pos, "y1": pos, "entr": unit,
    "xlogy": lambda s: (sym(s), pos(s)), "xlog1py": lambda s: (sym(s), pos(s)),
    "betaln": lambda s: (pos(s), pos(s)), "rel_entr": lambda s: (pos(s), pos(s)), "kl_div": lambda s: (pos(s), pos(s)),
}


# Functions with a derivative in one argument only (the other's VJP raises): (inputs, that argument).
PARTIAL = {
    "gammainc": (lambda s: (pos(s, 1.5, 3.0), pos(s)), 1), "gammaincc": (lambda s: (pos(s, 1.5, 3.0), pos(s)), 1),
    "betainc": (lambda s: (pos(s, 1.5, 3.0), pos(s, 1.5, 3.0), unit(s)), 2),
    "jv": (lambda s: (np.full(s, 1.5), pos(s)), 1), "yv": (lambda s: (np.full(s, 2.0), pos(s)), 1),
    "yn": (lambda s: (np.full(s, 1.0), pos(s)), 1),  # (jn is jv)
    "iv": (lambda s: (np.full(s, 1.5), pos(s)), 1), "ive": (lambda s: (np.full(s, 0.5), pos(s)), 1),
    "kv": (lambda s: (np.full(s, 1.2), pos(s)), 1),
}
DOMAIN["beta"] = lambda s: (pos(s), pos(s))
DOMAIN["gammasgn"] = lambda s: pos(s) - 1.9  # piecewise constant: a zero gradient


def test_the_domain_tables_cover_every_rule():
    assert set(DOMAIN) | set(PARTIAL) == rules_scipy.NAMES and not set(DOMAIN) & set(PARTIAL)


@pytest.mark.parametrize("shape", [(), (5,)])
@pytest.mark.parametrize("name", sorted(PARTIAL))
def test_partial_rules_match_finite_differences_and_refuse_the_other_arguments(name, shape):
    make, k = PARTIAL[name]
    args = [np.asarray(a, dtype=float) for a in make(shape)]
    fn = getattr(sp, name)
    w = rng.uniform(0.5, 1.5, shape)

    def f(v, i=k):
        a = list(args)
        a[i] = v
        return np.sum(fn(*a) * w)

    g = adcli.grad(f)(args[k])
    h = 1e-6
    steps = np.eye(max(args[k].size, 1)).reshape((-1,) + args[k].shape) * h
    expected = np.array([(f(args[k] + e) - f(args[k] - e)) / (2 * h) for e in steps]).reshape(args[k].shape)
    np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-9)
    other = 0 if k else 1
    with pytest.raises(adcli.AdcliError, match=f"scipy.special.{name} has no derivative with respect to"):
        adcli.grad(lambda v: f(v, other))(args[other])


@pytest.mark.parametrize("shape", [(), (5,), (3, 4)])
@pytest.mark.parametrize("name", sorted(DOMAIN))
def test_rule_matches_finite_differences(name, shape):
    args = DOMAIN[name](shape)
    args = args if isinstance(args, tuple) else (args,)
    args = tuple(np.asarray(a, dtype=np.float64) for a in args)
    report = check_rule(getattr(sp, name), *args, timing=False)
    assert report.rule == "native rule" and "finite differences" in report.checks


@pytest.mark.parametrize("name", ["gammaln", "erf", "expit", "xlogy", "log_ndtr"])
def test_float32_and_broadcasting(name):
    args = DOMAIN[name]((3, 4))
    if isinstance(args, tuple):  # a row broadcast against a matrix
        args = (args[0].astype(np.float32), args[1][0].astype(np.float32))
    else:
        args = (args.astype(np.float32),)
    report = check_rule(getattr(sp, name), *args, timing=False)
    assert "finite differences" in report.checks


def test_a_ufunc_without_a_rule_still_says_so_with_its_scipy_name():
    with pytest.raises(adcli.AdcliError, match=r"scipy\.special\.struve"):
        adcli.grad(lambda x: np.sum(sp.struve(1.0, x)))(np.array([2.5, 3.0]))


SCRIPT = """
from scipy.special import gammaln, expit   # imported before adcli, by name
import numpy as np
import adcli

def nll(theta, k):
    r, logit_p = theta[0], theta[1]
    p = expit(logit_p)
    return -np.sum(gammaln(k + r) - gammaln(r) - gammaln(k + 1.0) + r * np.log1p(-p) + k * np.log(p))

theta = np.array([2.5, 0.3])
k = np.array([0.0, 3.0, 1.0, 7.0])
g = adcli.grad(nll)(theta, k)
eps = 1e-6
fd = [(nll(theta + eps * e, k) - nll(theta - eps * e, k)) / (2 * eps) for e in np.eye(2)]
assert np.allclose(g, fd, rtol=1e-6, atol=1e-8), (g, fd)
print("ok", g)
"""


def test_imported_by_name_before_adcli_in_a_fresh_process(tmp_path):
    path = tmp_path / "negbin.py"
    path.write_text(SCRIPT)
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("ok"), out.stderr


def test_served_natively_under_the_profiler(tmp_path):
    path = tmp_path / "negbin.py"
    path.write_text(SCRIPT)
    env = {**os.environ, "NO_COLOR": "1"}
    prof = tmp_path / "p.json"
    out = subprocess.run([sys.executable, "-m", "adcli", "profile", "--no-replay", "-o", str(prof), str(path)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr  # the script's own FD check ran under it
    from adcli.data import store

    [nll] = [s for s in store.load(str(prof)).signatures if s.signature.function == "__main__.nll"]
    assert nll.served_by == "derived" and nll.primitives > 0  # its ufuncs recorded as primitives


LIBRARY_CALLS = """
import numpy as np
import scipy.special as sp
import scipy.stats as st


def lse(x):
    return np.sum(sp.factorial(x))


def norm(x):
    return np.sum(st.gumbel_r.logpdf(x))


def zeta(x):
    return np.sum(sp.zeta(x, 2.0))
"""


@pytest.mark.parametrize("name, library, line", [("lse", "scipy.special.factorial", 8),
                                                 ("norm", "scipy.stats.gumbel_r.logpdf", 12),
                                                 ("zeta", "scipy.special._zeta", 16)])
def test_a_library_function_without_a_rule_is_named_at_the_users_line(tmp_path, name, library, line):
    import importlib.util

    path = tmp_path / "user_model.py"
    path.write_text(LIBRARY_CALLS)
    spec = importlib.util.spec_from_file_location("user_model", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(adcli.AdcliError) as info:
        adcli.grad(getattr(mod, name))(np.array([1.5, 2.5]))
    msg = str(info.value)
    assert library in msg and f"user_model.py:{line}" in msg
    assert "site-packages" not in msg and "scipy/" not in msg
