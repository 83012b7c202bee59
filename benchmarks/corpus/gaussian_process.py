"""Gaussian-process regression with an RBF kernel, hyperparameters fitted by maximising the log
marginal likelihood (autograd's gaussian_process example, rewritten): ``make_gp_funs`` returns the
parameter count, a predictive function and the likelihood as closures over the covariance function."""

import numpy as np
from optimizers import adam
from scipy.stats import multivariate_normal

import adcli


def make_gp_funs(cov_func, num_cov_params):
    def unpack_kernel_params(params):
        mean = params[0]
        cov_params = params[2:]
        noise_scale = np.exp(params[1]) + 0.0001
        return mean, cov_params, noise_scale

    def predict(params, x, y, xstar):
        mean, cov_params, noise_scale = unpack_kernel_params(params)
        cov_f_f = cov_func(cov_params, xstar, xstar)
        cov_y_f = cov_func(cov_params, x, xstar)
        cov_y_y = cov_func(cov_params, x, x) + noise_scale * np.eye(len(y))
        solved = np.linalg.solve(cov_y_y, cov_y_f)
        return mean + np.dot(solved.T, y - mean), cov_f_f - np.dot(solved.T, cov_y_f)

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
    return output_scale * np.exp(-0.5 * np.sum(diffs ** 2, axis=2))


def build_toy_dataset(rng, n_data=80, noise_std=0.1, D=2):
    x = rng.uniform(-3.0, 3.0, size=(n_data, D))
    y = np.cos(x[:, 0]) * np.sin(0.7 * x[:, 1]) + noise_std * rng.standard_normal(n_data)
    return x, y


D = 2
num_params, predict, log_marginal_likelihood = make_gp_funs(rbf_covariance, num_cov_params=D + 1)


def objective(params, x, y):
    return -log_marginal_likelihood(params, x, y)


def gradient_case(seed=0):
    rng = np.random.default_rng(seed)
    x, y = build_toy_dataset(rng)
    return objective, (0.1 * rng.standard_normal(num_params), x, y)


def main(num_iters=60):
    rng = np.random.default_rng(0)
    x, y = build_toy_dataset(rng)
    grad = adcli.grad(objective)
    params = adam(lambda p, i: grad(p, x, y), 0.1 * rng.standard_normal(num_params), num_iters, step_size=0.05)
    print(f"gaussian_process: -log marginal likelihood {objective(params, x, y):.4f}")


if __name__ == "__main__":
    main()
