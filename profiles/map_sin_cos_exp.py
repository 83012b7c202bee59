"""A Python-level map of a scalar function over the elements of x (10x10), stacked into an array
and summed: ``np.sum(np.stack([g(v) for v in x.ravel()]))`` with ``g(v) = sin(cos(exp(v)))``.
Mirrors Mooncake.jl's inter-framework benchmark case ``map_sin_cos_exp``
(bench/run_benchmarks.jl, ``sum(map(x -> sin(cos(exp(x))), x))``)."""
import numpy as np

import adcli

NAME = "map_sin_cos_exp"
ARGNUMS = 0


def g(v):
    return np.sin(np.cos(np.exp(v)))


def f(x):
    return np.sum(np.stack([g(v) for v in x.ravel()]))


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
