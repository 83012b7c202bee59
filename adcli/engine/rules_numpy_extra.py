"""More NumPy functions ported programs call: fftshift/ifftshift (derived), linspace with
traced ends, real/imag/angle/real_if_close of real values, nan_to_num, and reductions given a
Python list of traced values (``np.mean([a, b])``).

The list case needs a dispatch point: NumPy consults ``__array_function__`` only on the
arguments themselves, so ``np.mean([a, b])`` goes straight to NumPy's Python body, which turns
the list into an array in C. While a gradient records, that body's code is a library dispatch
point (engine.library): a call holding traced values in a list has its lists built with
traced ``np.stack`` (as ``np.array`` of them would be) and is dispatched again.
"""

from __future__ import annotations

import numpy as np

from .core import Primitive, Tracer, record_result
from .derive import derive
from .library import library_rule
from .lists import traced_list
from .registry import defnative
from .rules_elementwise import nondiff
from .sums import unbroadcast

derive(np.fft.fftshift, None, "asarray + roll", asarray=True)
derive(np.fft.ifftshift, None, "asarray + roll", asarray=True)


# --- linspace(start, stop): y_k = start + (stop - start) t_k ---------------------------------


def _linspace_vjp(which):
    def vjp(g, ans, start, stop, num, endpoint, axis):
        t = np.linspace(0.0, 1.0, num, endpoint=endpoint)
        w = t if which else 1.0 - t
        g = np.moveaxis(np.asarray(g), axis, 0)
        c = np.tensordot(w, g, axes=(0, 0))
        return unbroadcast(c, start if which == 0 else stop)

    return vjp


_LINSPACE = Primitive("numpy.linspace", None, _linspace_vjp(0), _linspace_vjp(1))


@defnative(np.linspace)
def _linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    plain = [s.value if isinstance(s, Tracer) else s for s in (start, stop)]
    out = np.linspace(*plain, num, endpoint=endpoint, retstep=retstep, dtype=dtype, axis=axis)
    samples, step = out if retstep else (out, None)
    if np.result_type(samples).kind == "f" and num > 0:
        ax = axis % np.ndim(samples) if np.ndim(samples) else 0
        samples = record_result(_LINSPACE, samples, (start, stop), {"num": num, "endpoint": endpoint, "axis": ax})
        if retstep:
            div = (num - 1) if endpoint else num
            step = (stop - start) / div if div > 0 else step
    return (samples, step) if retstep else samples


# --- real and complex views of real values ---------------------------------------------------


@defnative(np.real)
def _real(val):
    return val.real  # a real array's .real is the array itself (a view)


@defnative(np.real_if_close)
def _real_if_close(a, tol=100):
    return a  # real already: NumPy returns it unchanged


# of real values: zeros, and 0 or pi (piecewise constant): plain results, no gradient
defnative(np.imag)(nondiff(np.imag))
defnative(np.angle)(nondiff(np.angle))


def _nan_to_num_vjp(g, ans, x):
    return np.where(np.isfinite(x), g, 0.0)


_NAN_TO_NUM = Primitive("numpy.nan_to_num", None, _nan_to_num_vjp)


@defnative(np.nan_to_num)
def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    if copy is False:
        raise TypeError("np.nan_to_num(copy=False) of a traced value: write y = np.nan_to_num(x)")
    ans = np.nan_to_num(x.value, copy=True, nan=nan, posinf=posinf, neginf=neginf)
    return record_result(_NAN_TO_NUM, ans, (x,), {})


# --- NumPy functions given lists of traced values --------------------------------------------


def _relist(func):
    def rule(*args, **kwargs):
        return func(*[traced_list(a) for a in args], **{k: traced_list(v) for k, v in kwargs.items()})

    return rule


# The function bodies whose first arguments accept array-likes, by their public functions
# (each is one attribute write per gradient: the ones ported programs call with lists).
_RELISTED = {
    "numpy._core.fromnumeric": (np.sum, np.mean, np.std, np.var, np.max, np.min, np.prod),
    "numpy.linalg._linalg": (np.linalg.norm,),
    "numpy.lib._function_base_impl": (np.append,),
}
for _module, _funcs in _RELISTED.items():
    for _func in _funcs:
        library_rule(f"{_module}.{_func.__name__}._implementation",
                     shown=f"{_module.split('.')[0]}.{_func.__name__}_of_lists")(_relist(_func))
