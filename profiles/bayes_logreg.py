"""Bayesian logistic regression: the unnormalised log posterior ``log p(w, b | X, t)`` with an
isotropic Gaussian prior (scale 1 on the standardised-feature weights, 5 on the bias) and a
Bernoulli likelihood written with ``np.logaddexp``, accumulated over minibatches of 50 rows in a
Python loop. The user standardises the raw design matrix inside the objective, feature by feature
in a Python loop: outliers are clipped at 4 standard deviations (``np.mean``, ``np.std``) and the
clipped column is centred and scaled (``np.mean``, ``np.var``), so NumPy's statistics functions
are called about 200 times per evaluation (on the data, which is not differentiated). Generated
data: 1000 samples, 48 heterogeneous features (different scales and offsets, four heavy-tailed),
labels from a logistic model, fixed seed. Not part of Mooncake's suite: a realistic small model;
gradient with respect to the weights w and the bias b."""
import numpy as np

import adcli

NAME = "bayes_logreg"
ARGNUMS = (0, 1)

PRIOR_SCALE_W = 1.0
PRIOR_SCALE_B = 5.0
BATCH_SIZE = 50


def standardise(X, clip=4.0, eps=1e-8):
    """Clip each feature at mean +/- clip * std, then centre it and scale it to unit variance."""
    columns = []
    for j in range(X.shape[1]):
        col = X[:, j]
        mu, sd = np.mean(col), np.std(col)
        col = np.clip(col, mu - clip * sd, mu + clip * sd)
        columns.append((col - np.mean(col)) / np.sqrt(np.var(col) + eps))
    return np.stack(columns, axis=1)


def log_prior(w, b):
    return (-0.5 * np.sum(w**2) / PRIOR_SCALE_W**2 - 0.5 * b**2 / PRIOR_SCALE_B**2
            - w.shape[0] * np.log(PRIOR_SCALE_W) - np.log(PRIOR_SCALE_B)
            - 0.5 * (w.shape[0] + 1) * np.log(2.0 * np.pi))


def log_likelihood(w, b, Z, t, batch_size=BATCH_SIZE):
    """Bernoulli log-likelihood, accumulated over minibatches of rows."""
    total = 0.0
    for start in range(0, Z.shape[0], batch_size):
        logits = Z[start:start + batch_size] @ w + b
        tb = t[start:start + batch_size]
        # log sigmoid(z) = -log(1 + exp(-z)); t log s(z) + (1 - t) log s(-z)
        total = total + np.sum(tb * -np.logaddexp(0.0, -logits) + (1.0 - tb) * -np.logaddexp(0.0, logits))
    return total


def f(w, b, X, t):
    Z = standardise(X)
    return log_prior(w, b) + log_likelihood(w, b, Z, t)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    n, d = 1000, 48
    scales = np.exp(rng.uniform(-2.0, 3.0, size=d))
    offsets = rng.uniform(-50.0, 50.0, size=d)
    X = rng.standard_normal((n, d))
    X[:, :4] = rng.standard_t(3, size=(n, 4))  # a few heavy-tailed features with outliers
    X = X * scales + offsets
    w_true = rng.standard_normal(d) * (rng.uniform(size=d) < 0.5)
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    p = 1.0 / (1.0 + np.exp(-(Z @ w_true - 0.3)))
    t = (rng.uniform(size=n) < p).astype(np.float64)
    w = 0.1 * rng.standard_normal(d)
    b = 0.0
    return w, b, X, t


def main():
    args = inputs()
    value, grads = adcli.value_and_grad(f, argnums=ARGNUMS)(*args)
    print(f"{NAME}: value = {float(value):.6f}")
    print(f"  grad w: shape {grads[0].shape}, norm {np.linalg.norm(grads[0]):.6f}")
    print(f"  grad b: {grads[1]:.6f}")


if __name__ == "__main__":
    main()
