"""Black-box stochastic variational inference with a diagonal Gaussian family on a
two-dimensional funnel-shaped target (autograd's black_box_svi example, rewritten):
``black_box_variational_inference`` returns the objective as a closure over the target."""

import numpy as np
from optimizers import adam
from scipy.stats import norm

import adcli


def black_box_variational_inference(logprob, D, num_samples):
    def unpack_params(params):
        mean, log_std = params[:D], params[D:]
        return mean, log_std

    def gaussian_entropy(log_std):
        return 0.5 * D * (1.0 + np.log(2 * np.pi)) + np.sum(log_std)

    def variational_objective(params, t):
        """A Monte Carlo estimate of the lower bound, with the noise seeded by the iteration."""
        mean, log_std = unpack_params(params)
        rs = np.random.default_rng(t)
        samples = rs.standard_normal((num_samples, D)) * np.exp(log_std) + mean
        lower_bound = gaussian_entropy(log_std) + np.mean(logprob(samples, t))
        return -lower_bound

    return variational_objective, unpack_params


def log_density(x, t):
    mu, log_sigma = x[:, 0], x[:, 1]
    sigma_density = norm.logpdf(log_sigma, 0, 1.35)
    mu_density = norm.logpdf(mu, 0, np.exp(log_sigma))
    return sigma_density + mu_density


D = 2
objective, unpack_params = black_box_variational_inference(log_density, D, num_samples=2000)


def gradient_case(seed=0):
    init_mean, init_log_std = -1 * np.ones(D), -5 * np.ones(D)
    return objective, (np.concatenate([init_mean, init_log_std]), 0)


def main(num_iters=300):
    init_mean, init_log_std = -1 * np.ones(D), -5 * np.ones(D)
    params = adam(adcli.grad(objective), np.concatenate([init_mean, init_log_std]), num_iters, step_size=0.1)
    mean, log_std = unpack_params(params)
    print(f"black_box_svi: mean {np.round(mean, 3)}, std {np.round(np.exp(log_std), 3)}")


if __name__ == "__main__":
    main()
