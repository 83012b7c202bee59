"""A small incompressible fluid simulation on a periodic grid, the initial velocity optimised so
that the smoke ends near a target picture (autograd's fluidsim example, rewritten): finite
differences by np.roll, a Jacobi pressure projection, semi-Lagrangian advection by bilinear
interpolation with integer index arrays."""

import numpy as np
from optimizers import sgd

import adcli

GRID = 24


def project(vx, vy, num_iters=10):
    """Make the velocity field approximately divergence-free by a few Jacobi sweeps for the pressure."""
    h = 1.0 / vx.shape[0]
    div = -0.5 * h * (np.roll(vx, -1, axis=0) - np.roll(vx, 1, axis=0) + np.roll(vy, -1, axis=1) - np.roll(vy, 1, axis=1))
    p = np.zeros(vx.shape)
    for _ in range(num_iters):
        p = (div + np.roll(p, 1, axis=0) + np.roll(p, -1, axis=0) + np.roll(p, 1, axis=1) + np.roll(p, -1, axis=1)) / 4.0
    vx = vx - 0.5 * (np.roll(p, -1, axis=0) - np.roll(p, 1, axis=0)) / h
    vy = vy - 0.5 * (np.roll(p, -1, axis=1) - np.roll(p, 1, axis=1)) / h
    return vx, vy


def advect(f, vx, vy):
    """Move field f along the velocity by tracing back and interpolating bilinearly."""
    rows, cols = f.shape
    cell_ys, cell_xs = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    center_xs = (cell_xs - vx).ravel()
    center_ys = (cell_ys - vy).ravel()
    left_ix = np.floor(center_xs).astype(int)
    top_ix = np.floor(center_ys).astype(int)
    rw = center_xs - left_ix
    bw = center_ys - top_ix
    left_ix, right_ix = np.mod(left_ix, rows), np.mod(left_ix + 1, rows)
    top_ix, bot_ix = np.mod(top_ix, cols), np.mod(top_ix + 1, cols)
    flat_f = (1 - rw) * ((1 - bw) * f[left_ix, top_ix] + bw * f[left_ix, bot_ix]) \
        + rw * ((1 - bw) * f[right_ix, top_ix] + bw * f[right_ix, bot_ix])
    return np.reshape(flat_f, (rows, cols))


def simulate(vx, vy, smoke, num_time_steps):
    for _ in range(num_time_steps):
        vx_updated = advect(vx, vx, vy)
        vy_updated = advect(vy, vx, vy)
        vx, vy = project(vx_updated, vy_updated)
        smoke = advect(smoke, vx, vy)
    return smoke


def distance_from_target_image(smoke, target):
    return np.mean((target - smoke) ** 2)


def make_problem(n=GRID):
    rows, cols = np.indices((n, n))
    smoke = np.exp(-((rows - n / 3) ** 2 + (cols - n / 2) ** 2) / (n / 4) ** 2)
    target = np.exp(-((rows - 2 * n / 3) ** 2 + (cols - n / 3) ** 2) / (n / 4) ** 2)
    return smoke, target


def make_objective(smoke, target, num_time_steps=8):
    def objective(params):
        init_vx, init_vy = params[0], params[1]
        final_smoke = simulate(init_vx, init_vy, smoke, num_time_steps)
        return distance_from_target_image(final_smoke, target)

    return objective


def gradient_case(seed=0):
    smoke, target = make_problem()
    return make_objective(smoke, target), (np.zeros((2, GRID, GRID)),)


def main(num_iters=25):
    smoke, target = make_problem()
    objective = make_objective(smoke, target)
    grad = adcli.grad(objective)
    params = sgd(lambda p, i: grad(p), np.zeros((2, GRID, GRID)), num_iters, step_size=200.0)
    print(f"fluidsim: distance {objective(params):.5f}")


if __name__ == "__main__":
    main()
