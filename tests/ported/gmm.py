"""Maximum-likelihood fit of a one-dimensional mixture of Gaussians (parameters packed in one vector)."""

import numpy as np
from scipy.special import logsumexp
from scipy.stats import norm

NUM_COMPONENTS = 3


def unpack_params(params):
    """Log mixture weights, means and standard deviations from the flat parameter vector."""
    k = NUM_COMPONENTS
    logits, means, log_stds = params[:k], params[k:2 * k], params[2 * k:]
    log_weights = logits - logsumexp(logits)
    return log_weights, means, np.exp(log_stds)


def mixture_log_density(params, x):
    log_weights, means, stds = unpack_params(params)
    cluster_lls = log_weights + norm.logpdf(x[:, None], means, stds)  # (points, components)
    return logsumexp(cluster_lls, axis=1)


def loss(params, data):
    return -np.mean(mixture_log_density(params, data["x"]))


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(-2.0, 0.5, 10), rng.normal(0.5, 0.3, 6), rng.normal(3.0, 0.8, 8)])
    params = np.concatenate([0.1 * rng.standard_normal(NUM_COMPONENTS), [-1.5, 0.0, 2.0], np.log([0.6, 0.6, 0.6])])
    return params, {"x": x}
