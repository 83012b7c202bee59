"""Negative-binomial regression for over-dispersed counts, fitted by maximum likelihood."""

import numpy as np
import scipy.special as sp

from adcli import grad


def negbin_loglike(r, p, counts):
    return sp.gammaln(r + counts) - sp.gammaln(r) - sp.gammaln(counts + 1) + counts * np.log(p) + r * np.log1p(-p)


def log_likelihood(params, X, counts):
    mu = np.exp(X @ params["weights"] + params["intercept"])
    r = np.exp(params["log_r"])
    p = mu / (mu + r)
    return np.sum(negbin_loglike(r, p, counts))


def loss(params, data):
    return -log_likelihood(params, data["X"], data["counts"]) / len(data["counts"])


def fit(params, data, step_size=0.05, num_iters=30):
    g = grad(loss)
    for _ in range(num_iters):
        d = g(params, data)
        params = {k: params[k] - step_size * d[k] for k in params}
    return params


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((20, 3))
    true_w = np.array([0.5, -0.3, 0.2])
    mu = np.exp(X @ true_w + 1.0)
    counts = rng.negative_binomial(3.0, 3.0 / (3.0 + mu)).astype(float)
    params = {"weights": 0.1 * rng.standard_normal(3), "intercept": np.array(0.5), "log_r": 0.7}
    return params, {"X": X, "counts": counts}
