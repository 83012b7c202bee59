"""Learn a linear-Gaussian state-space model's dynamics and noise levels by Kalman-filter likelihood."""

import numpy as np


def kalman_log_likelihood(params, observations, emission):
    A = params["transition"]
    Q = np.diag(np.exp(params["log_process_noise"]))
    R = np.exp(params["log_obs_noise"]) * np.eye(emission.shape[0])
    H = emission
    mean = np.zeros(A.shape[0])
    cov = np.eye(A.shape[0])
    loglik = 0.0
    for y in observations:
        # predict
        mean = A @ mean
        cov = A @ cov @ A.T + Q
        # update
        S = H @ cov @ H.T + R
        residual = y - H @ mean
        gain = np.linalg.solve(S, H @ cov).T
        _, logdet = np.linalg.slogdet(2 * np.pi * S)
        loglik = loglik - 0.5 * (logdet + residual @ np.linalg.solve(S, residual))
        mean = mean + gain @ residual
        cov = cov - gain @ S @ gain.T
    return loglik


def loss(params, data):
    return -kalman_log_likelihood(params, data["observations"], data["emission"]) / len(data["observations"])


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    theta = 0.3
    true_A = 0.95 * np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    emission = np.array([[1.0, 0.0], [0.5, 1.0]])
    x = np.array([1.0, 0.0])
    observations = []
    for _ in range(12):
        x = true_A @ x + 0.1 * rng.standard_normal(2)
        observations.append(emission @ x + 0.2 * rng.standard_normal(2))
    params = {
        "transition": true_A + 0.05 * rng.standard_normal((2, 2)),
        "log_process_noise": np.log([0.02, 0.02]),
        "log_obs_noise": np.array(np.log(0.05)),
    }
    return params, {"observations": np.array(observations), "emission": emission}
