"""A multi-layer perceptron classifier on a synthetic three-class problem, in the style of
autograd's neural_net example: ``make_nn_funs`` packs every layer into one flat parameter vector
and returns closures that unpack it, predict log-probabilities and compute the regularised loss."""

import numpy as np
from optimizers import adam

import adcli


def make_nn_funs(layer_sizes, L2_reg):
    shapes = list(zip(layer_sizes[:-1], layer_sizes[1:]))
    num_weights = sum((m + 1) * n for m, n in shapes)

    def unpack_layers(W_vect):
        for m, n in shapes:
            yield W_vect[:m * n].reshape((m, n)), W_vect[m * n:m * n + n]
            W_vect = W_vect[(m + 1) * n:]

    def predictions(W_vect, inputs):
        for W, b in unpack_layers(W_vect):
            outputs = np.dot(inputs, W) + b
            inputs = np.tanh(outputs)
        return outputs - logsumexp(outputs)

    def loss(W_vect, X, T):
        log_prior = -L2_reg * np.dot(W_vect, W_vect)
        log_lik = np.sum(predictions(W_vect, X) * T)
        return -log_prior - log_lik

    def frac_err(W_vect, X, T):
        return np.mean(np.argmax(T, 1) != np.argmax(predictions(W_vect, X), 1))

    return num_weights, predictions, loss, frac_err


def logsumexp(x):
    """Row-wise log-sum-exp, kept as a column."""
    m = np.max(x, axis=1, keepdims=True)
    return m + np.log(np.sum(np.exp(x - m), axis=1, keepdims=True))


def make_data(rng, n_per_class=100, dim=16, classes=3):
    centres = 2.0 * rng.standard_normal((classes, dim))
    X = np.concatenate([c + rng.standard_normal((n_per_class, dim)) for c in centres])
    labels = np.repeat(np.arange(classes), n_per_class)
    return X, np.eye(classes)[labels]


layer_sizes = [16, 32, 32, 3]
L2_REG = 1e-3
num_weights, predictions, loss_fun, frac_err = make_nn_funs(layer_sizes, L2_reg=L2_REG)
BATCH = 60


def batches(X, T, i):
    idx = slice((i * BATCH) % len(X), (i * BATCH) % len(X) + BATCH)
    return X[idx], T[idx]


def gradient_case(seed=0):
    rng = np.random.default_rng(seed)
    X, T = make_data(rng)
    order = rng.permutation(len(X))
    X, T = X[order], T[order]
    W = 0.1 * rng.standard_normal(num_weights)
    return loss_fun, (W, *batches(X, T, 0))


def main(num_iters=200):
    rng = np.random.default_rng(0)
    X, T = make_data(rng)
    order = rng.permutation(len(X))
    X, T = X[order], T[order]
    loss_grad = adcli.grad(loss_fun)

    def objective_grad(W, i):
        return loss_grad(W, *batches(X, T, i))

    W = adam(objective_grad, 0.1 * rng.standard_normal(num_weights), num_iters, step_size=0.01)
    print(f"neural_net: train loss {loss_fun(W, X, T):.4f}, error {frac_err(W, X, T):.3f}")


if __name__ == "__main__":
    main()
