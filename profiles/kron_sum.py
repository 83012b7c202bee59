"""Sum of a Kronecker product: ``np.sum(np.kron(x, y))`` with x 20x20 and y 40x40 (an 800x800
result). Mirrors Mooncake.jl's inter-framework benchmark case ``kron_sum``
(bench/run_benchmarks.jl); gradient with respect to both matrices."""
import numpy as np

import adcli

NAME = "kron_sum"
ARGNUMS = (0, 1)


def f(x, y):
    return np.sum(np.kron(x, y))


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((20, 20)), rng.standard_normal((40, 40))


def main():
    args = inputs()
    value, grads = adcli.value_and_grad(f, argnums=ARGNUMS)(*args)
    print(f"{NAME}: value = {float(value):.6f}")
    for name, g in zip(("x", "y"), grads):
        print(f"  grad {name}: shape {g.shape}, norm {np.linalg.norm(g):.6f}")


if __name__ == "__main__":
    main()
