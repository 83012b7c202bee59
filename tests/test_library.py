"""Library dispatch points (engine/library.py): how SciPy's Python functions reach their rules,
whichever way the program imported them; the patch is set by the first gradient and stays
(restore() undoes it); plain calls keep SciPy's answers, errors and signatures; declared and
imported rules serve them too."""

import ast
import inspect
import subprocess
import sys
import threading

import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as st

import adcli
import adcli.rules
from adcli.engine import library
from adcli.engine.registry import serving
from adcli.rules.autograd_import import unimport
from tests.support.fresh import fresh_python


def _code(func):
    """The function's own code, patched or not."""
    p = library._patch_for(func)
    return p.code


def test_the_patch_is_set_by_the_first_gradient_and_plain_calls_keep_scipys_answers():
    library.restore()
    assert sp.logsumexp.__code__ is _code(sp.logsumexp)
    a = np.array([1.0, 2.0])
    expected = sp.logsumexp(a)  # SciPy's own code
    seen = {}

    def f(x):
        seen["code"] = sp.logsumexp.__code__
        seen["plain"] = sp.logsumexp(a)  # a plain call meanwhile: SciPy's answer
        return sp.logsumexp(x)

    adcli.grad(f)(np.array([0.5, 1.5]))
    assert seen["code"] is not _code(sp.logsumexp) and seen["plain"] == expected
    # it stays: a plain call afterwards runs SciPy's code through the trampoline, same answer,
    # same errors, same signature for help() and inspect
    assert sp.logsumexp.__code__ is seen["code"] and type(st.norm).logpdf.__code__ is not _code(type(st.norm).logpdf)
    assert sp.logsumexp(a) == expected and st.norm.logpdf(0.5) == pytest.approx(-0.5 * 0.25 - 0.5 * np.log(2 * np.pi))
    with pytest.raises(np.exceptions.AxisError):
        sp.logsumexp(a, axis=3)
    assert str(inspect.signature(sp.logsumexp)) == "(a, axis=None, b=None, keepdims=False, return_sign=False)"
    library.restore()
    assert sp.logsumexp.__code__ is _code(sp.logsumexp) and sp.logsumexp(a) == expected
    assert str(inspect.signature(sp.logsumexp)) == "(a, axis=None, b=None, keepdims=False, return_sign=False)"
    adcli.grad(f)(np.array([0.5, 1.5]))  # patched again by the next gradient
    assert sp.logsumexp.__code__ is seen["code"]


def test_after_the_function_raises_plain_calls_keep_scipys_answers():
    def f(x):
        sp.logsumexp(x)
        raise KeyError("boom")

    with pytest.raises(KeyError):
        adcli.grad(f)(np.ones(2))
    assert sp.logsumexp(np.zeros(2)) == pytest.approx(np.log(2.0))
    assert adcli.grad(lambda v: sp.logsumexp(v))(np.zeros(2)) == pytest.approx([0.5, 0.5])


def test_threads_share_the_patch_and_plain_callers_meanwhile_get_scipys_values():
    xs = [np.random.default_rng(i).normal(size=5) for i in range(8)]
    results, errors = {}, []
    stop = threading.Event()

    def work(i):
        try:
            for _ in range(20):
                results[i] = adcli.grad(lambda v: sp.logsumexp(v) + np.sum(st.norm.logpdf(v)))(xs[i])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def plain():
        while not stop.is_set():
            if sp.logsumexp(xs[0]) != sp.logsumexp(xs[0].copy()):
                errors.append(AssertionError("plain value changed"))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)] + [threading.Thread(target=plain)]
    for t in threads:
        t.start()
    for t in threads[:-1]:
        t.join()
    stop.set()
    threads[-1].join()
    assert not errors, errors
    for i, x in enumerate(xs):
        np.testing.assert_allclose(results[i], sp.softmax(x) - x, rtol=1e-12)
    assert sp.logsumexp(xs[1]) == pytest.approx(float(np.log(np.sum(np.exp(xs[1])))), rel=1e-12)


def test_a_declared_rule_serves_a_library_function_instead_of_the_native_one():
    calls = []

    @adcli.rules.rule(sp.logsumexp, "f64[1d]")
    def lse(x):
        calls.append(1)
        m = np.max(x)
        y = m + np.log(np.sum(np.exp(x - m)))

        def pullback(g):
            return (g * np.exp(x - y),)

        return y, pullback

    try:
        x = np.array([0.1, 0.7, -0.2])
        g = adcli.grad(lambda v: sp.logsumexp(v))(x)
        assert calls and np.allclose(g, sp.softmax(x))
    finally:
        assert adcli.rules.unregister(sp.logsumexp) == 1


def test_autograds_rule_for_a_distribution_method_imports_and_serves():
    [rule] = adcli.rules.import_rule(st.norm.logpdf, "f64[1d]", "float", "float")
    try:
        x = np.array([0.2, -0.4, 1.0])
        assert serving(library.key_of("scipy.stats.norm.logpdf"), (x, 0.5, 2.0), {}).rule is rule
        g = adcli.grad(lambda v: np.sum(st.norm.logpdf(v, 0.5, 2.0)))(x)
        np.testing.assert_allclose(g, -(x - 0.5) / 4.0, rtol=1e-12)
        assert rule.source == "imported"
    finally:
        assert unimport(rule) == 1


SCRIPT = """
from scipy.special import logsumexp          # bound before adcli is imported
from scipy.stats import norm, multivariate_normal
import numpy as np
import scipy
from adcli import grad

X = np.random.default_rng(0).normal(size=(6, 2))

def loss(p):
    mu, log_s = p[:2], p[2]
    ll = norm.logpdf(X, mu, np.exp(log_s)) + multivariate_normal.logpdf(X, mu, np.eye(2))[:, None]
    return -np.sum(logsumexp(ll, axis=1)) + np.sum(scipy.signal.convolve(p, p))   # scipy.signal: lazy

p = np.array([0.3, -0.2, 0.1])
g = grad(loss)(p)
fd = np.array([(loss(p + 1e-6 * e) - loss(p - 1e-6 * e)) / 2e-6 for e in np.eye(3)])
assert np.allclose(g, fd, rtol=1e-6, atol=1e-8), (g, fd)
print("ok", g)
"""


def test_bound_by_name_before_adcli_and_reached_through_scipys_lazy_modules(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(SCRIPT)
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("ok"), out.stderr


def test_a_gradient_never_imports_scipys_submodules():
    # `import scipy` loads the package only; SciPy's submodules load lazily on first attribute
    # access. Looking up the rule functions must not be that first access.
    code = ("import sys, numpy as np, scipy, adcli\n"
            "adcli.grad(lambda x: np.sum(np.sin(x)))(np.ones(3))\n"
            "print(sorted(m for m in ('scipy.stats', 'scipy.signal', 'scipy.integrate', 'scipy.linalg', 'scipy.special')"
            " if m in sys.modules))\n"
            "import scipy.special as sp\n"
            "print(adcli.grad(lambda x: sp.logsumexp(x))(np.zeros(2)).tolist())\n")
    loaded, grad = fresh_python(code).splitlines()
    # scipy.linalg may come with NumPy's own imports on some versions: only the ones adcli would pull
    assert not {"scipy.stats", "scipy.signal", "scipy.integrate"} & set(ast.literal_eval(loaded))
    assert grad == "[0.5, 0.5]"


def test_served_natively_under_the_profiler(tmp_path):
    from adcli.data import store

    path = tmp_path / "model.py"
    path.write_text(SCRIPT)
    prof = tmp_path / "p.json"
    out = subprocess.run([sys.executable, "-m", "adcli", "profile", "--no-replay", "-o", str(prof), str(path)],
                         capture_output=True, text=True, timeout=180, env={"NO_COLOR": "1", "PATH": ""})
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr
    served = {s.signature.function: s.served_by for s in store.load(str(prof)).signatures}
    for name in ("scipy.special.logsumexp", "scipy.stats.norm.logpdf", "scipy.stats.multivariate_normal.logpdf",
                 "scipy.signal.convolve"):
        assert served.get(name) == "native", (name, served)


def test_names_and_lookups():
    assert library.key_of("scipy.stats.norm.logpdf") == st.norm.logpdf
    assert library.is_key(st.norm.logpdf) and library.is_key(sp.logsumexp) and not library.is_key(np.sum)
    assert library.original("scipy.special.logsumexp")(np.zeros(2)) == np.log(2.0)
    assert "scipy.stats.t.logpdf" in library.resolve_all()


def test_plain_calls_skip_the_routing_when_no_gradient_records(monkeypatch):
    # a program that once took a gradient keeps SciPy's speed in its plain code: with no gradient
    # recording anywhere, the trampoline runs SciPy's code at once, without looking for tracers
    adcli.grad(lambda x: sp.logsumexp(x))(np.array([1.0, 2.0]))  # patches logsumexp
    assert library._recording == 0
    looked: list = []
    hidden_in = library.hidden_in
    monkeypatch.setattr(library, "hidden_in", lambda obj: looked.append(obj) or hidden_in(obj))
    plain = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert sp.logsumexp(plain, axis=(0,)).tolist() == np.log(np.exp(plain).sum(axis=0)).tolist()  # a tuple: no fast type
    assert looked == []
    seen = {}

    def f(x):
        seen["recording"] = library._recording
        sp.logsumexp(plain, axis=(0,))  # while recording, the routing looks (and finds nothing)
        return sp.logsumexp(x)

    adcli.grad(f)(np.array([1.0, 2.0]))
    assert seen["recording"] == 1 and looked
    assert library._recording == 0


def test_a_traced_value_kept_from_a_finished_gradient_is_refused_by_scipys_plain_path():
    kept = []
    adcli.grad(lambda x: kept.append(x) or sp.logsumexp(x))(np.array([1.0, 2.0]))
    with pytest.raises(adcli.AdcliError, match="after its gradient computation finished"):
        sp.logsumexp(kept[0])
