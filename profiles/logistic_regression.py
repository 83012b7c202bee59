"""L2-regularised logistic regression: mean logistic loss ``log(1 + exp(z)) - t * z`` with
``z = X @ w + b``, written with ``np.logaddexp`` so it is stable for large |z|, plus
``lam / 2 * ||w||^2``. Data are generated in the script (500 samples, 20 features, labels drawn
from a logistic model with a fixed seed). Not part of Mooncake's suite: a realistic small model;
gradient with respect to the weights w and the bias b."""
import numpy as np

import adcli

NAME = "logistic_regression"
ARGNUMS = (0, 1)


def f(w, b, X, t, lam):
    z = X @ w + b
    loss = np.mean(np.logaddexp(0.0, z) - t * z)
    return loss + 0.5 * lam * np.sum(w**2)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    n, d = 500, 20
    X = rng.standard_normal((n, d))
    w_true = rng.standard_normal(d)
    p = 1.0 / (1.0 + np.exp(-(X @ w_true + 0.5)))
    t = (rng.uniform(size=n) < p).astype(np.float64)
    w = 0.1 * rng.standard_normal(d)
    b = 0.0
    return w, b, X, t, 1e-2


def main():
    args = inputs()
    value, grads = adcli.value_and_grad(f, argnums=ARGNUMS)(*args)
    print(f"{NAME}: value = {float(value):.6f}")
    print(f"  grad w: shape {grads[0].shape}, norm {np.linalg.norm(grads[0]):.6f}")
    print(f"  grad b: {grads[1]:.6f}")


if __name__ == "__main__":
    main()
