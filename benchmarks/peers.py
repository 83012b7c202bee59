"""The profiles/ cases for the frameworks adcli is compared with, for benchmarks/bench.py.

* autograd and JAX run the profile's own function: ``rebind(module, numpy_like)`` copies every
  function defined in the profile module with ``np`` bound to ``autograd.numpy`` or ``jax.numpy``
  (helpers the function calls are rebound too, since they are looked up in the same new globals).
  The one case JAX cannot run that way (item assignment in naive_map_sin_cos_exp) has a
  hand-written JAX version below using ``y.at[i, j].set(...)``.
* PyTorch versions are written by hand below: the same maths, operation for operation, in float64.

Nothing here imports torch or jax at module level: bench.py works without either.
"""

from __future__ import annotations

import math
import types

import numpy as np


def rebind(mod, numpy_like):
    """The module's functions with ``np`` replaced by ``numpy_like``: a dict name -> function."""
    g = dict(vars(mod))
    g["np"] = numpy_like
    for name, v in list(g.items()):
        if isinstance(v, types.FunctionType) and v.__module__ == mod.__name__:
            new = types.FunctionType(v.__code__, g, v.__name__, v.__defaults__, v.__closure__)
            new.__kwdefaults__ = v.__kwdefaults__
            g[name] = new
    return g


# --- PyTorch ----------------------------------------------------------------------------------


def torch_cases():
    """Case name -> function of torch tensors (float64) returning a 0-d tensor."""
    import torch

    def sum_1000(x):
        return torch.sum(x)

    def _sum_1000(x):
        y = 0.0
        n = 0
        while n < len(x):
            y = y + x[n]
            n += 1
        return y

    def sum_sin_1000(x):
        return torch.sum(torch.sin(x))

    def _sum_sin_1000(x):
        y = 0.0
        n = 0
        while n < len(x):
            y = y + torch.sin(x[n])
            n += 1
        return y

    def kron_sum(x, y):
        return torch.sum(torch.kron(x, y))

    def kron_view_sum(x, y):
        return torch.sum(torch.kron(x[0:20, 0:20], torch.triu(y)))

    def naive_map_sin_cos_exp(x):
        y = torch.empty_like(x)
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                y[i, j] = torch.sin(torch.cos(torch.exp(x[i, j])))
        return torch.sum(y)

    def map_sin_cos_exp(x):
        return torch.sum(torch.stack([torch.sin(torch.cos(torch.exp(v))) for v in x.ravel()]))

    def broadcast_sin_cos_exp(x):
        return torch.sum(torch.sin(torch.cos(torch.exp(x))))

    def simple_mlp(W2, W1, Y, X):
        h = W1 @ X
        return torch.sum((Y - W2 @ (h * (0 <= h))) ** 2)

    def gp_lml(x, y, s):
        n = x.shape[0]
        K = torch.exp(-0.5 * (x[:, None] - x[None, :]) ** 2) + s * torch.eye(n, dtype=x.dtype)
        L = torch.linalg.cholesky(K)
        alpha = torch.linalg.solve(L.T, torch.linalg.solve(L, y))
        logdet = 2.0 * torch.sum(torch.log(torch.diagonal(L)))
        return -0.5 * (torch.dot(y, alpha) + logdet + n * math.log(2.0 * math.pi))

    def large_single_block(x):
        y = x[0]
        a = x[1]
        for _ in range(400):
            y = y * a
        return y

    def logistic_regression(w, b, X, t, lam):
        z = X @ w + b
        loss = torch.mean(torch.logaddexp(torch.zeros((), dtype=z.dtype), z) - t * z)
        return loss + 0.5 * lam * torch.sum(w**2)

    def mlp_dict(params, X, Y):
        h = torch.tanh(X @ params["W1"] + params["b1"])
        return torch.mean((h @ params["W2"] + params["b2"] - Y) ** 2)

    def _dynamics(u, theta):
        prey, pred = u[0], u[1]
        a, b, d, g = theta[0], theta[1], theta[2], theta[3]
        return torch.stack([a * prey - b * prey * pred, d * prey * pred - g * pred])

    def rk4_ode(theta, u0, target, steps=100, dt=0.1):
        states = [u0]
        u = u0
        for _ in range(steps):
            k1 = _dynamics(u, theta)
            k2 = _dynamics(u + 0.5 * dt * k1, theta)
            k3 = _dynamics(u + 0.5 * dt * k2, theta)
            k4 = _dynamics(u + dt * k3, theta)
            u = u + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
            states.append(u)
        return torch.sum((torch.stack(states) - target) ** 2)

    return {
        fn.__name__: fn
        for fn in (
            sum_1000, _sum_1000, sum_sin_1000, _sum_sin_1000, kron_sum, kron_view_sum, naive_map_sin_cos_exp,
            map_sin_cos_exp, broadcast_sin_cos_exp, simple_mlp, gp_lml, large_single_block, logistic_regression,
            mlp_dict, rk4_ode,
        )
    }


def torch_gradient(fn, args, argnums):
    """A zero-argument callable computing (value, gradient leaves) with torch.autograd.grad, and a
    function turning its result into NumPy (value, list of gradient arrays in pytree order)."""
    import torch

    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    targs, leaves = [], []
    for k, a in enumerate(args):
        targs.append(_to_torch(a, k in nums, leaves, torch))
    targs = tuple(targs)

    def run():
        out = fn(*targs)
        return out, torch.autograd.grad(out, leaves)

    def to_numpy(res):
        out, grads = res
        return float(out.detach()), [g.detach().numpy() for g in grads]

    return run, to_numpy


def _to_torch(a, diff, leaves, torch):
    if isinstance(a, dict):
        return {k: _to_torch(a[k], diff, leaves, torch) for k in sorted(a)}
    if isinstance(a, np.ndarray) and a.dtype.kind == "f":
        t = torch.tensor(a, dtype=torch.float64, requires_grad=diff)
    elif isinstance(a, float) and diff:
        t = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    else:
        return a
    if diff:
        leaves.append(t)
    return t


# --- JAX --------------------------------------------------------------------------------------


def jax_naive_map_sin_cos_exp(jnp):
    """naive_map_sin_cos_exp for JAX: arrays are immutable, so ``y[i, j] = v`` becomes ``y = y.at[i, j].set(v)``."""

    def f(x):
        y = jnp.empty_like(x)
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                y = y.at[i, j].set(jnp.sin(jnp.cos(jnp.exp(x[i, j]))))
        return jnp.sum(y)

    return f


JAX_BY_HAND = {"naive_map_sin_cos_exp": jax_naive_map_sin_cos_exp}


def jax_function(mod, jnp):
    """The profile's function for JAX: rebound to jax.numpy, or written by hand where that cannot run."""
    if mod.NAME in JAX_BY_HAND:
        return JAX_BY_HAND[mod.NAME](jnp)
    return rebind(mod, jnp)["f"]


def to_jax(args, jnp):
    """The profile's arguments for JAX: float arrays become float64 jax arrays, the rest stays."""

    def conv(a):
        if isinstance(a, dict):
            return {k: conv(v) for k, v in a.items()}
        if isinstance(a, np.ndarray):
            return jnp.asarray(a)
        return a

    return tuple(conv(a) for a in args)
