"""Native rules that make new arrays: ``zeros_like`` & co. of a traced array (constant values,
but traced so that later assignment into them is recorded: ``y = np.empty_like(x); y[i] = ...``),
``full_like`` with a traced fill, and ``linspace`` with traced ends."""

from __future__ import annotations

import numpy as np

from ..core import Primitive, Tracer, node_kind, record, record_result
from ..mutation import setitem
from ..registry import defnative
from ..sums import unbroadcast
from ..tape import no_parents


# --- new arrays from a traced one: constant values, but traced so that later assignment into
# them is recorded (y = np.empty_like(x); y[i] = ... is the naive_map benchmark) ---
@node_kind(output=1, parents=no_parents)
def _pb_const(node, g, acc):
    pass


def constant_like(maker):
    def make(prototype, *args, **kwargs):
        proto = prototype.value if isinstance(prototype, Tracer) else prototype
        ans = maker(proto, *args, **kwargs)
        dt = ans.dtype
        if dt.kind != "f":
            return ans
        tape = prototype.tape
        return record(tape, (_pb_const, ans), ans)

    return make


for _f in (np.zeros_like, np.ones_like, np.empty_like):
    defnative(_f)(constant_like(_f))
_full_like_constant = constant_like(np.full_like)


@defnative(np.full_like)
def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kwargs):
    if not isinstance(fill_value, Tracer):
        return _full_like_constant(a, fill_value, dtype, order, subok, shape, **kwargs)
    # a traced fill: a traced array of a's layout with the fill broadcast into it (the
    # assignment's pullback sums the cotangent back to the fill's shape)
    proto = a.value if isinstance(a, Tracer) else a
    out = np.empty_like(proto, dtype, order, subok, shape, **kwargs)
    if out.dtype.kind != "f":  # an integer result: piecewise constant, no gradient
        return np.full_like(proto, fill_value.value, dtype, order, subok, shape, **kwargs)
    t = record(fill_value.tape, (_pb_const, out), out)
    setitem(t, Ellipsis, fill_value)
    return t


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
