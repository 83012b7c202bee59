"""np.inner and the N-d np.dot of traced values have NumPy's values bit for bit, and its layout:
their rules compute with NumPy's own function (a tensordot sums in another order)."""

from __future__ import annotations

import numpy as np
import pytest

from adcli.engine.core import make_tracer
from adcli.engine.tape import Tape
from adcli.testing import check_grad


def traced_value(fn, *xs):
    tape = Tape()
    out = fn(*[make_tracer(x, tape.leaf(), tape) for x in xs])
    return getattr(out, "value", out)


@pytest.mark.parametrize("fn", [np.inner, np.dot], ids=lambda f: f.__name__)
@pytest.mark.parametrize("sa", [(4,), (3, 4), (2, 3, 4), (5, 2, 3, 4)], ids=str)
@pytest.mark.parametrize("sb", [(4,), (4, 3), (2, 4, 3), (6, 4), (3, 4), (2, 3, 4)], ids=str)
def test_values_and_layout_are_numpys(fn, sa, sb):
    rng = np.random.default_rng(len(sa) * 10 + len(sb))
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    try:
        want = fn(a, b)
    except ValueError:
        with pytest.raises(ValueError):
            traced_value(fn, a, b)
        return
    for _ in range(5):
        a, b = rng.standard_normal(sa), rng.standard_normal(sb)
        want, got = fn(a, b), traced_value(fn, a, b)
        assert np.shape(got) == np.shape(want) and np.array_equal(got, want)
        if isinstance(want, np.ndarray):
            assert got.strides == want.strides


@pytest.mark.parametrize("fn, sa, sb", [(np.inner, (2, 3, 4), (3, 4)), (np.dot, (2, 3, 4), (2, 4, 3))])
def test_gradients_match_finite_differences(fn, sa, sb):
    rng = np.random.default_rng(3)
    w = rng.standard_normal(fn(np.ones(sa), np.ones(sb)).shape)
    check_grad(lambda a, b: np.sum(w * fn(a, b)), rng.standard_normal(sa), rng.standard_normal(sb), argnums=(0, 1))


@pytest.mark.parametrize("layout", ["strided", "reversed", "mixed shapes"])
def test_vdot_values_are_numpys_for_every_layout(layout):
    rng = np.random.default_rng(4)
    for _ in range(20):
        x = rng.standard_normal((4, 4))
        wide = np.zeros((4, 8))
        wide[:, ::2] = x
        a, b = {"strided": (wide[:, ::2], wide[:, ::2]), "reversed": (x[::-1, ::-1], x),
                "mixed shapes": (x, rng.standard_normal(16)[::-1])}[layout]
        assert traced_value(np.vdot, a, b) == np.vdot(a, b)
    check_grad(lambda u, v: np.vdot(u, v) ** 2, rng.standard_normal((2, 3)), rng.standard_normal(6), argnums=(0, 1))


@pytest.mark.parametrize("n", [-3, -2, -1, 1, 2, 3, 4, 5, 7])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)], ids=str)
def test_matrix_power_values_are_numpys(n, shape):
    # NumPy multiplies (a a) a for n = 3, not a (a a), and by binary powering above
    rng = np.random.default_rng(abs(n))
    for _ in range(5):
        a = rng.standard_normal(shape) * 0.5 + 2.0 * np.eye(shape[-1])
        assert np.array_equal(traced_value(lambda t: np.linalg.matrix_power(t, n), a), np.linalg.matrix_power(a, n))
