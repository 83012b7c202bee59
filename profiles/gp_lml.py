"""Log marginal likelihood of a Gaussian process with a squared-exponential kernel and Gaussian
noise, computed through a Cholesky factorisation: inputs x = 0.0, 0.2, ..., 25.4 (128 points),
noise variance s = 1.0, observations y drawn from the GP itself with a fixed seed. Mirrors
Mooncake.jl's inter-framework benchmark case ``gp_lml`` (bench/run_benchmarks.jl,
``logpdf(GP(SEKernel())(x, s), y)`` via AbstractGPs); gradient with respect to x, y and s."""
import numpy as np

import adcli

NAME = "gp_lml"
ARGNUMS = (0, 1, 2)


def se_kernel(a, b):
    """Squared-exponential kernel matrix k(a_i, b_j) = exp(-(a_i - b_j)^2 / 2)."""
    return np.exp(-0.5 * (a[:, None] - b[None, :]) ** 2)


def f(x, y, s):
    n = x.shape[0]
    K = se_kernel(x, x) + s * np.eye(n)
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    logdet = 2.0 * np.sum(np.log(np.diagonal(L)))
    return -0.5 * (np.dot(y, alpha) + logdet + n * np.log(2.0 * np.pi))


def inputs(seed=0):
    x = np.arange(128) * 0.2
    s = 1.0
    K = se_kernel(x, x) + s * np.eye(x.shape[0])
    rng = np.random.default_rng(seed)
    y = np.linalg.cholesky(K) @ rng.standard_normal(x.shape[0])
    return x, y, s


def main():
    args = inputs()
    value, grads = adcli.value_and_grad(f, argnums=ARGNUMS)(*args)
    print(f"{NAME}: value = {float(value):.6f}")
    for name, g in zip(("x", "y"), grads[:2]):
        print(f"  grad {name}: shape {g.shape}, norm {np.linalg.norm(g):.6f}")
    print(f"  grad s: {grads[2]:.6f}")


if __name__ == "__main__":
    main()
