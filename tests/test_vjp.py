"""vjp: the reverse pass seeded with a cotangent (what the profiler's replays time)."""

import numpy as np
import pytest

from adcli.engine.grad import vjp
from adcli.errors import GradInputError
from adcli.profiler.replay import with_layout

rng = np.random.default_rng(5)


def test_vjp_of_an_array_output():
    x, v = rng.standard_normal(6), rng.standard_normal(6)
    value, g = vjp(np.sin, 0, v)(x)
    np.testing.assert_allclose(value, np.sin(x))
    np.testing.assert_allclose(g, v * np.cos(x))


def test_vjp_of_several_outputs_and_arguments():
    a, b = rng.standard_normal((3, 3)), rng.standard_normal(3)
    ca, cb = rng.standard_normal((3, 3)), rng.standard_normal(3)
    value, (ga, gb) = vjp(lambda a, b: (a * 2.0, a @ b), (0, 1), (ca, cb))(a, b)
    np.testing.assert_allclose(ga, 2.0 * ca + np.outer(cb, b))
    np.testing.assert_allclose(gb, a.T @ cb)


def test_vjp_cotangent_of_the_wrong_shape_is_refused():
    with pytest.raises(GradInputError, match="shape"):
        vjp(np.sin, 0, np.ones(2))(np.ones(3))


@pytest.mark.parametrize("descriptor", ["f64[2d]", "f64[2d,F]", "f64[2d,strided]"])
def test_replays_restore_the_recorded_layout(descriptor):
    from adcli.engine.descriptors import describe

    a = rng.standard_normal((4, 5))
    b = with_layout(a, descriptor)
    assert describe(b) == descriptor and np.array_equal(a, b)
