"""Recover the initial temperature of a plate from a noisy measurement after it has diffused:
the heat equation u_t = kappa (u_xx + u_yy) on a square with the edges held at zero, explicit
five-point steps by slicing, a smoothness prior on the estimate, and a learned diffusivity."""

import numpy as np
from optimizers import adam

import adcli


def interior_laplacian(u, h):
    """The five-point Laplacian at the interior points of u (the edges are fixed)."""
    return (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]) / h ** 2


def with_zero_edges(interior):
    return np.pad(interior, 1)


def heat_step(u, kappa, dt, h):
    return with_zero_edges(u[1:-1, 1:-1] + dt * kappa * interior_laplacian(u, h))


def diffuse(u0, log_kappa, num_steps, dt, h):
    kappa = np.exp(log_kappa)
    u = u0
    for _ in range(num_steps):
        u = heat_step(u, kappa, dt, h)
    return u


def smoothness(u, h):
    gx = np.diff(u, axis=0) / h
    gy = np.diff(u, axis=1) / h
    return np.sum(gx ** 2) + np.sum(gy ** 2)


def make_objective(observed, num_steps, dt, h, prior_weight=1e-4):
    def objective(params):
        u0, log_kappa = params["u0"], params["log_kappa"]
        final = diffuse(u0, log_kappa, num_steps, dt, h)
        return np.sum((final - observed) ** 2) + prior_weight * smoothness(u0, h)

    return objective


def make_problem(seed=0, n=32, num_steps=30):
    rng = np.random.default_rng(seed)
    h = 1.0 / (n - 1)
    dt = 0.2 * h ** 2
    xs = np.linspace(0.0, 1.0, n)
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    truth = np.exp(-((X - 0.35) ** 2 + (Y - 0.6) ** 2) / 0.02) + 0.5 * np.exp(-((X - 0.7) ** 2 + (Y - 0.3) ** 2) / 0.01)
    truth[0, :] = truth[-1, :] = truth[:, 0] = truth[:, -1] = 0.0
    observed = diffuse(truth, np.log(1.0), num_steps, dt, h) + 0.01 * rng.standard_normal((n, n))
    params = {"u0": np.zeros((n, n)), "log_kappa": np.log(0.7)}
    return make_objective(observed, num_steps, dt, h), params


def gradient_case(seed=0):
    objective, params = make_problem(seed)
    return objective, (params,)


def main(num_iters=40):
    objective, params = make_problem()
    grad = adcli.grad(objective)
    params = adam(lambda p, i: grad(p), params, num_iters, step_size=0.05)
    print(f"heat_equation: misfit {objective(params):.4f}, kappa {np.exp(params['log_kappa']):.3f}")


if __name__ == "__main__":
    main()
