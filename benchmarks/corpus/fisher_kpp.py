"""Fit the diffusivity and growth rate of a Fisher-KPP front, u_t = D u_xx + r u (1 - u), to
snapshots of a travelling wave: explicit Euler on a one-dimensional grid with zero-flux ends,
the simulation a method of a small solver class, the discrete Laplacian a helper."""

import numpy as np
from optimizers import adam

import adcli


def laplacian_1d(u, dx):
    """Second difference with mirrored (zero-flux) end points."""
    padded = np.concatenate([u[1:2], u, u[-2:-1]])
    return (padded[2:] - 2.0 * u + padded[:-2]) / dx ** 2


def reaction(u, r):
    return r * u * (1.0 - u)


class FisherKPP:
    def __init__(self, n=80, length=40.0, dt=0.05, steps_per_snapshot=20):
        self.x = np.linspace(0.0, length, n)
        self.dx = self.x[1] - self.x[0]
        self.dt = dt
        self.steps_per_snapshot = steps_per_snapshot

    def initial_condition(self):
        return 1.0 / (1.0 + np.exp(2.0 * (self.x - 5.0)))

    def step(self, u, D, r):
        return u + self.dt * (D * laplacian_1d(u, self.dx) + reaction(u, r))

    def simulate(self, log_params, num_snapshots):
        D, r = np.exp(log_params[0]), np.exp(log_params[1])
        u = self.initial_condition()
        snapshots = []
        for _ in range(num_snapshots):
            for _ in range(self.steps_per_snapshot):
                u = self.step(u, D, r)
            snapshots.append(u)
        return np.stack(snapshots)


def make_loss(solver, observed):
    def loss(log_params):
        predicted = solver.simulate(log_params, len(observed))
        return np.sum((predicted - observed) ** 2) / observed.size

    return loss


def make_problem(seed=0):
    rng = np.random.default_rng(seed)
    solver = FisherKPP()
    truth = solver.simulate(np.log([1.0, 0.5]), 6)
    return solver, truth + 0.01 * rng.standard_normal(truth.shape)


def gradient_case(seed=0):
    solver, observed = make_problem(seed)
    return make_loss(solver, observed), (np.log([0.5, 0.8]),)


def main(num_iters=40):
    solver, observed = make_problem()
    loss = make_loss(solver, observed)
    grad = adcli.grad(loss)
    log_params = adam(lambda p, i: grad(p), np.log([0.5, 0.8]), num_iters, step_size=0.05)
    print(f"fisher_kpp: D {np.exp(log_params[0]):.3f}, r {np.exp(log_params[1]):.3f}, loss {loss(log_params):.2e}")


if __name__ == "__main__":
    main()
