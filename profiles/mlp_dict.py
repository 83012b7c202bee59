"""A two-layer perceptron whose parameters live in a dict {'W1', 'b1', 'W2', 'b2'}: tanh hidden
layer of 32 units, linear output, mean squared error on generated regression data (200 samples,
8 features, 1 target, fixed seed). Not part of Mooncake's suite: a realistic small model that
exercises pytree gradients (the gradient is a dict with the same keys, shapes and dtypes)."""
import numpy as np

import adcli

NAME = "mlp_dict"
ARGNUMS = 0


def predict(params, X):
    h = np.tanh(X @ params["W1"] + params["b1"])
    return h @ params["W2"] + params["b2"]


def f(params, X, Y):
    return np.mean((predict(params, X) - Y) ** 2)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    n, d, hidden = 200, 8, 32
    X = rng.standard_normal((n, d))
    Y = np.sin(X[:, :1]) + 0.5 * X[:, 1:2] * X[:, 2:3] + 0.1 * rng.standard_normal((n, 1))
    params = {
        "W1": rng.standard_normal((d, hidden)) / np.sqrt(d),
        "b1": np.zeros(hidden),
        "W2": rng.standard_normal((hidden, 1)) / np.sqrt(hidden),
        "b2": np.zeros(1),
    }
    return params, X, Y


def main():
    args = inputs()
    value, grads = adcli.value_and_grad(f, argnums=ARGNUMS)(*args)
    print(f"{NAME}: value = {float(value):.6f}")
    for k in sorted(grads):
        print(f"  grad {k}: shape {grads[k].shape}, norm {np.linalg.norm(grads[k]):.6f}")


if __name__ == "__main__":
    main()
