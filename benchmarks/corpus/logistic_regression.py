"""L2-regularised logistic regression whose features are expanded by a Python-level helper: each
raw column is standardised and given a squared term in a loop over columns, inside the loss (the
scaling is part of the model: it sees the current batch)."""

import numpy as np
from optimizers import sgd

import adcli


def expand_features(X, scales):
    """Standardise every column and add its square, both scaled by a learned per-column weight."""
    columns = []
    for j in range(X.shape[1]):
        col = X[:, j]
        z = (col - np.mean(col)) / (np.std(col) + 1e-8)
        columns.append(scales[j] * z)
        columns.append(scales[j] * z ** 2)
    return np.stack(columns, axis=1)


def log_loss(logits, y):
    return np.mean(np.logaddexp(0.0, -y * logits))


def loss(params, X, y, l2=1e-3):
    features = expand_features(X, params["scales"])
    logits = np.dot(features, params["w"]) + params["b"]
    return log_loss(logits, y) + l2 * (np.sum(params["w"] ** 2) + np.sum(params["scales"] ** 2))


def make_data(rng, n=400, d=12):
    X = rng.standard_normal((n, d)) * rng.uniform(0.5, 3.0, size=d)
    true_w = rng.standard_normal(2 * d)
    Z = (X - X.mean(0)) / X.std(0)
    logits = np.concatenate([Z, Z ** 2], axis=1)[:, np.argsort(np.repeat(np.arange(2), d).reshape(2, d).T.ravel())] @ true_w
    y = np.where(rng.uniform(size=n) < 1 / (1 + np.exp(-logits)), 1.0, -1.0)
    return X, y


def init_params(d):
    return {"scales": np.ones(d), "w": np.zeros(2 * d), "b": np.array(0.0)}


BATCH = 100


def gradient_case(seed=0):
    rng = np.random.default_rng(seed)
    X, y = make_data(rng)
    return loss, (init_params(X.shape[1]), X[:BATCH], y[:BATCH])


def main(num_iters=150):
    rng = np.random.default_rng(0)
    X, y = make_data(rng)
    grad = adcli.grad(loss)

    def batch_grad(params, i):
        s = (i * BATCH) % len(X)
        return grad(params, X[s:s + BATCH], y[s:s + BATCH])

    params = sgd(batch_grad, init_params(X.shape[1]), num_iters, step_size=0.5)
    print(f"logistic_regression: loss {loss(params, X, y):.4f}")


if __name__ == "__main__":
    main()
