"""A small multi-layer perceptron classifier with a softmax cross-entropy objective."""

import numpy as np
from scipy.special import logsumexp

from adcli import grad


def init_random_params(scale, layer_sizes, rng):
    """A list of (weights, biases) tuples, one for each layer."""
    return [
        (scale * rng.standard_normal((m, n)), scale * rng.standard_normal(n))
        for m, n in zip(layer_sizes[:-1], layer_sizes[1:])
    ]


def neural_net_predict(params, inputs):
    """Class log-probabilities, one row per example."""
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs - logsumexp(outputs, axis=1, keepdims=True)


def l2_norm(params):
    return sum(np.sum(W**2) + np.sum(b**2) for W, b in params)


def log_posterior(params, inputs, targets, l2_reg):
    log_prior = -l2_reg * l2_norm(params)
    log_lik = np.sum(neural_net_predict(params, inputs) * targets)
    return log_prior + log_lik


def accuracy(params, inputs, targets):
    predicted_class = np.argmax(neural_net_predict(params, inputs), axis=1)
    return np.mean(predicted_class == np.argmax(targets, axis=1))


def loss(params, data):
    return -log_posterior(params, data["inputs"], data["targets"], data["l2_reg"]) / len(data["inputs"])


def fit(params, data, step_size=0.1, num_iters=20):
    objective_grad = grad(loss)
    for _ in range(num_iters):
        g = objective_grad(params, data)
        params = [(W - step_size * dW, b - step_size * db) for (W, b), (dW, db) in zip(params, g)]
    return params


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    params = init_random_params(0.5, [4, 6, 3], rng)
    inputs = rng.standard_normal((12, 4))
    labels = rng.integers(0, 3, size=12)
    targets = np.eye(3)[labels]
    return params, {"inputs": inputs, "targets": targets, "l2_reg": 0.01}
