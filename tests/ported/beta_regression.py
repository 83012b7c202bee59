"""Beta regression for proportions: a logistic mean and a learned precision."""

import numpy as np
from scipy.special import expit
from scipy.stats import beta


def log_likelihood(params, X, y):
    mu = expit(X @ params["weights"] + params["bias"])
    phi = np.exp(params["log_precision"])
    return np.sum(beta.logpdf(y, mu * phi, (1.0 - mu) * phi))


def loss(params, data):
    return -log_likelihood(params, data["X"], data["y"]) / len(data["y"])


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((20, 2))
    mu = expit(X @ np.array([0.8, -0.5]) + 0.2)
    y = rng.beta(mu * 15.0, (1.0 - mu) * 15.0)
    params = {"weights": 0.2 * rng.standard_normal(2), "bias": 0.0, "log_precision": np.array([2.0])}
    return params, {"X": X, "y": y}
