"""Fuzz finding: crash (base: TypeError in rules_reduce.py:_choose_vjp: return arrays must be of ArrayType)

seed 934; statement kinds: reduce
argnums (0,); input layout: C order

expected: -
observed: Traceback (most recent call last):
      File "/work/main/adcli/engine/grad.py", line 101, in wrapper
        value, grads = _reverse(f, tape, out, session)
                       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
      File "/work/main/adcli/engine/grad.py", line 223, in _reverse
        backward(tape.nodes, acc, out.idx)
      File "/work/main/adcli/engine/tape.py", line 105, in backward
        node[0](node, g, acc)  # the node's pullback adds its parents' shares into acc
        ^^^^^^^^^^^^^^^^^^^^^
      File "/work/main/adcli/engine/core.py", line 205, in pb_general
        acc.add(p, vjp(g, ans, *vals, **kwargs))
                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^
      File "/work/main/adcli/engine/rules_reduce.py", line 96, in _choose_vjp
        return np.multiply(mask, g, out=mask)
               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
    TypeError: return arrays must be of ArrayType

Reproduce: python <this file> (exits 1 while the bug is present).
"""
# ruff: noqa: E501
import sys

import numpy as np

import adcli
from adcli.errors import RuleError
import scipy.linalg as sl
import scipy.signal as ss
import scipy.special as sp
import scipy.stats as st


def _w(v, k):
    """Fixed, asymmetric weights shaped like v (a plain constant)."""
    return np.cos(np.arange(np.size(v)) * 0.7 + k).reshape(np.shape(v))


def f(x0):
    v1 = np.min(x0)
    return np.sum(v1 * _w(v1, 0))


ARGS = [np.array(0.5)]
ARGNUMS = (0,)
LAYOUT = None
F32 = False


def _strided(a):
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    wide[..., ::2] = a
    return wide[..., ::2]


def args():
    """Fresh arguments (in LAYOUT) for every call."""
    out = []
    for a in ARGS:
        if isinstance(a, np.ndarray):
            a = a.copy()
            if a.ndim:
                a = a
        out.append(a)
    return out


def _twin_ok():
    """Whether f_float64 computes f (not so when a view-or-copy answer depends on the dtype)."""
    a = [x.astype(np.float64) if isinstance(x, np.ndarray) else x for x in args()]
    return abs(float(f_float64(*a)) - float(f(*args()))) <= 1e-4 * max(1.0, abs(float(f(*args()))))


def _fd(k, gradient):
    """Per-element central differences for argument k (of the float64 twin of a float32
    program): the step agreeing best with adcli, and whether the steps agree with each other
    (where they do not, the point is a kink or a jump and the element is not judged)."""
    a0 = args()[k]
    est, smooth = np.zeros(np.shape(a0)), np.ones(np.shape(a0), bool)
    for idx in np.ndindex(*np.shape(a0)):
        ds = []
        for h in (1e-4, 1e-5, 1e-6):
            vals = []
            for s in (h, -h):
                a = [x.astype(np.float64) if isinstance(x, np.ndarray) else x for x in args()] if F32 else args()
                if isinstance(a[k], np.ndarray):
                    a[k][idx] += s
                else:
                    a[k] += s
                vals.append(float((f_float64 if F32 else f)(*a)))
            ds.append((vals[0] - vals[1]) / (2 * h))
        est[idx] = min(ds, key=lambda d: abs(d - float(np.asarray(gradient)[idx])))
        smooth[idx] = max(ds) - min(ds) <= 1e-3 * (1 + max(abs(d) for d in ds))
    return est, smooth


def main():
    np.seterr(all="ignore")
    expected = f(*args())
    try:
        value, grads = adcli.value_and_grad(f, ARGNUMS)(*args())
        again = adcli.value_and_grad(f, ARGNUMS)(*args())
    except adcli.AdcliError as e:
        if isinstance(e, RuleError):
            raise  # a built-in rule broke its contract: a bug, not a refusal
        print(f"adcli refused (an acceptable answer): {type(e).__name__}: {e}")
        return 0
    rtol = 3e-3 if F32 else 1e-5
    failed = False
    if not (float(value) == float(expected) or (np.isnan(float(value)) and np.isnan(float(expected)))):  # NumPy's bits
        print(f"wrong value: NumPy {expected!r}, adcli {value!r}")
        failed = True
    if float(again[0]) != float(value) or any(not np.array_equal(g, h) for g, h in zip(grads, again[1])):
        print("a second run gave different results:", again, (value, grads))
        failed = True
    if F32 and not _twin_ok():
        print("f_float64 computes something else than f here: gradients not checked")
        grads = ()
    for k, g in zip(ARGNUMS, grads):
        a = args()[k]
        if type(g) is not type(a) or np.shape(g) != np.shape(a) or getattr(g, "dtype", None) != getattr(a, "dtype", None):
            print(f"gradient {k} has type {type(g).__name__} {np.shape(g)} {getattr(g, 'dtype', '')}, "
                  f"argument {type(a).__name__} {np.shape(a)} {getattr(a, 'dtype', '')}")
            failed = True
            continue
        fd, smooth = _fd(k, g)
        close = np.isclose(np.asarray(g, float), fd, rtol=rtol, atol=rtol * (1 + np.max(np.abs(fd), initial=0)))
        if not np.all(close | ~smooth):
            print(f"wrong gradient for argument {k}:\n  finite differences {fd!r}\n  adcli              {g!r}")
            failed = True
    print("FAILS" if failed else "passes")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
