"""Every native rule passes check_rule (finite differences, output type/shape/dtype, inputs
unchanged, repeatable, accumulation into a seeded buffer). The tables must cover every
differentiable native rule in the registry: a new rule without an entry here fails."""

import numpy as np
import pytest

from adcli.engine import library
from adcli.engine.registry import REGISTRY, UFUNCS
from adcli.testing import check_grad, check_rule

rng = np.random.default_rng(7)


def u(lo, hi, shape):
    return rng.uniform(lo, hi, shape)


def spd(n):
    a = rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


M = u(-1, 1, (3, 4))
SQ = rng.standard_normal((4, 4)) + 4 * np.eye(4)
V = u(-1, 1, 5)

# Inputs inside each ufunc's domain (margin from singularities and kinks).
UFUNC_ARGS = {
    "sqrt": (u(0.5, 2, (3, 4)),), "cbrt": (u(0.5, 2, (3, 4)),), "reciprocal": (u(0.5, 2, (3, 4)),),
    "log": (u(0.5, 2, (3, 4)),), "log2": (u(0.5, 2, (3, 4)),), "log10": (u(0.5, 2, (3, 4)),),
    "log1p": (u(0.0, 2, (3, 4)),), "arcsin": (u(-0.5, 0.5, (3, 4)),), "arccos": (u(-0.5, 0.5, (3, 4)),),
    "arctanh": (u(-0.5, 0.5, (3, 4)),), "arccosh": (u(1.5, 3, (3, 4)),), "tan": (u(-1, 1, (3, 4)),),
    "power": (u(0.5, 2, (3, 4)), u(-1, 2, (3, 4))), "float_power": (u(0.5, 2, (3, 4)), u(-1, 2, (4,))),
    "true_divide": (M, u(0.5, 2, (3, 4))), "remainder": (u(2.1, 2.9, (3, 4)), u(1.0, 1.05, (4,))),
    "fmod": (u(2.1, 2.9, (3, 4)), u(1.0, 1.05, (4,))), "copysign": (u(0.5, 1, (3, 4)), u(-1, 1, (3, 4))),
    "ldexp": (M, np.array([1, 2, -1, 0])), "absolute": (u(0.5, 1, (3, 4)) * np.sign(M),),
    "fabs": (u(0.5, 1, (3, 4)) * np.sign(M),), "hypot": (u(0.5, 1, (3, 4)), u(0.5, 1, (3, 4))),
    "arctan2": (u(0.5, 1, (3, 4)), u(-1, 1, (3, 4))),
    "matmul": (M, rng.standard_normal((4, 2))), "vecdot": (M, u(-1, 1, (3, 4))),
    "matvec": (M, u(-1, 1, 4)), "vecmat": (u(-1, 1, 3), M),
}


@pytest.mark.parametrize("ufunc", sorted(UFUNCS, key=lambda f: f.__name__), ids=lambda f: f.__name__)
def test_every_ufunc_rule_passes_check_rule(ufunc):
    args = UFUNC_ARGS.get(ufunc.__name__)
    if args is None:
        args = (M,) if ufunc.nin == 1 else (M, u(-1, 1, (4,)) + 0.01)
    report = check_rule(ufunc, *args, timing=False)
    assert "finite differences" in report.checks and "accumulation" in report.checks


# One example call per differentiable native function rule: (function, args, kwargs).
FUNCTION_ARGS = [
    (np.sum, (M,), {"axis": 1}), (np.prod, (u(0.5, 1.5, (3, 4)),), {"axis": 0}), (np.max, (M,), {"axis": 1}),
    (np.amax, (M,), {}), (np.min, (M,), {"axis": 0, "keepdims": True}), (np.amin, (M,), {}),
    (np.mean, (M,), {"axis": (0, 1)}), (np.cumsum, (M,), {"axis": 1}), (np.cumulative_sum, (M,), {"axis": 0}),
    (np.cumprod, (u(0.5, 1.5, (3, 4)),), {"axis": 1}), (np.cumulative_prod, (u(0.5, 1.5, 5),), {}),
    (np.reshape, (M, (6, 2)), {}), (np.transpose, (M,), {}), (np.matrix_transpose, (M,), {}),
    (np.swapaxes, (M, 0, 1), {}), (np.moveaxis, (rng.standard_normal((2, 3, 4)), 0, -1), {}),
    (np.squeeze, (M[None],), {}), (np.expand_dims, (M, 1), {}), (np.ravel, (M,), {}),
    (np.broadcast_to, (V, (3, 5)), {}), (np.copy, (M,), {}), (np.atleast_1d, (V,), {}), (np.atleast_2d, (V,), {}),
    (np.concatenate, ([M, M * 2],), {"axis": 0}), (np.stack, ([V, V ** 2],), {"axis": 1}),
    (np.where, (M > 0, M, M ** 2), {}), (np.clip, (M, -0.5, 0.5), {}), (np.sort, (M,), {"axis": 1}),
    (np.partition, (M, 1), {}), (np.partition, (M, (0, 2)), {"axis": 0}),
    (np.diagonal, (SQ,), {"offset": 1}), (np.diag, (V,), {}), (np.repeat, (V, 2), {}),
    (np.take, (M, [0, 2, 2]), {"axis": 1}), (np.take, (M, [0, -1, 5]), {}), (np.astype, (M.astype(np.float32), np.float64), {}),
    (np.ediff1d, (M,), {"to_begin": [0.5], "to_end": np.array([1.0, 2.0])}), (np.ediff1d, (V,), {}),
    (np.dot, (M, rng.standard_normal(4)), {}), (np.vdot, (V, V * 2), {}), (np.inner, (M, M), {}),
    (np.tensordot, (M, rng.standard_normal((4, 2))), {"axes": 1}), (np.einsum, ("ij,jk->ik", M, M.T), {}),
    (np.linalg.cholesky, (spd(4),), {}), (np.linalg.det, (SQ,), {}), (np.linalg.inv, (SQ,), {}),
    (np.linalg.solve, (SQ, V[:4]), {}), (np.linalg.slogdet, (SQ,), {}), (np.linalg.norm, (M,), {}),
    (np.linalg.vector_norm, (V,), {}), (np.linalg.matrix_norm, (M,), {}), (np.linalg.eigh, (spd(4),), {}),
    (np.linalg.eigvalsh, (spd(4),), {}), (np.linalg.svd, (M,), {"full_matrices": False}),
    (np.linalg.svdvals, (M,), {}), (np.linalg.qr, (rng.standard_normal((4, 3)),), {}), (np.linalg.pinv, (M,), {}),
    (np.linalg.matmul, (M, M.T), {}), (np.linalg.matrix_power, (SQ / 4, 3), {}),
    (np.linalg.multi_dot, ([M, M.T, M],), {}), (np.linalg.tensordot, (M, M.T), {"axes": 1}),
    (np.linalg.vecdot, (M, M), {}),
    (np.roll, (M, 1), {"axis": 1}), (np.triu, (M,), {}), (np.tril, (M, -1), {}), (np.outer, (V, M[0]), {}),
    (np.var, (M,), {"axis": 1}), (np.hstack, ((M, M[:, :2]),), {}), (np.vstack, ((M, M[:1]),), {}),
    (np.select, ([M > 0, M < -0.5], [M ** 2, M * 3.0]), {"default": 0.5}), (np.cross, (M[:, :3], M[:, 1:]), {}),
    (np.pad, (M, ((1, 2), (0, 1))), {"constant_values": 1.5}),
    (np.lib.stride_tricks.sliding_window_view, (M, (2, 2)), {}),
    # counting functions' float outputs (engine/rules/counting.py): unique's values, weighted counts, data edges
    (np.unique, (np.array([0.3, -1.2, 0.7, 2.5, -0.4]),), {}), (np.unique, (M,), {"return_counts": True}),
    (np.bincount, (np.array([0, 2, 2, 5, 1]), V), {"minlength": 7}),
    (np.histogram, (np.array([0.1, 0.5, 0.7, 2.1, 2.9]), 3), {"range": (0.0, 3.0), "weights": V}),
    (np.histogram, (np.array([0.1, 0.5, 0.75, 2.0, 2.9]), 4), {}),
    # engine/rules/: creation, elementwise's real/imag, reductions' std (advised)
    (np.linspace, (0.5, 2.0, 5), {}), (np.linspace, (V[:2], V[:2] * 3.0 + 4.0, 4), {"axis": 1, "endpoint": False}),
    (np.real, (M,), {}), (np.real_if_close, (M,), {}), (np.nan_to_num, (M,), {}), (np.std, (M,), {"axis": 1}),
]
# Natives that make constants (their values do not depend on the input, only assignment into
# them is traced): nothing to differentiate, covered by tests/test_indexing.py.
CONSTANT_MAKERS = {np.zeros_like, np.ones_like, np.empty_like, np.full_like}
# Natives that write into an existing traced array and return None: assignments, covered by
# tests/test_regressions.py (np.copyto into traced and plain arrays) and tests/test_indexing.py.
WRITERS = {np.copyto}


@pytest.mark.parametrize("func,args,kwargs", FUNCTION_ARGS, ids=[f.__name__ for f, _, _ in FUNCTION_ARGS])
def test_every_function_rule_passes_check_rule(func, args, kwargs):
    if func in (np.linalg.eigh, np.linalg.svd, np.linalg.qr):
        # Eigen/singular vectors are defined up to sign: check_rule's random linear readout of
        # the outputs is not well defined, so check a sign-invariant readout instead.
        def readout(*a):
            return sum(np.sum(o ** 2 * (1 + np.arange(o.size).reshape(o.shape) / o.size)) for o in func(*a, **kwargs))

        check_grad(readout, *args)
        return
    report = check_rule(func, *args, kwargs=kwargs, timing=False)
    assert report.rule == "native rule"


def test_tables_cover_every_differentiable_native_rule():
    covered = {f for f, _, _ in FUNCTION_ARGS} | CONSTANT_MAKERS | WRITERS
    missing = sorted(
        e.name for key, e in REGISTRY.items()
        if e.native is not None and not getattr(e.native, "__adcli_nondiff__", False)
        and not isinstance(key, tuple) and not isinstance(key, np.ufunc) and key not in covered
        and not library.is_key(key)  # SciPy's: tests/test_rules_scipy_functions.py covers each
    )
    assert not missing, f"native rules without a check_rule case: {missing}"
