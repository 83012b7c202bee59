"""Linear regression with Student-t noise, robust to a few gross outliers; the degrees of freedom are learned too."""

import numpy as np
import scipy.stats as stats


def log_likelihood(params, X, y):
    predictions = X @ params["weights"] + params["bias"]
    scale = np.exp(params["log_scale"])
    df = 1.0 + np.exp(params["log_df"])
    return np.sum(stats.t.logpdf(y, df, predictions, scale))


def log_prior(params):
    return np.sum(stats.norm.logpdf(params["weights"], loc=0.0, scale=3.0))


def loss(params, data):
    return -(log_likelihood(params, data["X"], data["y"]) + log_prior(params)) / len(data["y"])


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((25, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.3 + 0.2 * rng.standard_normal(25)
    y[[3, 11, 17]] += np.array([6.0, -8.0, 5.0])  # outliers
    params = {
        "weights": 0.5 * rng.standard_normal(3),
        "bias": np.zeros(1),
        "log_scale": np.array(np.log(0.5)),
        "log_df": np.array(1.0),
    }
    return params, {"X": X, "y": y}
