"""The bridge from the autograd names the test files import to adcli's reverse mode.

Everything the shim does is first-order reverse mode on real values. What it cannot or will not
map raises ``ShimUnsupported`` (a ``NotImplementedError``) naming the feature and its category.
Each test's events (unsupported features met, checks reduced or skipped) and counters are read
and reset by the suite's pytest plugin.
"""

from __future__ import annotations

import functools

import numpy as np

import adcli
from adcli.engine.core import Tracer
from adcli.engine.grad import vjp as _adcli_vjp
from adcli.engine.pytree import flatten

# Categories the harness treats as out of scope.
COMPLEX = "complex numbers"
FORWARD = "forward mode"
HIGHER = "higher-order"
INTERNALS = "autograd internals"
AUTOGRAD_ONLY = "autograd-only API"
SHIM = "shim limitation"

EVENTS: list[dict] = []  # this test's events, in order
STATS = {"ok": 0, "checks": 0}  # successful top-level differentiations / gradient checks
_depth = [0]  # > 0 while adcli records a function for the shim


def reset() -> None:
    EVENTS.clear()
    STATS.update(ok=0, checks=0)


def note(kind: str, what: str) -> None:
    """A reduction or a skipped case inside a check (``kind``: 'reduced' or 'skipped')."""
    EVENTS.append({"kind": kind, "what": what})


class ShimUnsupported(NotImplementedError):
    """A feature the shim does not map onto adcli; ``category`` says why."""

    def __init__(self, category: str, feature: str):
        self.category, self.feature = category, feature
        self.event = {"kind": "unsupported", "category": category, "what": feature}
        EVENTS.append(self.event)
        super().__init__(f"autograd shim: {feature} is not mapped onto adcli [{category}]")


class NestedDifferentiation(ShimUnsupported):
    def __init__(self, what: str):
        super().__init__(HIGHER, f"{what} called inside a function being differentiated (nested differentiation)")


def unsupported(category: str, feature: str):
    """A stand-in callable that raises ShimUnsupported when called."""

    def stub(*args, **kwargs):
        raise ShimUnsupported(category, feature)

    stub.__name__ = feature.split(" ")[0].rsplit(".", 1)[-1]
    return stub


def nums(argnum):
    """autograd accepts an int, a tuple or a list; adcli an int or a tuple."""
    return tuple(argnum) if isinstance(argnum, (list, tuple)) else argnum


def selected(args, argnum):
    return tuple(args[i] for i in argnum) if isinstance(argnum, tuple) else args[argnum]


def is_complex(tree) -> bool:
    return any(np.iscomplexobj(v) for v in flatten(tree)[0] if isinstance(v, (complex, np.ndarray, np.generic)))


def is_float(v) -> bool:
    return type(v) is float or (isinstance(v, (np.ndarray, np.floating)) and np.result_type(v).kind == "f")


def reject_complex(tree, what: str) -> None:
    if is_complex(tree):
        raise ShimUnsupported(COMPLEX, f"{what} with a complex argument")


def recording(what: str, run):
    """Run ``run()`` (an adcli differentiation) as a top-level, first-order one."""
    if _depth[0]:
        raise NestedDifferentiation(what)
    _depth[0] += 1
    try:
        result = run()
    finally:
        _depth[0] -= 1
    STATS["ok"] += 1
    return result


def plain_call(what: str, fun, args, kwargs):
    """Evaluate ``fun`` untraced (for output shapes), refusing nesting like ``recording``."""
    if _depth[0]:
        raise NestedDifferentiation(what)
    return fun(*args, **kwargs)


def vjp(what: str, fun, argnum, args, kwargs, cotangent):
    """(value, gradient) of ``fun`` w.r.t. ``argnum`` seeded with ``cotangent`` (shaped like the output)."""
    return recording(what, lambda: _adcli_vjp(fun, argnum, cotangent)(*args, **kwargs))


def cotangent_like(out, fill):
    """A cotangent for ``out``: ``fill(shape, dtype)`` at float leaves, None elsewhere."""
    leaves, unflatten = flatten(out)
    new = []
    for v in leaves:
        if not is_float(v):
            new.append(None)
        elif type(v) is float:
            new.append(float(fill((), np.float64)))
        elif isinstance(v, np.generic):
            new.append(v.dtype.type(fill((), v.dtype)))
        else:
            new.append(np.asarray(fill(v.shape, v.dtype), dtype=v.dtype))
    return unflatten(new)


def named(wrapper, op: str, fun, argnum):
    try:
        wrapper.__name__ = f"{op}_of_{getattr(fun, '__name__', '[unknown name]')}_wrt_argnum_{argnum}"
    except (AttributeError, TypeError):
        pass
    return wrapper


# --- the differential operators -----------------------------------------------------------------


def grad(fun, argnum=0):
    argnum = nums(argnum)

    def gradfun(*args, **kwargs):
        reject_complex(selected(args, argnum), "grad")
        return recording("grad", lambda: adcli.grad(fun, argnums=argnum)(*args, **kwargs))

    return named(gradfun, "grad", fun, argnum)


def value_and_grad(fun, argnum=0):
    argnum = nums(argnum)

    def vgfun(*args, **kwargs):
        reject_complex(selected(args, argnum), "value_and_grad")
        return recording("value_and_grad", lambda: adcli.value_and_grad(fun, argnums=argnum)(*args, **kwargs))

    return named(vgfun, "value_and_grad", fun, argnum)


def make_vjp(fun, argnum=0):
    """autograd's make_vjp: ``(vjp, ans)``. Approximation: the VJP re-runs ``fun`` under adcli
    for every call (adcli records and pulls back in one call)."""
    argnum = nums(argnum)

    def maker(*args, **kwargs):
        reject_complex(selected(args, argnum), "make_vjp")
        ans = plain_call("make_vjp", fun, args, kwargs)

        def vjp_fun(g):
            return vjp("make_vjp", fun, argnum, args, kwargs, g)[1]

        return vjp_fun, ans

    return named(maker, "make_vjp", fun, argnum)


def elementwise_grad(fun, argnum=0):
    argnum = nums(argnum)

    def egfun(*args, **kwargs):
        reject_complex(selected(args, argnum), "elementwise_grad")
        ans = plain_call("elementwise_grad", fun, args, kwargs)
        if is_complex(ans):
            raise TypeError("Elementwise_grad only applies to real-output functions.")
        ones = cotangent_like(ans, lambda shape, dtype: np.ones(shape, dtype))
        return vjp("elementwise_grad", fun, argnum, args, kwargs, ones)[1]

    return named(egfun, "elementwise_grad", fun, argnum)


def jacobian(fun, argnum=0):
    """Reverse mode, one VJP per output element (as autograd), stacked to out.shape + x.shape."""
    argnum = nums(argnum)

    def jacfun(*args, **kwargs):
        if isinstance(argnum, tuple):
            raise ShimUnsupported(SHIM, "jacobian with respect to several arguments")
        x = args[argnum]
        reject_complex(x, "jacobian")
        ans = plain_call("jacobian", fun, args, kwargs)
        if not isinstance(ans, (float, np.ndarray, np.generic)):
            raise ShimUnsupported(SHIM, f"jacobian of a function returning {type(ans).__name__}")
        if is_complex(ans):
            raise ShimUnsupported(COMPLEX, "jacobian of a complex-valued function")
        shape = np.shape(ans)
        rows = []
        for idx in np.ndindex(*shape):
            basis = np.zeros(shape)
            basis[idx] = 1.0
            seed = float(basis) if type(ans) is float else np.asarray(basis, dtype=np.result_type(ans))
            if isinstance(ans, np.generic):
                seed = ans.dtype.type(seed)
            rows.append(np.asarray(vjp("jacobian", fun, argnum, args, kwargs, seed)[1], dtype=float))
        return np.reshape(np.stack(rows), shape + np.shape(x))

    return named(jacfun, "jacobian", fun, argnum)


def tensor_jacobian_product(fun, argnum=0):
    """As autograd defines it: the jacobian of ``tensordot(v, fun(*args), ndim(v))``."""

    def vector_dot_fun(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        return np.tensordot(vector, fun(*args, **kwargs), axes=np.ndim(vector))

    return jacobian(vector_dot_fun, argnum)


def grad_and_aux(fun, argnum=0):
    """Approximation: the aux output comes from a separate untraced call of ``fun``."""
    argnum = nums(argnum)

    def gafun(*args, **kwargs):
        g = grad(lambda *a, **k: fun(*a, **k)[0], argnum)(*args, **kwargs)
        return g, plain_call("grad_and_aux", fun, args, kwargs)[1]

    return named(gafun, "grad_and_aux", fun, argnum)


def grad_named(fun, argname):
    import inspect

    return grad(fun, inspect.getfullargspec(fun).args.index(argname))


def checkpoint(fun):
    """Approximation: adcli has no checkpointing; the function is returned unchanged (same values
    and gradients, no memory saving)."""
    return functools.wraps(fun)(lambda *a, **k: fun(*a, **k))


def isbox(x) -> bool:
    """autograd's ``isbox`` read as 'is an adcli tracer'."""
    return isinstance(x, Tracer)
