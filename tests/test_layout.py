"""Views and memory layout as NumPy has them: for every supported operation, on inputs of several
layouts (C, F, non-contiguous, negative strides), adcli's forward value has NumPy's type, shape,
dtype, strides, contiguity flags and writeability, and it shares memory with its operand exactly
when NumPy's does; a result that shares memory is tracked as a view by the engine (a write
that NumPy would show through it is then followed or refused, see test_regressions.py)."""

from __future__ import annotations

import numpy as np
import pytest

import adcli
from adcli.engine.core import Tracer

rng = np.random.default_rng(11)


def layouts(shape):
    """The same values in several memory layouts."""
    base = rng.uniform(0.5, 1.5, shape)
    out = {"C": np.ascontiguousarray(base), "F": np.asfortranarray(base)}
    big = np.zeros(tuple(2 * n for n in shape))
    sl = tuple(slice(None, None, 2) for _ in shape)
    big[sl] = base
    out["strided"] = big[sl]
    flipped = np.ascontiguousarray(base[(slice(None, None, -1),) * len(shape)])
    out["negative"] = flipped[(slice(None, None, -1),) * len(shape)]
    return out


M2 = (3, 4)
SQ = (3, 3)
V1 = (5,)
T3 = (2, 3, 4)

# name -> (input shape, operation); the operation runs on a plain array and on a tracer alike.
OPS = {
    # views in NumPy
    "reshape": (M2, lambda x: x.reshape(4, 3)),
    "reshape-F": (M2, lambda x: x.reshape((4, 3), order="F")),
    "np.reshape": (M2, lambda x: np.reshape(x, (2, 6))),
    "ravel": (M2, lambda x: x.ravel()),
    "ravel-F": (M2, lambda x: np.ravel(x, order="F")),
    ".T": (M2, lambda x: x.T),
    "transpose": (T3, lambda x: np.transpose(x, (2, 0, 1))),
    "swapaxes": (T3, lambda x: np.swapaxes(x, 0, 2)),
    "moveaxis": (T3, lambda x: np.moveaxis(x, 0, -1)),
    "matrix_transpose": (T3, lambda x: np.matrix_transpose(x)),
    "mT": (T3, lambda x: x.mT),
    "squeeze": ((3, 1, 4), lambda x: np.squeeze(x)),
    "expand_dims": (M2, lambda x: np.expand_dims(x, 1)),
    "None-index": (M2, lambda x: x[:, None]),
    "broadcast_to": (V1, lambda x: np.broadcast_to(x, (2, 5))),
    "basic-slice": (M2, lambda x: x[1:, ::2]),
    "negative-slice": (M2, lambda x: x[::-1, 1:3]),
    "int-index-row": (M2, lambda x: x[1]),
    "Ellipsis": (T3, lambda x: x[..., 1]),
    "diagonal": (SQ, lambda x: np.diagonal(x)),
    "diagonal-offset": (M2, lambda x: x.diagonal(1)),
    "diag-2d": (SQ, lambda x: np.diag(x)),
    "einsum-diag": (SQ, lambda x: np.einsum("ii->i", x)),
    "einsum-transpose": (M2, lambda x: np.einsum("ij->ji", x)),
    "einsum-identity": (M2, lambda x: np.einsum("ij", x)),
    "astype-same-nocopy": (M2, lambda x: x.astype(np.float64, copy=False)),
    "atleast_2d": (V1, lambda x: np.atleast_2d(x)),
    "atleast_1d": (V1, lambda x: np.atleast_1d(x)),
    "flip": (M2, lambda x: np.flip(x)),
    "fliplr": (M2, lambda x: np.fliplr(x)),
    "flipud": (M2, lambda x: np.flipud(x)),
    "rot90": (M2, lambda x: np.rot90(x)),
    "real": (M2, lambda x: x.real),
    # copies in NumPy
    "copy-method": (M2, lambda x: x.copy()),
    "copy-method-F": (M2, lambda x: x.copy(order="F")),
    "np.copy": (M2, lambda x: np.copy(x)),
    "flatten": (M2, lambda x: x.flatten()),
    "astype": (M2, lambda x: x.astype(np.float32)),
    "astype-same": (M2, lambda x: x.astype(np.float64)),
    "int-array-index": (M2, lambda x: x[[2, 0]]),
    "int-array-index-col": (M2, lambda x: x[:, [3, 1, 1]]),
    "bool-mask": (M2, lambda x: x[np.arange(12).reshape(3, 4) % 3 == 0]),
    "mixed-index": (T3, lambda x: x[:, [0, 2], 1:3]),
    "take-axis1": (M2, lambda x: np.take(x, [0, 2], axis=1)),
    "take-flat": (M2, lambda x: np.take(x, [0, 5, -1])),
    "repeat": (M2, lambda x: x.repeat(2)),
    "repeat-axis": (M2, lambda x: np.repeat(x, 2, axis=1)),
    "tile": (M2, lambda x: np.tile(x, (1, 2))),
    "roll": (M2, lambda x: np.roll(x, 1, axis=1)),
    "triu": (SQ, lambda x: np.triu(x)),
    "tril": (SQ, lambda x: np.tril(x, -1)),
    "diag-1d": (V1, lambda x: np.diag(x)),
    "kron": (SQ, lambda x: np.kron(x, x)),
    "outer": (V1, lambda x: np.outer(x, x)),
    "concatenate": (M2, lambda x: np.concatenate([x, x * 2.0], axis=1)),
    "stack": (M2, lambda x: np.stack([x, x], axis=1)),
    "hstack": (M2, lambda x: np.hstack([x, x])),
    "vstack": (M2, lambda x: np.vstack([x, x])),
    "column_stack": (V1, lambda x: np.column_stack([x, x])),
    "append": (M2, lambda x: np.append(x, x)),
    "diff": (M2, lambda x: np.diff(x, axis=1)),
    "ediff1d": (M2, lambda x: np.ediff1d(x, to_end=[1.0])),
    "where": (M2, lambda x: np.where(np.arange(12).reshape(3, 4) % 2 == 0, x, -x)),
    "clip": (M2, lambda x: np.clip(x, 0.7, 1.3)),
    "sort": (M2, lambda x: np.sort(x, axis=0)),
    "zeros_like": (M2, lambda x: np.zeros_like(x)),
    "empty_like-shape": (M2, lambda x: np.empty_like(x, shape=(2, 2)) * 0.0),
    "full_like": (M2, lambda x: np.full_like(x, 2.0)),
    # elementwise and reductions
    "sin": (M2, lambda x: np.sin(x)),
    "neg": (M2, lambda x: -x),
    "mul-scalar": (M2, lambda x: x * 2.0),
    "add-self": (M2, lambda x: x + x),
    "add-C-operand": (M2, lambda x: x + np.ones(M2)),
    "add-broadcast-row": (M2, lambda x: x + np.arange(4.0)),
    "add-broadcast-col": (M2, lambda x: np.arange(3.0)[:, None] + x),
    "maximum": (M2, lambda x: np.maximum(x, 1.0)),
    "pow": (M2, lambda x: x ** 2),
    "sum-axis0": (M2, lambda x: np.sum(x, axis=0)),
    "sum-axis1-keepdims": (M2, lambda x: x.sum(axis=1, keepdims=True)),
    "sum-all": (M2, lambda x: np.sum(x)),
    "mean": (T3, lambda x: np.mean(x, axis=(0, 2))),
    "prod": (M2, lambda x: np.prod(x, axis=1)),
    "max": (M2, lambda x: np.max(x, axis=0)),
    "var": (M2, lambda x: np.var(x, axis=0)),
    "std-all": (M2, lambda x: np.std(x)),
    "cumsum": (M2, lambda x: np.cumsum(x, axis=1)),
    "cumsum-flat": (M2, lambda x: np.cumsum(x)),
    "cumprod": (M2, lambda x: np.cumprod(x, axis=0)),
    "average": (M2, lambda x: np.average(x, axis=0, weights=np.arange(1.0, 4.0))),
    "trace": (SQ, lambda x: np.trace(x)),
    "trapezoid": (M2, lambda x: np.trapezoid(x, axis=1)),
    "polyval": (V1, lambda x: np.polyval([1.0, 2.0, 3.0], x)),
    "cov": (M2, lambda x: np.cov(x)),
    "sinc": (M2, lambda x: np.sinc(x)),
    "norm": (M2, lambda x: np.linalg.norm(x, axis=1)),
    # contractions and linear algebra
    "matmul": (M2, lambda x: x @ x.T),
    "matmul-vec": (M2, lambda x: x @ np.arange(4.0)),
    "dot": (M2, lambda x: np.dot(x.T, x)),
    "tensordot": (T3, lambda x: np.tensordot(x, x, axes=([1, 2], [1, 2]))),
    "einsum-contract": (M2, lambda x: np.einsum("ij,kj->ik", x, x)),
    "einsum-sum": (M2, lambda x: np.einsum("ij->j", x)),
    "inner": (M2, lambda x: np.inner(x, x)),
    "inv": (SQ, lambda x: np.linalg.inv(x + 3.0 * np.eye(3))),
    "solve": (SQ, lambda x: np.linalg.solve(x + 3.0 * np.eye(3), np.arange(3.0))),
    "cholesky": (SQ, lambda x: np.linalg.cholesky(x @ x.T + np.eye(3))),
    "det": (SQ, lambda x: np.linalg.det(x)),
}


def _run_traced(op, x):
    seen = {}

    def f(t):
        out = op(t)
        seen["out"] = out
        seen["value"] = out.value if isinstance(out, Tracer) else out
        seen["operand"] = t.value
        seen["t"] = t
        return np.sum(out)

    adcli.grad(f)(x)
    return seen


def _strides_that_matter(a):
    # NumPy's strides for axes of length <= 1 carry no meaning (and differ between routines)
    return tuple(s for s, n in zip(a.strides, a.shape) if n > 1)


CASES = [(name, lay) for name in OPS for lay in ("C", "F", "strided", "negative")]


@pytest.mark.parametrize("name,lay", CASES, ids=[f"{n}-{lay}" for n, lay in CASES])
def test_layout_and_view_semantics_match_numpy(name, lay):
    shape, op = OPS[name]
    x = layouts(shape)[lay]
    expected = op(x)
    seen = _run_traced(op, x)
    got, operand = seen["value"], seen["operand"]
    assert operand is x  # inputs are traced as they are, not copied
    assert type(got) is type(expected), f"{type(got).__name__} where NumPy gives {type(expected).__name__}"
    np.testing.assert_array_equal(got, expected)
    if type(expected) is not np.ndarray:
        return
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert _strides_that_matter(got) == _strides_that_matter(expected), (
        f"strides {got.strides} where NumPy gives {expected.strides}"
    )
    assert got.flags.c_contiguous == expected.flags.c_contiguous
    assert got.flags.f_contiguous == expected.flags.f_contiguous
    assert got.flags.writeable == expected.flags.writeable
    shares = np.shares_memory(expected, x)
    assert np.shares_memory(got, operand) == shares, "a view in one and a copy in the other"
    if shares and expected is not x:  # (astype(copy=False), x.real, atleast_1d give x itself)
        assert seen["out"]._root is not None, "a NumPy view that the engine does not track"
    if expected is x:
        assert seen["out"] is seen["t"]
