"""The profiles/ cases for the frameworks adcli is compared with, for benchmarks/bench.py.

* autograd and JAX run the profile's own function: ``rebind(module, numpy_like)`` copies every
  function defined in the profile module with ``np`` bound to ``autograd.numpy`` or ``jax.numpy``
  (helpers the function calls are rebound too, since they are looked up in the same new globals);
  ``rebound_f`` makes gp_hyper's and rnn's closures again with their rebound factories, and
  batchnorm_mlp's bound method from its model's state in the rebound class (``REMADE``).
  The one case JAX cannot run that way, naive_map_sin_cos_exp (item assignment), has a
  hand-written JAX version below (``JAX_BY_HAND``), with ``y.at[i, j].set(...)``.
* PyTorch versions are written by hand below: the same maths, operation for operation, in float64;
  the realistic-model profiles have one builder each (``TORCH_MODELS``). Arguments are converted by
  ``_to_torch``: float arrays to float64 tensors, integer arrays (labels) to int64 tensors, dicts
  and lists walked; differentiated Python floats become 0-d tensors.

Nothing here imports torch or jax at module level: bench.py works without either.
"""

from __future__ import annotations

import math
import types

import numpy as np


def rebind(mod, numpy_like):
    """The module's functions and classes with ``np`` replaced by ``numpy_like``: a dict name ->
    function (a class: a subclass whose methods are rebound)."""
    g = dict(vars(mod))
    g["np"] = numpy_like
    for name, v in list(g.items()):
        if isinstance(v, types.FunctionType) and v.__module__ == mod.__name__:
            g[name] = _rebound(v, g)
        elif isinstance(v, type) and v.__module__ == mod.__name__:
            methods = {k: _rebound(m, g) if isinstance(m, types.FunctionType) else staticmethod(_rebound(m.__func__, g))
                       for k, m in vars(v).items()
                       if isinstance(m, types.FunctionType) or isinstance(m, staticmethod)}
            g[name] = type(v.__name__, (v,), methods)
    return g


def _rebound(fn, g):
    new = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new


def _remade_model(g, mod):
    """batchnorm_mlp's f is a bound method of the module's model: the same model's state, in the
    rebound class."""
    model = object.__new__(g["BatchNormMLP"])
    model.__dict__.update(vars(mod.model))
    return model.loss


# Profiles whose f rebind cannot reach: a closure a factory made at import time (its cells hold
# the NumPy-bound helpers), made again by the rebound factory; a bound method of a module-level
# object, taken from the same object's state in the rebound class.
REMADE = {
    "batchnorm_mlp": _remade_model,
    "gp_hyper": lambda g, mod: g["make_gp_funs"](g["rbf_covariance"], num_cov_params=mod.D + 1)[2],
    "rnn": lambda g, mod: g["make_rnn_funs"](mod.SYMBOLS, mod.HIDDEN, mod.SYMBOLS)[2],
}


def rebound_f(mod, numpy_like):
    """The profile's ``f`` with ``np`` bound to ``numpy_like`` (see REMADE)."""
    g = rebind(mod, numpy_like)
    remake = REMADE.get(mod.NAME)
    return g["f"] if remake is None else remake(g, mod)


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

    cases = {
        fn.__name__: fn
        for fn in (
            sum_1000, _sum_1000, sum_sin_1000, _sum_sin_1000, kron_sum, kron_view_sum, naive_map_sin_cos_exp,
            map_sin_cos_exp, broadcast_sin_cos_exp, simple_mlp, gp_lml, large_single_block, logistic_regression,
            mlp_dict, rk4_ode,
        )
    }
    for build in TORCH_MODELS:
        fn = build(torch)
        cases[fn.__name__] = fn
    return cases


# The realistic-model profiles (their own helpers, constants and data layouts), one builder each: a
# function of the torch module returning the case function, named like the case. Constants the
# profile keeps at module level or in its model object are keyword defaults here, as in rk4_ode.


def torch_batchnorm_mlp(torch):
    """The profile's BatchNormMLP methods as plain functions: its model object is not an argument of f
    (f is the bound method model.loss), so eps and the weight decay are keyword defaults."""

    def batch_norm(h, gamma, beta, eps=1e-5):
        mu = torch.mean(h, dim=0)
        var = torch.var(h, dim=0, correction=0)
        return gamma * (h - mu) / torch.sqrt(var + eps) + beta

    def forward(params, X):
        h = X
        for layer in params[:-1]:
            h = h @ layer["W"]
            h = batch_norm(h, layer["gamma"], layer["beta"])
            h = torch.clamp(h, min=0.0)  # np.maximum(h, 0.0)
        return h @ params[-1]["W"] + params[-1]["b"]

    def log_softmax(logits):
        shifted = logits - torch.amax(logits, dim=1, keepdim=True)
        return shifted - torch.log(torch.sum(torch.exp(shifted), dim=1, keepdim=True))

    def batchnorm_mlp(params, X, labels, weight_decay=1e-4):
        logp = log_softmax(forward(params, X))
        nll = -torch.mean(logp[torch.arange(X.shape[0]), labels])
        l2 = sum(torch.sum(layer["W"] ** 2) for layer in params)
        return nll + 0.5 * weight_decay * l2

    return batchnorm_mlp


def torch_bayes_logreg(torch):
    zero = torch.zeros((), dtype=torch.float64)  # np.logaddexp(0.0, z): torch.logaddexp wants a tensor

    def standardise(X, clip=4.0, eps=1e-8):
        columns = []
        for j in range(X.shape[1]):
            col = X[:, j]
            mu, sd = torch.mean(col), torch.std(col, correction=0)
            col = torch.clamp(col, mu - clip * sd, mu + clip * sd)
            columns.append((col - torch.mean(col)) / torch.sqrt(torch.var(col, correction=0) + eps))
        return torch.stack(columns, dim=1)

    def log_prior(w, b, scale_w=1.0, scale_b=5.0):
        return (-0.5 * torch.sum(w**2) / scale_w**2 - 0.5 * b**2 / scale_b**2
                - w.shape[0] * math.log(scale_w) - math.log(scale_b)
                - 0.5 * (w.shape[0] + 1) * math.log(2.0 * math.pi))

    def log_likelihood(w, b, Z, t, batch_size=50):
        total = 0.0
        for start in range(0, Z.shape[0], batch_size):
            logits = Z[start:start + batch_size] @ w + b
            tb = t[start:start + batch_size]
            total = total + torch.sum(tb * -torch.logaddexp(zero, -logits) + (1.0 - tb) * -torch.logaddexp(zero, logits))
        return total

    def bayes_logreg(w, b, X, t):
        Z = standardise(X)
        return log_prior(w, b) + log_likelihood(w, b, Z, t)

    return bayes_logreg


def torch_gp_hyper(torch):
    """The profile's make_gp_funs closures flattened: log_marginal_likelihood with the RBF kernel."""

    def unpack_kernel_params(params):
        return params[0], params[2:], torch.exp(params[1]) + 0.0001

    def rbf_covariance(kernel_params, x, xp):
        output_scale = torch.exp(kernel_params[0])
        lengthscales = torch.exp(kernel_params[1:])
        diffs = torch.unsqueeze(x / lengthscales, 1) - torch.unsqueeze(xp / lengthscales, 0)
        return output_scale * torch.exp(-0.5 * torch.sum(diffs**2, dim=2))

    def gp_hyper(params, x, y):
        mean, cov_params, noise_scale = unpack_kernel_params(params)
        cov_y_y = rbf_covariance(cov_params, x, x) + noise_scale * torch.eye(len(y), dtype=y.dtype)
        prior_mean = mean * torch.ones(len(y), dtype=y.dtype)
        L = torch.linalg.cholesky(cov_y_y)
        r = torch.linalg.solve(L, y - prior_mean)
        return -0.5 * torch.dot(r, r) - torch.sum(torch.log(torch.diagonal(L))) - 0.5 * len(y) * math.log(2 * math.pi)

    return gp_hyper


def torch_hmm_forward(torch):
    def logsumexp(a, axis):
        m = torch.amax(a, dim=axis, keepdim=True)
        return torch.log(torch.sum(torch.exp(a - m), dim=axis)) + torch.squeeze(m, dim=axis)

    def log_softmax(logits, axis=-1):
        return logits - torch.unsqueeze(logsumexp(logits, axis=axis), axis)

    def gaussian_log_density(y, means, sigmas):
        z = (y[:, None] - means[None, :]) / sigmas[None, :]
        return -0.5 * z**2 - torch.log(sigmas)[None, :] - 0.5 * math.log(2.0 * math.pi)

    def hmm_forward(init_logits, trans_logits, means, sigmas, y):
        log_pi = log_softmax(init_logits)
        log_A = log_softmax(trans_logits, axis=1)
        log_b = gaussian_log_density(y, means, sigmas)
        log_alpha = log_pi + log_b[0]
        for t in range(1, y.shape[0]):
            log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_b[t]
        return logsumexp(log_alpha, axis=0)

    return hmm_forward


def torch_loop_helper_loss(torch):
    def smoothness_penalty(w, S):
        total = 0.0
        for i in range(len(w)):
            for j in range(i + 1, len(w)):
                total = total + S[i, j] * (w[i] - w[j]) ** 2
        return total

    def loop_helper_loss(w, X, y, S, lam):
        residual = X @ w - y
        return torch.mean(residual**2) + lam * smoothness_penalty(w, S)

    return loop_helper_loss


def torch_low_rank(torch):
    def reconstruct(U, V, rank=8):
        Y = torch.outer(U[0], V[0])
        for k in range(1, rank):
            Y = Y + torch.outer(U[k], V[k])
        return Y

    def low_rank(U, V, Y):
        R = Y - reconstruct(U, V)
        return torch.sum(R**2) + 1e-3 * (torch.sum(U**2) + torch.sum(V**2))

    return low_rank


def torch_rnn(torch):
    """The profile's make_rnn_funs closures (predict and loss, with their helpers) flattened."""

    def log_softmax(x, axis=1):
        m = torch.amax(x, dim=axis, keepdim=True)
        return x - m - torch.log(torch.sum(torch.exp(x - m), dim=axis, keepdim=True))

    def update_rnn(params, input, hiddens):
        cat_state = torch.cat((input, hiddens), dim=1)
        return torch.tanh(cat_state @ params["change"][:-1] + params["change"][-1:])

    def hiddens_to_output_probs(params, hiddens):
        output = hiddens @ params["predict"][:-1] + params["predict"][-1:]
        return log_softmax(output, axis=1)

    def predict(params, inputs):
        hiddens = torch.repeat_interleave(params["init hiddens"], inputs.shape[1], dim=0)
        output = [hiddens_to_output_probs(params, hiddens)]
        for input in inputs:
            hiddens = update_rnn(params, input, hiddens)
            output.append(hiddens_to_output_probs(params, hiddens))
        return output

    def rnn(params, inputs, targets):
        logprobs = predict(params, inputs)[1:]
        total = 0.0
        for t in range(len(logprobs)):
            total = total - torch.sum(logprobs[t] * targets[t])
        return total / (targets.shape[0] * targets.shape[1])

    return rnn


def torch_stencil_roll(torch):
    def step(u, kappa, vx, vy, dt, dx):
        u_xm = torch.roll(u, 1, dims=0)
        u_xp = torch.roll(u, -1, dims=0)
        u_ym = torch.roll(u, 1, dims=1)
        u_yp = torch.roll(u, -1, dims=1)
        lap = (u_xm + u_xp + u_ym + u_yp - 4.0 * u) / dx**2
        dudx = torch.where(vx > 0, u - torch.roll(u, 1, dims=0), torch.roll(u, -1, dims=0) - u) / dx
        dudy = torch.where(vy > 0, u - torch.roll(u, 1, dims=1), torch.roll(u, -1, dims=1) - u) / dx
        return u + dt * (kappa * lap - vx * dudx - vy * dudy)

    def stencil_roll(u0, kappa, vx, vy, target, steps=50, dt=0.004, dx=1.0 / 48):
        u = u0
        for _ in range(steps):
            u = step(u, kappa, vx, vy, dt, dx)
        return torch.sum((u - target) ** 2)

    return stencil_roll


TORCH_MODELS = (
    torch_batchnorm_mlp, torch_bayes_logreg, torch_gp_hyper, torch_hmm_forward, torch_loop_helper_loss, torch_low_rank,
    torch_rnn, torch_stencil_roll,
)


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
    """Float arrays (and differentiated floats) become float64 tensors, integer arrays (indices, never
    differentiated) int64 tensors; dicts (keys sorted, as bench.flat orders them) and lists are walked."""
    if isinstance(a, dict):
        return {k: _to_torch(a[k], diff, leaves, torch) for k in sorted(a)}
    if isinstance(a, list):
        return [_to_torch(v, diff, leaves, torch) for v in a]
    if isinstance(a, np.ndarray) and a.dtype.kind in "iu":
        return torch.tensor(a, dtype=torch.int64)
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


def jax_naive_map_sin_cos_exp(mod, jnp):
    """naive_map_sin_cos_exp for JAX: arrays are immutable, so ``y[i, j] = v`` becomes ``y = y.at[i, j].set(v)``."""

    def f(x):
        y = jnp.empty_like(x)
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                y = y.at[i, j].set(jnp.sin(jnp.cos(jnp.exp(x[i, j]))))
        return jnp.sum(y)

    return f


JAX_BY_HAND = {
    "naive_map_sin_cos_exp": jax_naive_map_sin_cos_exp,
}


def jax_function(mod, jnp):
    """The profile's function for JAX: rebound to jax.numpy, or written by hand where that cannot run."""
    if mod.NAME in JAX_BY_HAND:
        return JAX_BY_HAND[mod.NAME](mod, jnp)
    return rebound_f(mod, jnp)


def to_jax(args, jnp):
    """The profile's arguments for JAX: arrays become jax arrays (float64 for float ones), dicts and
    lists are walked, the rest stays."""

    def conv(a):
        if isinstance(a, dict):
            return {k: conv(v) for k, v in a.items()}
        if isinstance(a, list):
            return [conv(v) for v in a]
        if isinstance(a, np.ndarray):
            return jnp.asarray(a)
        return a

    return tuple(conv(a) for a in args)


def torch_framework():
    """(make, version, note): ``make(mod, args) -> (run, result)`` as bench.py's frameworks (the
    hand-written PyTorch versions of benchmarks/peers.py, one thread), or None and why not."""
    try:
        import torch
    except ImportError:
        return None, "", "PyTorch not installed: its column is left out (pip install torch to add it)"
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    cases = torch_cases()

    def make(mod, args):
        if mod.NAME not in cases:
            raise NotImplementedError(f"no PyTorch version of {mod.NAME} in benchmarks/peers.py")
        return torch_gradient(cases[mod.NAME], args, mod.ARGNUMS)

    return make, torch.__version__, ""
