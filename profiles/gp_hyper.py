"""Gaussian-process regression hyperparameter learning, written like autograd's
gaussian_process example: ``make_gp_funs(cov_func, num_cov_params)`` returns the number of
parameters and the closures ``predict`` and ``log_marginal_likelihood(params, x, y)``; the
objective ``f`` is the ``log_marginal_likelihood`` closure. Parameters: a constant prior mean,
the log noise variance, then the RBF kernel's log output scale and one log length-scale per
input dimension (5 in all). The marginal likelihood goes through ``np.linalg.cholesky`` and
``np.linalg.solve`` with the Cholesky factor (``predict`` solves with the full covariance).
Data: 120 points in 2-D (uniform on [-2, 2]^2, a smooth function plus noise, fixed seed). Not
part of Mooncake's suite: a realistic model; gradient with respect to the params vector."""
import numpy as np

import adcli

NAME = "gp_hyper"
ARGNUMS = 0

N_POINTS = 120
D = 2


def make_gp_funs(cov_func, num_cov_params):
    """Functions that compute the predictive mean and covariance and the log marginal likelihood
    of a GP with a constant mean; params = [mean, log noise variance, *cov_params]."""

    def unpack_kernel_params(params):
        mean = params[0]
        cov_params = params[2:]
        noise_scale = np.exp(params[1]) + 0.0001
        return mean, cov_params, noise_scale

    def predict(params, x, y, xstar):
        """Returns the predictive mean and covariance at locations xstar."""
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
        L = np.linalg.cholesky(cov_y_y)
        r = np.linalg.solve(L, y - prior_mean)
        return (-0.5 * np.dot(r, r) - np.sum(np.log(np.diag(L)))
                - 0.5 * len(y) * np.log(2 * np.pi))

    return num_cov_params + 2, predict, log_marginal_likelihood


def rbf_covariance(kernel_params, x, xp):
    output_scale = np.exp(kernel_params[0])
    lengthscales = np.exp(kernel_params[1:])
    diffs = np.expand_dims(x / lengthscales, 1) - np.expand_dims(xp / lengthscales, 0)
    return output_scale * np.exp(-0.5 * np.sum(diffs**2, axis=2))


num_params, predict, f = make_gp_funs(rbf_covariance, num_cov_params=D + 1)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.0, 2.0, size=(N_POINTS, D))
    y = np.sin(2.0 * x[:, 0]) * np.cos(x[:, 1]) + 0.5 * x[:, 1] + 0.1 * rng.standard_normal(N_POINTS)
    params = np.array([0.0, np.log(0.05), 0.0, np.log(0.8), np.log(1.2)])
    return params, x, y


def main():
    args = inputs()
    value, grads = adcli.value_and_grad(f, argnums=ARGNUMS)(*args)
    print(f"{NAME}: value = {float(value):.6f}")
    print(f"  grad params: {np.array2string(grads, precision=4)}")


if __name__ == "__main__":
    main()
