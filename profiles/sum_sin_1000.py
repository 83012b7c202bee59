"""Sum of the sine of a vector: ``np.sum(np.sin(x))`` for x of length 1000. Mirrors Mooncake.jl's
inter-framework benchmark case ``sum_sin_1000`` (bench/run_benchmarks.jl): one elementwise
primitive and one reduction."""
import numpy as np

import adcli

NAME = "sum_sin_1000"
ARGNUMS = 0


def f(x):
    return np.sum(np.sin(x))


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(1000),)


def main():
    args = inputs()
    value, grads = adcli.value_and_grad(f, argnums=ARGNUMS)(*args)
    print(f"{NAME}: value = {float(value):.6f}")
    print(f"  grad x: shape {grads.shape}, norm {np.linalg.norm(grads):.6f}")


if __name__ == "__main__":
    main()
