"""Sum of a vector written as a hand-written while loop over its elements. Mirrors Mooncake.jl's
inter-framework benchmark case ``_sum_1000`` (bench/run_benchmarks.jl), x of length 1000: 1000
scalar indexings and 1000 scalar additions, so it measures the per-primitive cost of the tape."""
import numpy as np

import adcli

NAME = "_sum_1000"
ARGNUMS = 0


def f(x):
    y = 0.0
    n = 0
    while n < len(x):
        y += x[n]
        n += 1
    return y


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
