"""Sum of a Kronecker product of a view and an upper triangle:
``np.sum(np.kron(x[0:20, 0:20], np.triu(y)))`` with x 40x30 and y 40x40. Mirrors Mooncake.jl's
inter-framework benchmark case ``kron_view_sum`` (bench/run_benchmarks.jl, ``view(x, 1:20, 1:20)``
and ``UpperTriangular(y)``); gradient with respect to both matrices (zero outside the view and
below the diagonal)."""
import numpy as np

import adcli

NAME = "kron_view_sum"
ARGNUMS = (0, 1)


def f(x, y):
    return np.sum(np.kron(x[0:20, 0:20], np.triu(y)))


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((40, 30)), rng.standard_normal((40, 40))


def main():
    args = inputs()
    value, grads = adcli.value_and_grad(f, argnums=ARGNUMS)(*args)
    print(f"{NAME}: value = {float(value):.6f}")
    for name, g in zip(("x", "y"), grads):
        print(f"  grad {name}: shape {g.shape}, norm {np.linalg.norm(g):.6f}, nonzeros {np.count_nonzero(g)}")


if __name__ == "__main__":
    main()
