"""Dirichlet-multinomial regression of word counts on document covariates."""

import numpy as np
from scipy.special import gammaln


def dirichlet_multinomial_logpmf(counts, alpha):
    """log p(counts | alpha) for each row, up to the multinomial coefficient."""
    total = np.sum(counts, axis=-1)
    alpha_sum = np.sum(alpha, axis=-1)
    return (gammaln(alpha_sum) - gammaln(total + alpha_sum)
            + np.sum(gammaln(counts + alpha) - gammaln(alpha), axis=-1))


def loss(params, data):
    alpha = np.exp(data["covariates"] @ params["W"] + params["log_base"])
    return -np.mean(dirichlet_multinomial_logpmf(data["counts"], alpha))


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    num_docs, num_covariates, vocab = 10, 2, 4
    covariates = rng.standard_normal((num_docs, num_covariates))
    probs = rng.dirichlet(np.ones(vocab), size=num_docs)
    counts = np.array([rng.multinomial(20, p) for p in probs], dtype=float)
    params = {"W": 0.2 * rng.standard_normal((num_covariates, vocab)), "log_base": np.zeros(vocab)}
    return params, {"covariates": covariates, "counts": counts}
