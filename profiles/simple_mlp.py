"""A two-layer perceptron with a ReLU written as a mask product, squared error against targets:
``np.sum((Y - W2 @ relu(W1 @ X)) ** 2)`` with ``relu(h) = h * (0 <= h)``, W2 128x256, W1 256x128,
Y and X 128x70. Mirrors Mooncake.jl's inter-framework benchmark case ``simple_mlp``
(bench/run_benchmarks.jl); gradient with respect to W2, W1, Y and X."""
import numpy as np

import adcli

NAME = "simple_mlp"
ARGNUMS = (0, 1, 2, 3)


def relu(h):
    return h * (0 <= h)


def f(W2, W1, Y, X):
    return np.sum((Y - W2 @ relu(W1 @ X)) ** 2)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    W2 = rng.standard_normal((128, 256))
    W1 = rng.standard_normal((256, 128))
    Y = rng.standard_normal((128, 70))
    X = rng.standard_normal((128, 70))
    return W2, W1, Y, X


def main():
    args = inputs()
    value, grads = adcli.value_and_grad(f, argnums=ARGNUMS)(*args)
    print(f"{NAME}: value = {float(value):.6f}")
    for name, g in zip(("W2", "W1", "Y", "X"), grads):
        print(f"  grad {name}: shape {g.shape}, norm {np.linalg.norm(g):.6f}")


if __name__ == "__main__":
    main()
