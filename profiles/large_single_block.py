"""A long straight-line chain of scalar products: x = [0.9, 0.99], ``y = x[0]; a = x[1]``, then
400 times ``y = y * a``; returns y (= 0.9 * 0.99**400). Mirrors Mooncake.jl's inter-framework
benchmark case ``large_single_block`` (bench/run_benchmarks.jl): 400 scalar primitives in one
basic block, so it measures the per-primitive cost of the tape."""
import numpy as np

import adcli

NAME = "large_single_block"
ARGNUMS = 0


def f(x):
    y = x[0]
    a = x[1]
    for _ in range(400):
        y = y * a
    return y


def inputs(seed=0):
    return (np.array([0.9, 0.99]),)


def main():
    args = inputs()
    value, grads = adcli.value_and_grad(f, argnums=ARGNUMS)(*args)
    print(f"{NAME}: value = {float(value):.6e}")
    print(f"  grad x: {np.array2string(grads, precision=6)}")


if __name__ == "__main__":
    main()
