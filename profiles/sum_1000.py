"""Sum of a vector: ``np.sum(x)`` for x of length 1000. Mirrors Mooncake.jl's inter-framework
benchmark case ``sum_1000`` (bench/run_benchmarks.jl): one reduction, so the gradient time is
almost entirely the engine's fixed per-call cost."""
import numpy as np

import adcli

NAME = "sum_1000"
ARGNUMS = 0


def f(x):
    return np.sum(x)


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
