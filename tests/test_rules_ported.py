"""NumPy functions ported programs use, newly served: np.select, np.cross, np.pad (native rules
built from traced operations) and the split family, rollaxis, atleast_3d, gradient (verified
derivations, tests/test_derived.py). Values, dtypes and finite differences; clear refusals."""

import numpy as np
import pytest

import adcli
from adcli.errors import UnsupportedError
from adcli.testing import check_grad, check_rule

rng = np.random.default_rng(5)
M = rng.standard_normal((4, 3))


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors are deprecated:DeprecationWarning")
@pytest.mark.parametrize("args,kwargs", [
    ((M, M[::-1]), {}),
    ((M[:, :2], M[:, 1:]), {}),  # 2-vectors with 3-vectors
    ((M.T, M.T[:, ::-1]), {"axis": 0}),
    ((M.astype(np.float32), M.astype(np.float32) * 2), {}),
    ((M[0], M), {}),  # broadcasting
])
def test_cross(args, kwargs):
    report = check_rule(np.cross, *args, kwargs=kwargs, timing=False)
    assert report.rule == "native rule"


@pytest.mark.parametrize("pad_width,value", [(1, 0), (((1, 0), (2, 3)), 0), ((0, 2), -1.5)])
def test_pad_constant(pad_width, value):
    report = check_rule(np.pad, M, pad_width, kwargs={"constant_values": value}, timing=False)
    assert report.rule == "native rule"
    check_rule(np.pad, M.astype(np.float32), pad_width, timing=False)


def test_pad_other_modes_are_refused_by_name():
    with pytest.raises(UnsupportedError, match="mode='edge'"):
        adcli.grad(lambda a: np.sum(np.pad(a, 1, mode="edge")))(M)


def test_select_first_true_condition_wins():
    conds = [M > 0.5, M > 0.0]
    f = lambda a: np.select(conds, [a * 2.0, a ** 2], default=-a)  # noqa: E731
    np.testing.assert_array_equal(adcli.value_and_grad(lambda a: np.sum(f(a) * M))(M)[0], np.sum(f(M) * M))
    g = adcli.grad(lambda a: np.sum(f(a)))(M)
    np.testing.assert_allclose(g, np.select(conds, [np.full_like(M, 2.0), 2 * M], default=-np.ones_like(M)))
    check_rule(np.select, conds, [M * 2.0, M ** 2], kwargs={"default": M}, timing=False)


def test_select_conditions_from_traced_values_and_numpys_errors():
    g = adcli.grad(lambda a: np.sum(np.select([a > 0], [a ** 2])))(M)  # comparisons give plain booleans
    np.testing.assert_allclose(g, np.where(M > 0, 2 * M, 0.0))
    with pytest.raises(ValueError, match="same length"):
        adcli.grad(lambda a: np.sum(np.select([a > 0], [a, a])))(M)


SWV = np.lib.stride_tricks.sliding_window_view


@pytest.mark.parametrize("args,kwargs", [((M[0], 2), {}), ((M, (2, 2)), {}), ((M, 2), {"axis": 0}),
                                         ((M.astype(np.float32), (3,)), {"axis": (1,)})])
def test_sliding_window_view(args, kwargs):
    report = check_rule(SWV, *args, kwargs=kwargs, timing=False)
    assert report.rule == "native rule"


def test_sliding_window_view_is_read_only_as_numpys():
    def write(x):
        w = SWV(x, 2)
        w[0, 0] = 1.0
        return np.sum(w)

    with pytest.raises(ValueError, match="read-only"):
        write(M[0].copy())
    with pytest.raises(ValueError, match="read-only"):
        adcli.grad(write)(M[0].copy())


def test_partition_positions_match_numpys_arrangement_even_when_argpartition_differs():
    from adcli.engine.rules.shape import _positions

    x = np.array([[3.0, 1.0, 2.0, 5.0, 4.0, 0.5], [0.1, 0.9, 0.4, 0.7, 0.2, 0.3]])
    ans = np.partition(x, 2, axis=1)
    # the same partition with each segment in another order, as another selection could leave it
    other = np.concatenate([np.sort(ans[:, :2], axis=1)[:, ::-1], ans[:, 2:3], np.sort(ans[:, 3:], axis=1)[:, ::-1]], axis=1)
    assert not np.array_equal(other, ans)
    for target in (ans, other):
        idx = _positions(x, target, 2, 1, "introselect")
        np.testing.assert_array_equal(np.take_along_axis(x, idx, axis=1), target)
        assert sorted(idx[0]) == list(range(6)) and sorted(idx[1]) == list(range(6))
    g = adcli.grad(lambda v: np.sum(np.partition(v, 2, axis=1)[:, :2] * np.array([1.0, 2.0])))(x)
    smallest = np.argsort(x, axis=1)[:, :2]
    assert np.count_nonzero(g) == 4 and all(set(np.flatnonzero(g[i])) == set(smallest[i]) for i in range(2))


def test_ufunc_at_scatters_into_a_traced_array_and_refuses_a_plain_one():
    x = np.array([1.0, 2.0, 3.0, 0.5])

    def f(v):
        out = np.zeros_like(v, shape=(3,))
        np.add.at(out, [0, 1, 1, 2], v)  # repeated indices accumulate
        np.subtract.at(out, np.array([2, 2]), v[:2] * 2.0)
        return np.sum(out ** 2)

    check_grad(f, x)
    out = np.zeros(3)
    np.add.at(out, [0, 1, 1, 2], x)
    np.subtract.at(out, np.array([2, 2]), x[:2] * 2.0)
    np.testing.assert_allclose(adcli.grad(f)(x), 2 * out[[0, 1, 1, 2]] - np.array([2, 2, 0, 0]) * 2 * out[2])

    def g(v):
        m = v.reshape(2, 2) * 1.0
        np.add.at(m, (np.array([0, 0]), np.array([1, 1])), 3.0 * v[0])
        return np.sum(m ** 2)

    check_grad(g, x)
    with pytest.raises(adcli.AdcliError, match=r"np\.add\.at into a plain array.*np\.bincount"):
        adcli.grad(lambda v: np.add.at(np.zeros(3), [0, 1, 1, 2], v))(x)


X23 = np.arange(6.0).reshape(2, 3) / 3.0 + 0.1


@pytest.mark.parametrize("f", [
    lambda v: np.sum(np.fft.fftshift(v) * np.arange(6.0).reshape(2, 3)),
    lambda v: np.sum(np.fft.ifftshift(v, axes=1) * np.arange(6.0).reshape(2, 3)),
    lambda v: np.sum(np.linspace(v[0, 0], v[1, 2], 5) ** 2),
    lambda v: np.sum(np.linspace(v[0], v[1] * 3.0, 4, axis=1) ** 2),
    lambda v: np.sum(np.linspace(v[0, 0], 3.0, 4, endpoint=False, retstep=True)[1] * np.linspace(v[0, 1], 3.0, 4)),
    lambda v: np.sum(np.real(v) ** 2 + np.imag(v) + np.real_if_close(v) + np.angle(v)),
    lambda v: np.sum(np.nan_to_num(v) ** 2),
    lambda v: np.std(v[0]) + np.std(v[:, :1], axis=1).sum(),  # a one-element std has gradient 0, not nan
], ids=["fftshift", "ifftshift", "linspace", "linspace-arrays", "linspace-retstep", "real-imag-angle", "nan_to_num",
        "std-one-element"])
def test_more_numpy_functions_ported_programs_call(f):
    check_grad(f, X23)


def test_nan_to_num_passes_no_gradient_to_the_entries_it_replaces():
    g = adcli.grad(lambda v: np.sum(np.nan_to_num(v, posinf=5.0, neginf=-5.0) ** 2))(np.array([1.5, np.nan, np.inf, -np.inf]))
    np.testing.assert_array_equal(g, [3.0, 0.0, 0.0, 0.0])


@pytest.mark.parametrize("f", [
    lambda v: np.mean([v, v + 2.0]), lambda v: np.std([v[0, 0], v[1, 1] * 2.0]), lambda v: np.var([v, v ** 2]),
    lambda v: np.linalg.norm([v[0, 0], v[1, 1], 3.0]), lambda v: np.sum(np.append([v[0, 0], 1.0], [v[1, 2]])),
    lambda v: np.sum([np.sum(v), 2.0 * v[0, 1]]), lambda v: np.max([v[0, 0], v[1, 1] * 3.0]),
    lambda v: np.min([v[0, 2], v[1, 1] * 3.0]) + np.prod([v[0, 0], 2.0, v[1, 0]]),
], ids=["mean", "std", "var", "norm", "append", "sum", "max", "min-prod"])
def test_numpy_reductions_of_python_lists_holding_traced_values(f):
    check_grad(f, X23)
    assert adcli.value_and_grad(f)(X23)[0] == f(X23)


def test_grad_of_a_bool_or_integer_output_is_refused():
    with pytest.raises(adcli.AdcliError, match="only a float output can be differentiated"):
        adcli.grad(lambda v: v[0] > 0.0)(X23[0])
    with pytest.raises(adcli.AdcliError, match="returned int64"):
        adcli.grad(lambda v: np.sum(v > 0.2))(X23[0])


def test_append_differentiated_with_respect_to_a_list():
    grads = adcli.grad(lambda a, b: np.sum(np.append(a, b) * np.arange(4.0)), argnums=(0, 1))([1.0, 2.0, 3.0], 4.0)
    assert grads == ([0.0, 1.0, 2.0], 3.0)
    check_grad(lambda a, b: np.sum(np.append(a, b) ** 2), [1.0, 2.0, 3.0], 4.0)
