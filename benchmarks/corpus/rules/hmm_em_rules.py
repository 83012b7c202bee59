"""Expert rule for hmm_em.py's top suggestion: ``log_partition_function`` on one sequence.

The forward pass is the log-space forward algorithm with a NumPy log-sum-exp (scipy's costs tens
of microseconds of argument handling per call on 4 states); the pullback is the backward sweep of
the forward-backward algorithm: at each step the transition's posterior weights, their row sums
passed back, the emission columns accumulated where the sequence's symbols index them."""

import numpy as np

import adcli.rules

TARGET = "__main__.log_partition_function(tuple(f64[1d], f64[2d], f64[2d]), i64[1d])"


@adcli.rules.rule("__main__:log_partition_function", "tuple(f64[1d], f64[2d], f64[2d])", "i64[1d]")
def log_partition_rule(natural_params, data):
    log_pi, log_A, log_B = natural_params
    T, K = len(data), len(log_pi)
    alphas = np.empty((T + 1, K))
    alphas[0] = log_pi
    W = np.empty((T, K, K))  # the transition posteriors' weights, exp(s - lse) per column
    emis = log_B[:, data].T  # (T, K)
    for t in range(T):
        s = alphas[t][:, None] + log_A
        m = s.max(axis=0)
        w = np.exp(s - m)
        tot = w.sum(axis=0)
        W[t] = w / tot
        alphas[t + 1] = m + np.log(tot) + emis[t]
    top = alphas[T].max()
    e = np.exp(alphas[T] - top)
    value = top + np.log(e.sum())

    def pullback(g):
        dA = np.zeros_like(log_A)
        dE = np.empty((T, K))
        da = g * e / e.sum()
        for t in range(T - 1, -1, -1):
            dE[t] = da
            dS = W[t] * da
            dA += dS
            da = dS.sum(axis=1)
        dB = np.zeros_like(log_B)
        np.add.at(dB.T, data, dE)
        return (da, dA, dB), None

    return value, pullback
