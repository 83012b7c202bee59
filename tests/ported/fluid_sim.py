"""A small incompressible fluid simulation: find the initial velocity field that carries dye onto a target.

Finite differences on a grid that wraps left-right and has solid walls at the top and bottom rows.
"""

import numpy as np


def laplacian(f):
    return np.roll(f, 1, axis=0) + np.roll(f, -1, axis=0) + np.roll(f, 1, axis=1) + np.roll(f, -1, axis=1) - 4 * f


def ddx(f):
    return 0.5 * (np.roll(f, -1, axis=1) - np.roll(f, 1, axis=1))


def ddy(f):
    return 0.5 * (np.roll(f, -1, axis=0) - np.roll(f, 1, axis=0))


def project(vx, vy, num_iters=8):
    """Remove most of the divergence of the velocity field with a few Jacobi sweeps for the pressure."""
    div = ddx(vx) + ddy(vy)
    p = np.zeros_like(div)
    for _ in range(num_iters):
        p[1:-1] = 0.25 * (np.roll(p, 1, axis=0) + np.roll(p, -1, axis=0) + np.roll(p, 1, axis=1) + np.roll(p, -1, axis=1)
                          - div)[1:-1]
    vx = vx - ddx(p)
    vy -= ddy(p)
    return vx, vy


def simulate(vx0, vy0, dye0, num_steps, dt, viscosity):
    vx = vx0.copy()
    vy = vy0.copy()
    dye = dye0.copy()
    for _ in range(num_steps):
        dvx = viscosity * laplacian(vx) - vx * ddx(vx) - vy * ddy(vx)
        dvy = viscosity * laplacian(vy) - vx * ddx(vy) - vy * ddy(vy)
        vx[1:-1] += dt * dvx[1:-1]  # the walls keep zero velocity
        vy[1:-1] += dt * dvy[1:-1]
        vx, vy = project(vx, vy)
        dye[1:-1] -= dt * (vx * ddx(dye) + vy * ddy(dye))[1:-1]
        dye *= 1.0 - 0.01 * dt  # a little decay
    return vx, vy, dye


def loss(params, data):
    # the initial dye is optimised too (the in-place updates below need it traced: an array copied
    # from plain data cannot hold a gradient)
    vx, vy, dye = simulate(params["vx"], params["vy"], params["dye"], data["num_steps"], data["dt"], data["viscosity"])
    kinetic = np.mean(vx**2 + vy**2)
    return np.sum((dye - data["target"]) ** 2) + 0.01 * kinetic


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    n = 8
    rows, cols = np.indices((n, n))
    dye = np.exp(-((rows - 3.5) ** 2 + (cols - 2.0) ** 2) / 4.0)
    target = np.exp(-((rows - 3.5) ** 2 + (cols - 5.0) ** 2) / 4.0)
    vx = 0.3 + 0.1 * rng.standard_normal((n, n))
    vy = 0.1 * rng.standard_normal((n, n))
    vx[0] = vx[-1] = vy[0] = vy[-1] = 0.0
    return {"vx": vx, "vy": vy, "dye": dye}, {"target": target, "num_steps": 5, "dt": 0.2, "viscosity": 0.05}
