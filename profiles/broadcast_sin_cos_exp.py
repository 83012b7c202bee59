"""The same map as ``map_sin_cos_exp`` written with whole-array ufuncs:
``np.sum(np.sin(np.cos(np.exp(x))))`` for x 10x10. Mirrors Mooncake.jl's inter-framework
benchmark case ``broadcast_sin_cos_exp`` (bench/run_benchmarks.jl, ``sum(sin.(cos.(exp.(x))))``)."""
import numpy as np

import adcli

NAME = "broadcast_sin_cos_exp"
ARGNUMS = 0


def f(x):
    return np.sum(np.sin(np.cos(np.exp(x))))


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
