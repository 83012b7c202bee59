"""Low-rank matrix factorisation: Y ~ sum of K rank-one terms np.outer(u_k, v_k), fitted by
squared error with a small L2 penalty; gradient with respect to U and V. A realistic model whose
derived np.outer calls dominate: the advisor's case for importing a library rule."""
import numpy as np

import adcli

NAME = "low_rank"
ARGNUMS = (0, 1)
RANK = 8


def reconstruct(U, V):
    Y = np.outer(U[0], V[0])
    for k in range(1, RANK):
        Y = Y + np.outer(U[k], V[k])
    return Y


def f(U, V, Y):
    R = Y - reconstruct(U, V)
    return np.sum(R ** 2) + 1e-3 * (np.sum(U ** 2) + np.sum(V ** 2))


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((RANK, 30)) * 0.5
    V = rng.standard_normal((RANK, 20)) * 0.5
    Y = rng.standard_normal((30, 4)) @ rng.standard_normal((4, 20))
    return U, V, Y


def main():
    args = inputs()
    value, (gU, gV) = adcli.value_and_grad(f, argnums=ARGNUMS)(*args)
    print(f"{NAME}: value = {float(value):.6f}")
    print(f"  grad U: shape {gU.shape}, norm {np.linalg.norm(gU):.6f}")
    print(f"  grad V: shape {gV.shape}, norm {np.linalg.norm(gV):.6f}")


if __name__ == "__main__":
    main()
