"""Log-likelihood of an observation sequence under a hidden Markov model with K = 6 states and
1-D Gaussian emissions, computed by the forward algorithm in log space: a Python loop over
T = 100 time steps, each calling a hand-written, max-shifted ``logsumexp(a, axis)`` helper.
The initial and transition probabilities are passed as unconstrained logits and normalised with a
log-softmax helper built on the same logsumexp; emission standard deviations are fixed. The
observations are sampled from another HMM with a fixed seed. Not part of Mooncake's suite: a
realistic sequential model; gradient with respect to the initial-state logits, the transition
logits (6x6) and the emission means."""
import numpy as np

import adcli

NAME = "hmm_forward"
ARGNUMS = (0, 1, 2)

K = 6
T = 100


def logsumexp(a, axis=None):
    """log(sum(exp(a), axis)), shifted by the maximum so that it cannot overflow."""
    m = np.max(a, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(a - m), axis=axis)) + np.squeeze(m, axis=axis)


def log_softmax(logits, axis=-1):
    return logits - np.expand_dims(logsumexp(logits, axis=axis), axis)


def gaussian_log_density(y, means, sigmas):
    """log N(y_t | means_k, sigmas_k^2) for every time step t and state k: a T x K array."""
    z = (y[:, None] - means[None, :]) / sigmas[None, :]
    return -0.5 * z**2 - np.log(sigmas)[None, :] - 0.5 * np.log(2.0 * np.pi)


def hmm_log_likelihood(init_logits, trans_logits, means, sigmas, y):
    log_pi = log_softmax(init_logits)
    log_A = log_softmax(trans_logits, axis=1)  # rows: from-state, columns: to-state
    log_b = gaussian_log_density(y, means, sigmas)
    log_alpha = log_pi + log_b[0]
    for t in range(1, y.shape[0]):
        log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_b[t]
    return logsumexp(log_alpha, axis=0)


def f(init_logits, trans_logits, means, sigmas, y):
    return hmm_log_likelihood(init_logits, trans_logits, means, sigmas, y)


def sample_hmm(rng, pi, A, means, sigmas, length):
    states = np.empty(length, dtype=np.int64)
    states[0] = rng.choice(K, p=pi)
    for t in range(1, length):
        states[t] = rng.choice(K, p=A[states[t - 1]])
    return means[states] + sigmas[states] * rng.standard_normal(length)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    true_means = np.linspace(-3.0, 3.0, K)
    sigmas = np.full(K, 0.8)
    A = 0.7 * np.eye(K) + 0.3 * rng.dirichlet(np.ones(K), size=K)
    pi = np.full(K, 1.0 / K)
    y = sample_hmm(rng, pi, A, true_means, sigmas, T)
    init_logits = 0.1 * rng.standard_normal(K)
    trans_logits = 2.0 * np.eye(K) + 0.1 * rng.standard_normal((K, K))
    means = true_means + 0.3 * rng.standard_normal(K)
    return init_logits, trans_logits, means, sigmas, y


def main():
    args = inputs()
    value, grads = adcli.value_and_grad(f, argnums=ARGNUMS)(*args)
    print(f"{NAME}: value = {float(value):.6f}")
    for name, g in zip(("init_logits", "trans_logits", "means"), grads):
        print(f"  grad {name}: shape {g.shape}, norm {np.linalg.norm(g):.6f}")


if __name__ == "__main__":
    main()
