"""Property tests: random shapes, broadcasting and axes against finite differences."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import adcli
from adcli.testing import check_grad

BINARY = [np.add, np.subtract, np.multiply, np.true_divide, np.maximum, np.hypot, np.arctan2, np.logaddexp]


@st.composite
def broadcast_pair(draw):
    """Two shapes that broadcast together: drop leading axes and set some to 1 independently."""
    base = draw(st.lists(st.integers(1, 4), min_size=0, max_size=3))
    shapes = []
    for _ in range(2):
        lead = draw(st.integers(0, len(base)))
        shape = [1 if draw(st.booleans()) else n for n in base[lead:]]
        shapes.append(tuple(shape))
    return shapes


@settings(max_examples=40, deadline=None)
@given(broadcast_pair(), st.sampled_from(BINARY), st.integers(0, 2**16))
def test_binary_ufuncs_under_broadcasting(shapes, ufunc, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 1.5, shapes[0])
    b = rng.uniform(0.5, 1.5, shapes[1]) + 0.01  # no exact ties for maximum
    out_shape = np.broadcast_shapes(a.shape, b.shape)
    w = rng.standard_normal(out_shape)
    f = lambda a, b: np.sum(ufunc(a, b) * w)
    ga, gb = check_grad(f, a, b, argnums=(0, 1), directions=2)
    assert np.shape(ga) == a.shape and np.shape(gb) == b.shape


@st.composite
def array_and_axis(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    axes = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1),
                          st.sets(st.integers(0, len(shape) - 1), min_size=1).map(tuple)))
    return shape, axes


@settings(max_examples=40, deadline=None)
@given(array_and_axis(), st.sampled_from(["sum", "prod", "mean", "max", "min"]), st.booleans(), st.integers(0, 2**16))
def test_reductions_over_random_axes(shape_axes, name, keepdims, seed):
    shape, axis = shape_axes
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 1.5, shape)
    reduce = getattr(np, name)
    w = rng.standard_normal(np.shape(reduce(x, axis=axis, keepdims=keepdims)))
    check_grad(lambda x: np.sum(reduce(x, axis=axis, keepdims=keepdims) * w), x, directions=2)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-6, 5), min_size=1, max_size=8), st.integers(0, 2**16))
def test_gather_with_repeats_accumulates(indices, seed):
    x = np.random.default_rng(seed).standard_normal(6)
    g = adcli.grad(lambda x: np.sum(x[np.array(indices)] ** 2))(x)
    expected = np.zeros(6)
    for i in indices:
        expected[i] += 2 * x[i]
    np.testing.assert_allclose(g, expected)
