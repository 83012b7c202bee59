"""Expectation-maximisation for a discrete hidden Markov model, the E step taken as the gradient
of the log-likelihood with respect to the log parameters (autograd's hmm_em example, rewritten):
the gradient of the forward algorithm's log-likelihood is the expected sufficient statistics."""

import numpy as np
from scipy.special import logsumexp

import adcli


def EM(init_params, data, callback=None, num_iters=15):
    def EM_update(params):
        natural_params = tuple(np.log(p) for p in params)
        loglike, E_stats = adcli.value_and_grad(log_partition_function)(natural_params, data)
        if callback:
            callback(loglike, params)
        return tuple(normalize(s) for s in E_stats)

    params = init_params
    for _ in range(num_iters):
        params = EM_update(params)
    return params


def normalize(a):
    def replace_zeros(a):
        return np.where(a > 0.0, a, 1.0)

    return a / replace_zeros(a.sum(-1, keepdims=True))


def log_partition_function(natural_params, data):
    if isinstance(data, list):
        return sum(log_partition_function(natural_params, seq) for seq in data)
    log_pi, log_A, log_B = natural_params
    log_alpha = log_pi
    for y in data:
        log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B[:, y]
    return logsumexp(log_alpha)


def initialize_hmm_parameters(num_states, num_outputs, rng):
    init_pi = normalize(rng.uniform(size=num_states))
    init_A = normalize(rng.uniform(size=(num_states, num_states)))
    init_B = normalize(rng.uniform(size=(num_states, num_outputs)))
    return init_pi, init_A, init_B


def sample_sequences(rng, num_seqs=3, length=60, num_states=4, num_outputs=6):
    A = normalize(np.eye(num_states) * 8 + rng.uniform(size=(num_states, num_states)))
    B = normalize(rng.uniform(size=(num_states, num_outputs)) ** 3)
    seqs = []
    for _ in range(num_seqs):
        z, ys = 0, []
        for _ in range(length):
            ys.append(int(rng.choice(num_outputs, p=B[z])))
            z = int(rng.choice(num_states, p=A[z]))
        seqs.append(np.array(ys))
    return seqs


def gradient_case(seed=0):
    rng = np.random.default_rng(seed)
    data = sample_sequences(rng)
    params = initialize_hmm_parameters(4, 6, rng)
    return log_partition_function, (tuple(np.log(p) for p in params), data)


def main():
    rng = np.random.default_rng(0)
    data = sample_sequences(rng)
    params = EM(initialize_hmm_parameters(4, 6, rng), data,
                callback=lambda ll, p: None)
    ll = log_partition_function(tuple(np.log(p) for p in params), data)
    print(f"hmm_em: log-likelihood {ll:.3f}")


if __name__ == "__main__":
    main()
