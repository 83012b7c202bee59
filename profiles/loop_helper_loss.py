"""Least squares with a graph-smoothness (fused) penalty: a vectorised data term
``mean((X @ w - y) ** 2)`` on a 2000x50 design matrix plus ``lam * smoothness_penalty(w, S)``,
where the helper computes ``sum over i < j of S[i, j] * (w[i] - w[j]) ** 2`` as a Python double
loop with scalar indexing ``w[i]``, ``w[j]`` over all 1225 pairs of weights (S: similarity
weights ``exp(-|i - j| / 5)`` between neighbouring coefficients, as for ordered features). Data:
generated with a fixed seed, true weights a smooth curve plus noise. Not part of Mooncake's
suite: a realistic regularised regression where the vectorised part is cheap for the AD engine
and the loop helper, called once per loss, is where the overhead sits; gradient with respect to
the weights w."""
import numpy as np

import adcli

NAME = "loop_helper_loss"
ARGNUMS = 0

N, D = 2000, 50


def smoothness_penalty(w, S):
    total = 0.0
    for i in range(len(w)):
        for j in range(i + 1, len(w)):
            total = total + S[i, j] * (w[i] - w[j]) ** 2
    return total


def f(w, X, y, S, lam):
    residual = X @ w - y
    return np.mean(residual**2) + lam * smoothness_penalty(w, S)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, D))
    w_true = np.sin(np.linspace(0.0, 3.0 * np.pi, D)) + 0.1 * rng.standard_normal(D)
    y = X @ w_true + 0.5 * rng.standard_normal(N)
    idx = np.arange(D)
    S = np.exp(-np.abs(idx[:, None] - idx[None, :]) / 5.0)
    w = 0.1 * rng.standard_normal(D)
    return w, X, y, S, 0.1


def main():
    args = inputs()
    value, grads = adcli.value_and_grad(f, argnums=ARGNUMS)(*args)
    print(f"{NAME}: value = {float(value):.6f}")
    print(f"  grad w: shape {grads.shape}, norm {np.linalg.norm(grads):.6f}")


if __name__ == "__main__":
    main()
