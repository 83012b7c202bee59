"""Gaussian-process regression: fit the kernel's hyperparameters by maximising the marginal likelihood."""

import numpy as np
from scipy.stats import multivariate_normal


def make_gp_funs(cov_func, num_cov_params):
    """Functions that compute the GP's predictions and marginal likelihood.

    The parameters are a flat vector: the mean, the log noise variance, then the kernel's.
    """

    def unpack_kernel_params(params):
        mean = params[0]
        cov_params = params[2:]
        noise_scale = np.exp(params[1]) + 0.0001
        return mean, cov_params, noise_scale

    def predict(params, x, y, xstar):
        """Mean and covariance of the latent function at the test points xstar."""
        mean, cov_params, noise_scale = unpack_kernel_params(params)
        cov_f_f = cov_func(cov_params, xstar, xstar)
        cov_y_f = cov_func(cov_params, x, xstar)
        cov_y_y = cov_func(cov_params, x, x) + noise_scale * np.eye(len(y))
        pred_mean = mean + np.dot(np.linalg.solve(cov_y_y, cov_y_f).T, y - mean)
        pred_cov = cov_f_f - np.dot(np.linalg.solve(cov_y_y, cov_y_f).T, cov_y_f)
        return pred_mean, pred_cov

    def log_marginal_likelihood(params, x, y):
        mean, cov_params, noise_scale = unpack_kernel_params(params)
        cov_y_y = cov_func(cov_params, x, x) + noise_scale * np.eye(len(y))
        prior_mean = mean * np.ones(len(y))
        return multivariate_normal.logpdf(y, prior_mean, cov_y_y)

    return num_cov_params + 2, predict, log_marginal_likelihood


def rbf_covariance(kernel_params, x, xp):
    output_scale = np.exp(kernel_params[0])
    lengthscales = np.exp(kernel_params[1:])
    diffs = np.expand_dims(x / lengthscales, 1) - np.expand_dims(xp / lengthscales, 0)
    return output_scale * np.exp(-0.5 * np.sum(diffs**2, axis=2))


D = 2
num_params, predict, log_marginal_likelihood = make_gp_funs(rbf_covariance, num_cov_params=D + 1)


def loss(params, data):
    return -log_marginal_likelihood(params, data["x"], data["y"])


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.0, 2.0, size=(10, D))
    y = np.sin(x[:, 0]) + 0.5 * np.cos(2.0 * x[:, 1]) + 0.1 * rng.standard_normal(10)
    params = np.array([0.1, -2.0, 0.2, 0.3, -0.1]) + 0.05 * rng.standard_normal(num_params)
    return params, {"x": x, "y": y}
