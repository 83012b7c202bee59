"""Expert rule for neural_net.py's top suggestion: the closure ``make_nn_funs.<locals>.predictions``
(the MLP's row-wise log-probabilities; ``loss`` adds the L2 prior and the targets' sum).

Forward: the layers unpacked as views of the flat vector, tanh hidden layers, a row-wise
log-softmax; the pullback is the textbook backward pass (the cotangent less softmax times its row
sums, then each layer's products), the flat gradient filled in place. The layer sizes are the
script's constant ``layer_sizes``.

``loss_rule`` (below, not registered) is the rule for ``loss``, the earlier top suggestion: its
measured saving was 56% (benchmarks/corpus/RESULTS.md of 2026-12-05, 16:37)."""

import sys

import numpy as np

import adcli.rules

TARGET = "__main__:make_nn_funs.<locals>.predictions(f64[1d], f64[2d])"


def _layers(W_vect, sizes):
    out, start = [], 0
    for m, n in zip(sizes[:-1], sizes[1:]):
        out.append((start, m, n))
        start += (m + 1) * n
    return out


def _forward(W_vect, X, layers):
    """The MLP's row-wise log-probabilities, and what its backward pass reads: the layers'
    inputs and the softmax's parts."""
    acts = [X]
    a = X
    for i, (s, m, n) in enumerate(layers):
        z = a @ W_vect[s:s + m * n].reshape(m, n) + W_vect[s + m * n:s + (m + 1) * n]
        if i < len(layers) - 1:
            a = np.tanh(z)
            acts.append(a)
    zmax = z.max(axis=1, keepdims=True)
    e = np.exp(z - zmax)
    se = e.sum(axis=1, keepdims=True)
    return z - zmax - np.log(se), acts, e, se


@adcli.rules.rule("__main__:make_nn_funs.<locals>.predictions", "f64[1d]", "f64[2d]")
def predictions_rule(W_vect, X):
    layers = _layers(W_vect, sys.modules["__main__"].layer_sizes)
    logp, acts, e, se = _forward(W_vect, X, layers)

    def pullback(g):
        gW = np.zeros_like(W_vect)
        dz = g - (e / se) * g.sum(axis=1, keepdims=True)
        for i in range(len(layers) - 1, -1, -1):
            s, m, n = layers[i]
            a_prev = acts[i]
            gW[s:s + m * n] = (a_prev.T @ dz).ravel()
            gW[s + m * n:s + (m + 1) * n] = dz.sum(axis=0)
            da = dz @ W_vect[s:s + m * n].reshape(m, n).T
            if i > 0:
                dz = da * (1.0 - a_prev ** 2)
        return gW, (lambda: da)

    return logp, pullback


def loss_rule(W_vect, X, T):
    script = sys.modules["__main__"]
    layers = _layers(W_vect, script.layer_sizes)
    l2 = script.L2_REG
    logp, acts, e, se = _forward(W_vect, X, layers)
    value = l2 * np.dot(W_vect, W_vect) - np.sum(logp * T)

    def pullback(g):
        gW = (2.0 * l2 * g) * W_vect
        d = -g * T
        dz = d - (e / se) * d.sum(axis=1, keepdims=True)
        for i in range(len(layers) - 1, -1, -1):
            s, m, n = layers[i]
            a_prev = acts[i]
            gW[s:s + m * n] += (a_prev.T @ dz).ravel()
            gW[s + m * n:s + (m + 1) * n] += dz.sum(axis=0)
            da = dz @ W_vect[s:s + m * n].reshape(m, n).T
            if i > 0:
                dz = da * (1.0 - a_prev ** 2)
        return gW, (lambda: da), (lambda: -g * logp)

    return value, pullback
