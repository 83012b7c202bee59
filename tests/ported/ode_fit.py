"""Fit a Lotka-Volterra predator-prey model to noisy population counts."""

import numpy as np
from scipy.integrate import odeint


def lotka_volterra(y, t, log_rates):
    prey, predator = y
    alpha, beta, delta, gamma = np.exp(log_rates)
    dprey = alpha * prey - beta * prey * predator
    dpredator = delta * prey * predator - gamma * predator
    return np.array([dprey, dpredator])


def trajectory(params, times):
    return odeint(lotka_volterra, params["y0"], times, args=(params["log_rates"],), rtol=1e-11, atol=1e-11)


def loss(params, data):
    populations = trajectory(params, data["times"])
    return np.mean((np.log(populations) - np.log(data["observed"])) ** 2)


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    times = np.linspace(0.0, 4.0, 9)
    true_params = {"y0": np.array([2.0, 1.0]), "log_rates": np.log([1.0, 0.5, 0.3, 0.8])}
    observed = trajectory(true_params, times) * np.exp(0.05 * rng.standard_normal((len(times), 2)))
    params = {"y0": np.array([1.8, 1.1]), "log_rates": true_params["log_rates"] + 0.1 * rng.standard_normal(4)}
    return params, {"times": times, "observed": observed}
