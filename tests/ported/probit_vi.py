"""Bayesian probit regression by black-box variational inference with a diagonal Gaussian posterior."""

import numpy as np
from scipy.stats import norm

from adcli import grad


def log_joint(weights, X, y):
    """log p(w) + log p(y | X, w) for a batch of weight samples, shape (samples,); y is +1 or -1."""
    log_prior = np.sum(norm.logpdf(weights, 0.0, 2.0), axis=1)
    log_lik = np.sum(norm.logcdf(y * (weights @ X.T)), axis=1)
    return log_prior + log_lik


def gaussian_entropy(log_std):
    return 0.5 * log_std.shape[0] * (1.0 + np.log(2 * np.pi)) + np.sum(log_std)


def elbo(var_params, X, y, eps):
    mean, log_std = var_params["mean"], var_params["log_std"]
    samples = eps * np.exp(log_std) + mean
    return np.mean(log_joint(samples, X, y)) + gaussian_entropy(log_std)


def loss(params, data):
    return -elbo(params, data["X"], data["y"], data["eps"]) / len(data["y"])


def fit(params, data, step_size=0.05, num_iters=30):
    objective_grad = grad(loss)
    for _ in range(num_iters):
        g = objective_grad(params, data)
        params = {k: v - step_size * g[k] for k, v in params.items()}
    return params


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.standard_normal((30, 3)), np.ones(30)])
    true_w = np.array([1.5, -1.0, 0.5, 0.2])
    y = np.where(X @ true_w + rng.standard_normal(30) > 0, 1.0, -1.0)
    params = {"mean": 0.1 * rng.standard_normal(4), "log_std": -1.0 + 0.1 * rng.standard_normal(4)}
    eps = rng.standard_normal((5, 4))  # fixed Monte Carlo draws
    return params, {"X": X, "y": y, "eps": eps}
