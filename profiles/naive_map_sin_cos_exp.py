"""A naive elementwise map written as a Python double loop that writes into an empty array:
``y[i, j] = np.sin(np.cos(np.exp(x[i, j])))`` for x 10x10, then ``np.sum(y)``. Mirrors Mooncake.jl's
inter-framework benchmark case ``naive_map_sin_cos_exp`` (bench/run_benchmarks.jl): scalar
indexing, three scalar primitives and an item assignment per element."""
import numpy as np

import adcli

NAME = "naive_map_sin_cos_exp"
ARGNUMS = 0


def f(x):
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            y[i, j] = np.sin(np.cos(np.exp(x[i, j])))
    return np.sum(y)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((10, 10)),)


def main():
    args = inputs()
    value, grads = adcli.value_and_grad(f, argnums=ARGNUMS)(*args)
    print(f"{NAME}: value = {float(value):.6f}")
    print(f"  grad x: shape {grads.shape}, norm {np.linalg.norm(grads):.6f}")


if __name__ == "__main__":
    main()
