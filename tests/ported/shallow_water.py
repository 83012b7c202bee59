"""Recover the initial surface of a 1-D shallow-water channel from tide-gauge readings.

Staggered grid: heights at cell centres, velocities at the faces between cells; the channel is
closed at both ends (the last face is a wall, and np.roll wraps it round to the first).
"""

import numpy as np

GRAVITY = 9.81


def step(h, u, depth, dt, dx, drag, smoothing):
    u -= dt * (GRAVITY * (np.roll(h, -1) - h) / dx + drag * u)
    u[-1] = 0.0
    flux = (depth + h) * u
    h -= dt * (flux - np.roll(flux, 1)) / dx
    h[1:-1] += smoothing * (h[2:] - 2 * h[1:-1] + h[:-2])
    return h, u


def simulate(h0, log_drag, depth, gauges, num_steps, dt, dx):
    h = h0.copy()
    u = np.zeros_like(h0)
    readings = []
    for _ in range(num_steps):
        h, u = step(h, u, depth, dt, dx, np.exp(log_drag), smoothing=0.05)
        readings.append(h[gauges])
    return np.stack(readings)


def loss(params, data):
    readings = simulate(params["h0"], params["log_drag"], data["depth"], data["gauges"], data["num_steps"], data["dt"],
                        data["dx"])
    misfit = 0.5 * np.mean(((readings - data["observed"]) / data["gauge_error"]) ** 2)
    roughness = np.sum(np.diff(params["h0"]) ** 2)
    return misfit + 10.0 * roughness


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    n = 16
    x = np.arange(n) + 0.5
    depth = 1.0 + 0.2 * np.cos(2 * np.pi * x / n)
    gauges = np.array([2, 7, 13])
    true_h0 = 0.1 * np.exp(-((x - 5.0) ** 2) / 4.0)
    data = {"depth": depth, "gauges": gauges, "num_steps": 20, "dt": 0.05, "dx": 1.0}
    data["observed"] = simulate(true_h0, np.log(0.1), **data) + 0.002 * rng.standard_normal((20, 3))
    data["gauge_error"] = 0.01
    params = {"h0": 0.05 * np.exp(-((x - 6.0) ** 2) / 6.0) + 0.01 * rng.standard_normal(n), "log_drag": np.log(0.2)}
    return params, data
