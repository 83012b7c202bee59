"""Programs ported from autograd by swapping imports: a size-1 output and ``argnum=`` work."""

import numpy as np
import pytest

import adcli
from adcli.errors import GradInputError
from adcli.testing import check_grad


@pytest.mark.parametrize("shape", [(1,), (1, 1), (1, 1, 1)])
def test_a_size_one_output_is_differentiated_like_a_scalar(shape):
    x = np.linspace(0.5, 1.5, 3)

    def f(v):
        return np.reshape(np.sum(np.sin(v) * v), shape) * 2.0

    value, g = adcli.value_and_grad(f)(x)
    assert np.shape(value) == shape  # the value as the function returned it, as autograd does
    np.testing.assert_allclose(g, 2.0 * (np.cos(x) * x + np.sin(x)), rtol=1e-12)
    check_grad(lambda v: np.sum(f(v)), x)  # finite differences agree
    np.testing.assert_allclose(adcli.grad(lambda v: v * 2.0)(np.array([1.0])), [2.0])


def test_a_larger_output_is_still_refused():
    with pytest.raises(GradInputError, match=r"returned shape \(2,\)"):
        adcli.grad(lambda v: v * 2.0)(np.array([1.0, 2.0]))


def test_autograds_argnum_spelling():
    a, b = np.array([1.0, 2.0]), np.array([3.0, -1.0])

    def f(u, v):
        return np.sum(u * v ** 2)

    np.testing.assert_allclose(adcli.grad(f, argnum=1)(a, b), 2 * a * b)
    np.testing.assert_allclose(adcli.value_and_grad(f, argnum=0)(a, b)[1], b ** 2)
    with pytest.raises(GradInputError, match="not both"):
        adcli.grad(f, 1, argnum=0)
