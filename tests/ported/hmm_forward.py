"""A hidden Markov model with Gaussian emissions, fitted by maximising the forward-algorithm likelihood."""

import numpy as np
import scipy.special
import scipy.stats


def log_normalize(logits, axis=-1):
    return logits - scipy.special.logsumexp(logits, axis=axis, keepdims=True)


def emission_log_probs(params, observations):
    """log p(x_t | z_t = k), shape (time steps, states)."""
    scales = np.exp(params["log_scales"])
    return scipy.stats.norm.logpdf(observations[:, None], params["means"], scales)


def hmm_log_likelihood(params, observations):
    log_pi = log_normalize(params["init_logits"])
    log_A = log_normalize(params["trans_logits"], axis=1)  # rows: from, columns: to
    log_B = emission_log_probs(params, observations)
    log_alpha = log_pi + log_B[0]
    for t in range(1, len(observations)):
        log_alpha = scipy.special.logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B[t]
    return scipy.special.logsumexp(log_alpha)


def loss(params, data):
    return -hmm_log_likelihood(params, data["observations"]) / len(data["observations"])


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    num_states, num_steps = 3, 15
    true_means = np.array([-2.0, 0.0, 2.5])
    z, zs = 0, []
    for _ in range(num_steps):
        zs.append(z)
        z = z if rng.uniform() < 0.8 else int(rng.integers(num_states))
    observations = true_means[zs] + 0.5 * rng.standard_normal(num_steps)
    params = {
        "init_logits": 0.1 * rng.standard_normal(num_states),
        "trans_logits": 0.5 * rng.standard_normal((num_states, num_states)) + 2.0 * np.eye(num_states),
        "means": np.array([-1.5, 0.3, 2.0]) + 0.1 * rng.standard_normal(num_states),
        "log_scales": np.log(0.7) + 0.1 * rng.standard_normal(num_states),
    }
    return params, {"observations": observations}
