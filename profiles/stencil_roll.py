"""Explicit finite-difference simulation of 2-D advection-diffusion
``u_t + v . grad(u) = kappa * laplacian(u)`` on a periodic 48x48 grid of the unit square: a
fixed rotating velocity field, first-order upwind differences for advection and the five-point
Laplacian for diffusion, every neighbour taken with ``np.roll`` along both axes (8 rolls per
step), forward Euler for 50 steps of 0.004 in a Python loop (400 ``np.roll`` calls per primal).
Loss = sum of squared errors of the final field against a target field (made with another
diffusion coefficient plus noise, fixed seed). Not part of Mooncake's suite: a realistic
PDE-style model; gradient with respect to the initial field u0 and the diffusion coefficient
kappa."""
import numpy as np

import adcli

NAME = "stencil_roll"
ARGNUMS = (0, 1)

N = 48
STEPS = 50
DT = 0.004
DX = 1.0 / N


def velocity_field(n):
    """A solid-body rotation about the centre of the square, speed at most about 0.7."""
    x = (np.arange(n) + 0.5) / n
    X, Y = np.meshgrid(x, x, indexing="ij")
    return -(Y - 0.5) * 2.0, (X - 0.5) * 2.0


def step(u, kappa, vx, vy, dt, dx):
    """One forward-Euler step: upwind advection plus five-point diffusion, periodic boundaries."""
    u_xm = np.roll(u, 1, axis=0)
    u_xp = np.roll(u, -1, axis=0)
    u_ym = np.roll(u, 1, axis=1)
    u_yp = np.roll(u, -1, axis=1)
    lap = (u_xm + u_xp + u_ym + u_yp - 4.0 * u) / dx**2
    # Upwind: backward difference where the flow is positive, forward difference where negative.
    dudx = np.where(vx > 0, u - np.roll(u, 1, axis=0), np.roll(u, -1, axis=0) - u) / dx
    dudy = np.where(vy > 0, u - np.roll(u, 1, axis=1), np.roll(u, -1, axis=1) - u) / dx
    return u + dt * (kappa * lap - vx * dudx - vy * dudy)


def simulate(u0, kappa, vx, vy):
    u = u0
    for _ in range(STEPS):
        u = step(u, kappa, vx, vy, DT, DX)
    return u


def f(u0, kappa, vx, vy, target):
    u = simulate(u0, kappa, vx, vy)
    return np.sum((u - target) ** 2)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    vx, vy = velocity_field(N)
    x = (np.arange(N) + 0.5) / N
    X, Y = np.meshgrid(x, x, indexing="ij")
    blob = np.exp(-((X - 0.35) ** 2 + (Y - 0.5) ** 2) / (2 * 0.08**2))
    target = simulate(blob, 0.02, vx, vy) + 0.01 * rng.standard_normal((N, N))
    u0 = blob + 0.05 * rng.standard_normal((N, N))
    kappa = 0.01
    return u0, kappa, vx, vy, target


def main():
    args = inputs()
    value, grads = adcli.value_and_grad(f, argnums=ARGNUMS)(*args)
    print(f"{NAME}: value = {float(value):.6f}")
    print(f"  grad u0: shape {grads[0].shape}, norm {np.linalg.norm(grads[0]):.6f}")
    print(f"  grad kappa: {grads[1]:.6f}")


if __name__ == "__main__":
    main()
