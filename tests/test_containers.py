"""Every library rule (adcli.engine.library.RULES: SciPy's special, stats, linalg, signal and
integrate functions, NumPy's list-taking Python bodies) handed a container holding traced values
in each array-like argument position either differentiates it (checked against central finite
differences, for several shapes) or refuses it with an AdcliError: never a silent zero, never
another exception.

The rules are enumerated from the engine's registry, so a new rule is covered as soon as it has
an entry in the table of valid sample calls (tests/fuzz/library_specs.py); a rule without one
fails ``test_the_table_covers_every_library_rule``.

Containers tried in each position (the argument's values are the differentiated ``theta``):
``bare`` (the traced array itself, the supported baseline), ``list`` and ``tuple`` (nested, of
traced scalars), ``mixed`` (traced scalars and plain floats), ``rows`` (a list of traced rows)
and ``rows-mixed`` (traced rows and plain lists). An integer argument (an order, a count, a band
width) must be refused when any of its entries is traced.
"""

from __future__ import annotations

import fnmatch
import importlib
import warnings

import numpy as np
import pytest

import adcli
from adcli.engine import library
from adcli.errors import RuleError
from tests.fuzz.library_specs import SPECS, namespace, sample

FORMS = ("bare", "list", "tuple", "mixed", "rows", "rows-mixed")

# Cases that fail because of engine bugs not fixed yet: test-id pattern -> root cause. Each case
# matching a pattern is an xfail(strict=True): once fixed it passes, fails as XPASS, and its
# entry is removed here.
# (all of A1, lists in SciPy rules, and A2, shape parameters in lists, were fixed in a1542ab; G,
# np.copyto(traced, [plain floats]), in the commit that converts copyto's list source)
KNOWN_OPEN: dict = {}


def _cases():
    seen: dict = {}
    out = []
    for k, spec in enumerate(SPECS):
        n = seen[spec.rule] = seen.get(spec.rule, 0) + 1
        name = spec.rule if n == 1 else f"{spec.rule}#{n}"
        for p in spec.params:
            cid = f"{name}/{p.name}"
            causes = [c for pat, c in KNOWN_OPEN.items() if fnmatch.fnmatchcase(cid, pat)]
            marks = [pytest.mark.xfail(strict=True, reason=causes[0])] if causes else []
            out.append(pytest.param(k, p.name, id=cid, marks=marks))
    return out


def _loaded():
    for module in library.MODULES:
        importlib.import_module(module)
    return library.resolve_all()


def test_the_table_covers_every_library_rule():
    registered = set(_loaded())
    assert len(registered) >= 80, registered  # the enumeration itself works
    tabled = {s.rule for s in SPECS}
    assert registered - tabled == set(), f"library rules without sample calls in tests/fuzz/library_specs.py: " \
                                         f"{sorted(registered - tabled)}"
    assert tabled - registered == set(), f"sample calls of rules the engine does not register: {sorted(tabled - registered)}"


def _leaf(theta, i, traced_at, plain):
    return theta[i] if traced_at(i) else float(plain[i])


def _nested(theta, shape, start, traced_at, plain, kind):
    if len(shape) == 0:
        return _leaf(theta, start, traced_at, plain)
    step = int(np.prod(shape[1:]))
    items = [_nested(theta, shape[1:], start + j * step, traced_at, plain, kind) for j in range(shape[0])]
    return tuple(items) if kind is tuple else items


def build(form, theta, shape, plain):
    """The argument, in ``form``, from the flat values ``theta`` (traced or plain); ``plain``:
    theta's values, for the entries a mixed container holds as plain floats."""
    everywhere = lambda i: True  # noqa: E731
    if form == "bare":
        return theta.reshape(shape)
    if form in ("list", "tuple"):
        return _nested(theta, shape, 0, everywhere, plain, list if form == "list" else tuple)
    if form == "mixed":
        return _nested(theta, shape, 0, lambda i: i % 2 == 0, plain, list)
    rows = theta.reshape(shape)
    if form == "rows":
        return [rows[j] for j in range(shape[0])]
    # rows-mixed: traced rows, and plain nested lists for every other row
    step = int(np.prod(shape[1:]))
    return [rows[j] if j % 2 == 0 else _nested(plain, shape[1:], j * step, everywhere, plain, list)
            for j in range(shape[0])]


def _applies(form, shape) -> bool:
    size = int(np.prod(shape))
    if form in ("rows", "rows-mixed"):
        return len(shape) >= 2 and shape[0] >= 2
    if form == "mixed":
        return size >= 2 and len(shape) >= 1
    return len(shape) >= 1 or form == "bare"


def _quiet(fn, *a):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a)


def _fd(F, theta, i):
    """Central differences in theta[i] at two steps."""
    out = []
    for h in (1e-5, 1e-6):
        e = np.zeros_like(theta)
        e[i] = h
        out.append((_quiet(F, theta + e) - _quiet(F, theta - e)) / (2 * h))
    return out


def check(spec, position, shapes, form, rng) -> str | None:
    """None (differentiated correctly, or refused with an adcli error), or what went wrong."""
    param = next(p for p in spec.params if p.name == position)
    base = {p.name: spec.fixed[p.name] if p.name in spec.fixed else sample(p.domain, shapes[p.name], rng)
            for p in spec.params}
    value0 = base[position]
    shape = np.shape(value0)
    if not _applies(form, shape):
        return None
    theta0 = np.array(value0, dtype=float).ravel()
    code = compile(spec.call.format(**{p.name: f"_{p.name}" for p in spec.params}), f"<{spec.rule}>", "eval")
    ns = namespace()
    ref_out = _quiet(lambda: eval(code, dict(ns, **{f"_{k}": v for k, v in base.items()})))  # noqa: S307
    weights = np.cos(np.arange(np.size(ref_out)) * 0.7 + 1.0).reshape(np.shape(ref_out))

    def F(theta):
        vals = dict(base)
        vals[position] = build(form, theta, shape, theta0)
        out = eval(code, dict(ns, **{f"_{k}": v for k, v in vals.items()}))  # noqa: S307
        return np.sum(out * weights)

    where = f"{spec.call} with {position} as {form} of shape {shape}"
    try:
        value, g = _quiet(adcli.value_and_grad(F), theta0.copy())
    except adcli.AdcliError as e:
        if isinstance(e, RuleError):
            return f"{where}: a rule broke its contract: {type(e).__name__}: {e}"
        return None  # refused: an acceptable answer
    except Exception as e:  # noqa: BLE001 - any other exception is the finding
        return f"{where}: crashed with {type(e).__name__}: {str(e)[:200]}"
    if not param.differentiable:
        return f"{where}: a traced {position} (refused when traced bare) was accepted, gradient {g!r}"
    ref = _quiet(F, theta0.copy())
    if not np.allclose(value, ref, rtol=1e-12, atol=1e-14):
        return f"{where}: value {value!r}, NumPy/SciPy {ref!r}"
    if type(g) is not np.ndarray or g.shape != theta0.shape:
        return f"{where}: gradient {g!r} is not an array of shape {theta0.shape}"
    fds = [_fd(F, theta0, i) for i in range(theta0.size)]
    est = np.array([min(pair, key=lambda d: abs(d - gi)) for pair, gi in zip(fds, g)])
    scale = float(np.max(np.abs(est), initial=0.0))
    bad = np.abs(g - est) > spec.rtol * (np.abs(est) + scale) + 1e-8
    if bad.any():
        silent = " (a silent zero)" if np.all(g[bad] == 0) else ""
        return f"{where}: gradient {np.round(g, 6)!r}, finite differences {np.round(est, 6)!r}{silent}"
    return None


@pytest.mark.parametrize(("index", "position"), _cases())
def test_a_container_with_a_traced_leaf_is_differentiated_or_refused(index, position):
    spec = SPECS[index]
    rng = np.random.default_rng(index)
    failures = []
    for shapes in spec.shapes:
        for form in FORMS:
            msg = check(spec, position, shapes, form, rng)
            if msg:
                failures.append(msg)
    assert not failures, "\n".join(failures)


def test_the_check_catches_a_silent_zero_and_a_crash(monkeypatch):
    """The property test can fail: a rule that drops a traced value in a list, or crashes."""
    spec = next(s for s in SPECS if s.rule == "scipy.special.logsumexp")
    rng = np.random.default_rng(0)
    shapes = spec.shapes[0]
    assert check(spec, "a", shapes, "bare", rng) is None
    import scipy.special as sp

    real = sp.logsumexp
    monkeypatch.setattr(sp, "logsumexp", lambda a, b=None: real(adcli.stop_gradient(a), b=b))
    assert "silent zero" in check(spec, "a", shapes, "bare", rng)

    def broken(a, b=None):
        if not isinstance(a, np.ndarray):  # plain calls work; traced ones crash
            raise IndexError("planted")
        return real(a, b=b)

    monkeypatch.setattr(sp, "logsumexp", broken)
    assert "crashed with IndexError" in check(spec, "a", shapes, "bare", rng)


_COPYTO = {"plain-list": lambda x: [-1.3, 0.5], "traced-list": lambda x: [x[1], x[0]],
           "mixed-list": lambda x: [x[1] * 2.0, 0.25], "nested": lambda x: [[x[0], 0.5]]}


def _marked(cid):
    return [pytest.mark.xfail(strict=True, reason=KNOWN_OPEN[cid])] if cid in KNOWN_OPEN else []


@pytest.mark.parametrize("source", [pytest.param(k, id=f"numpy.copyto/{k}", marks=_marked(f"numpy.copyto/{k}"))
                                    for k in _COPYTO])
def test_copyto_of_a_list_into_a_traced_array(source):
    def f(x):
        y = x * 1.5
        np.copyto(y, _COPYTO[source](x))
        return np.sum(y * np.array([1.0, -2.0]))

    x0 = np.array([0.3, 0.7])
    try:
        value, g = adcli.value_and_grad(f)(x0.copy())
    except adcli.AdcliError as e:
        assert not isinstance(e, RuleError), e
        return  # refused: an acceptable answer
    assert value == f(x0.copy())
    fd = np.array([(f(x0 + e) - f(x0 - e)) / 2e-6 for e in np.eye(2) * 1e-6])
    assert np.allclose(g, fd, rtol=1e-6, atol=1e-8), (g, fd)
