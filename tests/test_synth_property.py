"""adcli.synth's differential property test on CI's fixed sample (tests/fuzz/synth.py): programs in
the subset, drawn inside it and by the fuzzer's generator, whose synthesized gradient must equal
the engine's derived gradient and finite differences (no wrong value or gradient, no exception in
the generated rule); most drawn programs and some of the fuzzer's must be accepted, so the test
cannot pass by refusing everything. The bugs the property test found (16, all fixed) are kept
below as regression tests, each a minimal program. A larger sample:

    python -m tests.fuzz.synth --seeds 3000 --jobs 2
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tests.fuzz import synth
from tests.fuzz.synth import FAILURES, Case, check, check_synthesis, construct, fuzz_case, subset_case

SUBSET_SAMPLE = 150
FUZZ_SAMPLE = 150

# The bugs found (adcli/synth) and fixed, each with a minimal program: source of f (numpy as np,
# scipy.stats as st), and its arguments.
BUGS = {
    "loop-variable": (
        "a loop variable read after its loop: the pullback reads it before the reversed loop binds "
        "it (UnboundLocalError, or NameError when no reversed loop binds it)",
        """
def f(x):
    for i in range(3):
        x = x * 2.0
    return np.sum(x * i)
""", lambda: (np.ones(2),)),
    "alias": (
        "y op= e is rewritten as y = y op e, but Python updates y's array in place: a view or another "
        "name of that array (t = y.T, y.ravel(), y.reshape(..), np.diagonal(y), z = y) changes with it "
        "in f and not in the rule (wrong value and gradient)",
        """
def f(x):
    y = x * 1.0
    t = y.T
    y *= 2.0
    return np.sum(t)
""", lambda: (np.array([1.0, 2.0, 3.0]),)),
    "float32-update": (
        "y += e on a float32 array y with a float64 e keeps float32 in place; rewritten as y = y + e it "
        "is float64 (another value and dtype)",
        """
def f(x, w):
    y = x * 1.0
    y += w
    return np.sum(y * y)
""", lambda: (np.ones(3, np.float32), np.full(3, 0.1))),
    "attribute-of-method": (
        "the .T of a method call's value: the pullback recomputes it as `None.T` (AttributeError)",
        """
def f(x):
    return np.sum(x.reshape(2, 2).T)
""", lambda: (np.array([1.0, 0.2, 0.3, 1.1]),)),
    "namedtuple-result": (
        "an item of a function's named-tuple result (np.linalg.eigh, qr, svd, slogdet): runtime.dense "
        "rebuilds the named tuple from one item (TypeError: EighResult.__new__() missing ...)",
        """
def f(x):
    return np.sum(np.linalg.eigh(x @ x.T + np.eye(2))[0])
""", lambda: (np.array([[1.0, 0.3], [0.2, 0.7]]),)),
    "conversion-call": (
        "np.ascontiguousarray, np.asarray of a list, np.full(shape, value) of a traced value: the "
        "engine differentiates f, but call_vjp replays the call alone and refuses (TracingError)",
        """
def f(x):
    y = np.ascontiguousarray(x.T)
    return np.sum(y * y)
""", lambda: (np.array([[1.0, 0.2], [0.3, 1.1]]),)),
    "write-extra-axis": (
        "a write whose value has an extra leading axis of length 1 (y[0:2] = x[None]): the value's "
        "cotangent is summed over the written elements (wrong gradient)",
        """
def f(x):
    y = np.zeros_like(x)
    y[:] = x[None]
    return np.sum(y * np.array([1.0, 3.0]))
""", lambda: (np.array([1.0, 0.2]),)),
    "concatenate-axis-none": (
        "np.concatenate(..., axis=None): runtime.unconcatenate indexes a shape with None (TypeError)",
        """
def f(x):
    y = np.concatenate([x, x], axis=None)
    return np.sum(y * y)
""", lambda: (np.array([[1.0, 0.2]]),)),
    "index-trick": (
        "np.r_[...] and np.c_[...] of differentiable values: a subscript of a module's attribute is "
        "taken for a constant, a silent zero gradient",
        """
def f(x):
    y = np.r_[x, x * 2.0]
    return np.sum(y * np.array([1.0, 2.0, 3.0, 4.0]))
""", lambda: (np.array([-0.57, 0.3]),)),
    "zero-adjoint": (
        "an adjoint that received nothing (a branch not taken, a loop run zero times) stays the scalar "
        "0.0, and a broadcasting VJP then gives a cotangent of the other operand's shape, which "
        "_unbroadcast cannot grow: the wrong shape (here (2,) for w of shape (3, 2)), or an IndexError "
        "in sum_to_shape when it has fewer dimensions",
        """
def f(x, w):
    v = w * x
    s = np.sum(x)
    if s > 100.0:
        s = s + np.sum(v)
    return s
""", lambda: (np.array([1.0, 2.0]), np.ones((3, 2)))),
    "sum-of-0d-array": (
        "np.sum's cotangent is spread back with _unbroadcast, which fails on a 0-d ndarray cotangent "
        "(np.where of scalars gives one): IndexError in sum_to_shape",
        """
def f(x):
    s = np.sum(np.exp(x))
    return np.sum(np.where(s > 0.1, s, np.sum(x)))
""", lambda: (np.array([-0.95]),)),
    "rebound-parameter-kind": (
        "kinds.py: with a parameter rebound (x = x * 2.0), s = 0.0; s = s + x is concluded a scalar, "
        "so np.sum(s)'s adjoint is written as plain arithmetic (wrong gradient)",
        """
def f(x):
    x = x * 2.0
    s = 0.0
    s = s + x
    s = s + np.sum(s)
    return np.sum(s * np.array([1.0, 2.0]))
""", lambda: (np.array([-0.266, 1.269]),)),
    "float32-0d-argument": (
        "a 0-d float32 array argument gets a numpy.float64 cotangent (x * np.sin(c), c a float): "
        "_unbroadcast leaves a scalar cotangent's dtype as it is, the rule contract wants float32",
        """
def f(x, c):
    return np.sum(x * np.sin(c))
""", lambda: (np.array(1.63, np.float32), -0.72)),
    "write-of-method-value": (
        "a write y[0] = v of a name bound to a method call's value (v = x.prod(axis=0)): the "
        "pullback reads v, which it was not given (NameError)",
        """
def f(x):
    v = x.prod(axis=0)
    y = np.ones_like(x)
    y[0] = v
    return np.sum(y * np.array([1.0, 2.0]))
""", lambda: (np.array([[1.0, 2.0], [3.0, 4.0]]),)),
    "write-scalar-adjoint": (
        "a write into a one-element array made from a 0-d argument (x[..., None]): the adjoint is a "
        "numpy.float64 and the reversed write assigns into it (TypeError: does not support item assignment)",
        """
def f(x):
    v1 = x[..., None]
    v3 = np.empty_like(v1)
    v3[0] = np.sin(v1[0])
    v4 = np.logaddexp(np.sum(v3), v3)
    return np.sum(v4[0] * 0.5)
""", lambda: (np.array(1.41),)),
    "masked-array-inside": (
        "a masked array made inside f: the rule differentiates its masked entries too (wrong gradient; "
        "the engine refuses such a function)",
        """
def f(x):
    v = np.ma.array(np.array([0.26, 0.86]), mask=np.array([True, False])) + x
    return np.sum(np.arctan2(v, np.mean(x)) * np.array([1.0, 2.0]))
""", lambda: (np.array([-0.41, -1.45]),)),
}

# Found by a larger sample (3000 programs) after the fixes above: each a regression now.
BUGS.update({
    "astype-alias": (
        "x.astype(dtype, copy=False) returns x itself: a name bound to it changes with a write into x",
        """
def f(x):
    y = x.T.copy()
    z = y.astype(np.float64, copy=False)
    y[:] *= 1.6
    return np.sum(np.sin(z))
""", lambda: (np.array([0.3, -0.7]),)),
    "zero-adjoint-sum-axis": (
        "an adjoint nothing reached (np.full_like(v, c) reads only v's shape) met np.sum(x, axis=1)'s "
        "written adjoint: AxisError spreading the scalar 0.0",
        """
def f(x):
    v = np.sum(np.expm1(x), axis=1)
    w = np.full_like(v, 0.5)
    return np.sum(w * np.arange(4.0)) + np.sum(x)
""", lambda: (np.array([[1.79, -1.47], [-1.39, -0.59], [-1.45, 1.07], [0.55, -0.87]]),)),
})

BUGS.update({
    "zero-adjoint-matmul": (
        "an adjoint nothing reached (np.full_like reads only its operand's shape) met matmul's VJP, "
        "which needs a cotangent with its core dimensions (ValueError)",
        """
def f(x1, x2):
    v3 = np.matmul(x1, x1)
    v6 = np.full_like(v3, 0.5)
    return np.sum(v6 * x2)
""", lambda: (np.array([[[-0.75]]]), np.array([[[0.11]]]))),
    "builtin-sum-abs": (
        "Python's sum and abs of differentiable values were refused (their gradient lost); now "
        "differentiated through the engine",
        """
def f(x, w):
    return np.sum(abs(sum([x, w * x, x * x]))) + abs(np.sum(w) - 0.3)
""", lambda: (np.array([0.4, -1.2, 0.7]), np.array([1.0, 2.0, -0.5]))),
    "zero-adjoint-slice-of-list": (
        "an adjoint nothing reached (np.ones_like reads only its operand's shape) handed to a slice of "
        "a list (np.array_split(...)[::-1]) crashed the scatter into the list's adjoint (TypeError)",
        """
def f(x0):
    v1 = x0[np.array([False, True, True, False]), None]
    v2 = np.concatenate(np.array_split(v1, 2, axis=0)[::-1], axis=0)
    return np.sum(np.ones_like(v2) * x0[0])
""", lambda: (np.array([0.03, 1.49, -0.01, 0.53]),)),
})

# Seeds of the fixed samples that fail because of the bugs above (the sample's own outcome, or the
# outcome of a refused fuzz program's prefix): left out of the sample's assertion until fixed.
KNOWN_OPEN: dict = {"subset": {}, "fuzz": {}}


def _report(failures) -> str:
    lines = []
    for o in failures[:4]:
        expected = f"expected {o.expected[:400]}\n" if o.category == "wrong" else ""
        lines.append(f"{o.population} seed {o.seed}: {o.category} ({o.check}): {o.message}\n{o.body()}\n"
                     f"args = ({o.args},)\n{expected}observed {o.observed[-800:]}")
    return (f"{len(failures)} failure(s); the first (shrink one: python -m tests.fuzz.synth --population "
            f"{failures[0].population.split('-')[0]} --start {failures[0].seed} --seeds 1):\n\n" + "\n\n".join(lines))


@pytest.fixture(scope="module")
def subset_outcomes():
    return [check_synthesis(seed, "subset") for seed in range(SUBSET_SAMPLE)]


@pytest.fixture(scope="module")
def fuzz_outcomes():
    return [check_synthesis(seed, "fuzz") for seed in range(FUZZ_SAMPLE)]


def test_programs_drawn_in_the_subset_are_accepted_and_their_rules_are_right(subset_outcomes):
    known = KNOWN_OPEN["subset"]
    failures = [o for o in subset_outcomes if o.failed and o.seed not in known]
    if failures:
        pytest.fail(_report(failures), pytrace=False)
    # even seeds are synthesized for their signature (as the profiler and export do), odd ones for
    # any arguments, where an in-place update of a name that may hold a shared array is refused
    for parity, share in ((0, 0.9), (1, 0.6)):
        drawn = [o for o in subset_outcomes if o.seed % 2 == parity]
        assert len([o for o in drawn if o.accepted]) >= share * len(drawn), synth.summary(drawn)
    accepted = [o for o in subset_outcomes if o.accepted]
    checked = [o for o in accepted if o.category == "ok"]
    assert len(checked) >= 0.5 * SUBSET_SAMPLE, synth.summary(subset_outcomes)  # not all skipped as nonsmooth


def test_the_fuzzers_programs_in_the_subset_get_right_rules(fuzz_outcomes):
    known = KNOWN_OPEN["fuzz"]
    failures = [o for o in synth.findings(fuzz_outcomes) if o.seed not in known]
    if failures:
        pytest.fail(_report(failures), pytrace=False)
    accepted = [o for o in fuzz_outcomes if o.accepted]
    prefixes = [o.prefix for o in fuzz_outcomes if o.prefix is not None and o.prefix.accepted]
    assert len([o for o in accepted if o.category == "ok"]) >= 10, synth.summary(fuzz_outcomes)
    assert len(prefixes) >= 10, synth.summary(fuzz_outcomes)
    refused = [o for o in fuzz_outcomes if o.category == "refused"]
    assert all(o.construct for o in refused)  # every refusal names its construct


@pytest.mark.parametrize("bug", list(BUGS))
def test_minimal_reproductions_of_the_bugs_found(bug):
    _, body, args = BUGS[bug]
    source = f"import numpy as np\nimport scipy.stats as st\n\n{body.lstrip()}"
    o = check(Case("repro", 0, source, list(args())))
    assert o.category not in FAILURES, \
        f"{o.category} ({o.check}): {o.message}\nexpected {o.expected}\nobserved {o.observed}"


def test_known_open_seeds_name_a_bug():
    assert all(cause in BUGS for seeds in KNOWN_OPEN.values() for cause in seeds.values())


# --- the property test itself --------------------------------------------------------------------


def test_programs_are_the_same_for_the_same_seed():
    for seed in (3, 17):
        a, b = subset_case(seed), subset_case(seed)
        assert a.source == b.source and all(np.array_equal(x, y) for x, y in zip(a.args, b.args))
        assert fuzz_case(seed).source == fuzz_case(seed).source
    assert subset_case(3).source != subset_case(4).source


def test_a_wrong_or_crashing_rule_is_a_finding(monkeypatch):
    case = next(c for c in map(subset_case, range(40)) if check(c).category == "ok")
    real = synth.synthesize

    def planted(wrapper: str):
        """The rule with its pullback wrapped (fwd's pullback closure calls the module's name)."""
        def synthesize(f, args=None, wrt=None):
            s = real(f, args, wrt=wrt)
            return replace(s, source=s.source + "\n\n_real_pullback = pullback\n\n\ndef pullback(*a):\n" + wrapper)
        return synthesize

    monkeypatch.setattr(synth, "synthesize", planted(
        "    return tuple(None if c is None else c * 1.5 for c in _real_pullback(*a))\n"))
    o = check(case)
    assert o.category == "wrong" and o.check in ("engine", "fd"), (o.category, o.check, o.message)
    monkeypatch.setattr(synth, "synthesize", planted("    raise ZeroDivisionError('planted')\n"))
    o = check(case)
    assert o.category == "crash" and o.check == "pullback" and "planted" in o.message


def test_a_refusal_is_grouped_by_its_construct():
    msg = "cannot synthesize f: a call of np.cumsum, which is not a function of NumPy at <synth-fuzz-3>:41"
    assert construct(msg) == "a call of np.cumsum"
    assert construct("cannot synthesize f: the operator v12 % 1.0 on a differentiable value at x.py:3") == \
        "the operator v % N on a differentiable value"

