"""Identify the stiffnesses of a chain of masses joined by springs from a recorded trajectory:
the forces summed spring by spring in a Python loop (as they are first written), symplectic
Euler steps, squared error against the record."""

import numpy as np
from optimizers import adam

import adcli

NUM_MASSES = 6


def spring_forces(x, log_k, rest_length):
    """Force on each mass from the springs between neighbours and the one to the wall."""
    k = np.exp(log_k)
    forces = np.zeros(len(x))
    forces[0] = forces[0] - k[0] * (x[0] - rest_length)
    for i in range(1, len(x)):
        stretch = x[i] - x[i - 1] - rest_length
        forces[i] = forces[i] - k[i] * stretch
        forces[i - 1] = forces[i - 1] + k[i] * stretch
    return forces


def simulate(log_k, x0, v0, masses, num_steps, dt, damping=0.05, rest_length=1.0):
    x, v = x0, v0
    xs = []
    for _ in range(num_steps):
        a = spring_forces(x, log_k, rest_length) / masses - damping * v
        v = v + dt * a
        x = x + dt * v
        xs.append(x)
    return np.stack(xs)


def make_loss(record, x0, v0, masses, dt):
    def loss(log_k):
        return np.mean((simulate(log_k, x0, v0, masses, len(record), dt) - record) ** 2)

    return loss


def make_problem(seed=0, num_steps=40, dt=0.05):
    rng = np.random.default_rng(seed)
    masses = 1.0 + 0.5 * rng.uniform(size=NUM_MASSES)
    x0 = np.arange(1, NUM_MASSES + 1, dtype=float) + 0.2 * rng.standard_normal(NUM_MASSES)
    v0 = np.zeros(NUM_MASSES)
    true_log_k = np.log(1.0 + rng.uniform(size=NUM_MASSES))
    record = simulate(true_log_k, x0, v0, masses, num_steps, dt) + 0.01 * rng.standard_normal((num_steps, NUM_MASSES))
    return make_loss(record, x0, v0, masses, dt), np.zeros(NUM_MASSES)


def gradient_case(seed=0):
    loss, log_k = make_problem(seed)
    return loss, (log_k,)


def main(num_iters=40):
    loss, log_k = make_problem()
    grad = adcli.grad(loss)
    log_k = adam(lambda p, i: grad(p), log_k, num_iters, step_size=0.05)
    print(f"spring_mass: loss {loss(log_k):.5f}")


if __name__ == "__main__":
    main()
