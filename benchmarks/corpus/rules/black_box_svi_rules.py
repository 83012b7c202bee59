"""Expert rule for black_box_svi.py's top suggestion: the closure
``black_box_variational_inference.<locals>.variational_objective`` with the script's funnel
``log_density`` (D = 2, the script's ``num_samples``).

The noise is drawn as the original draws it (a generator seeded by the iteration); the funnel's
log-density and its derivatives in closed form replace scipy's norm.logpdf; the pullback is the
reparameterisation gradient: the density's gradient at the samples, mapped back through
samples = eps * exp(log_std) + mean, plus the entropy's."""

import numpy as np

import adcli.rules

TARGET = "__main__:black_box_variational_inference.<locals>.variational_objective(f64[1d], int)"
SIGMA_SCALE = 1.35  # the script's prior scale of log sigma
LOG_2PI = np.log(2 * np.pi)


@adcli.rules.rule("__main__:black_box_variational_inference.<locals>.variational_objective", "f64[1d]", "int")
def objective_rule(params, t):
    D = 2
    num_samples = 2000
    mean, log_std = params[:D], params[D:]
    eps = np.random.default_rng(t).standard_normal((num_samples, D))
    std = np.exp(log_std)
    samples = eps * std + mean
    mu, log_sigma = samples[:, 0], samples[:, 1]
    inv_var = np.exp(-2.0 * log_sigma)
    logp = (-0.5 * (log_sigma / SIGMA_SCALE) ** 2 - np.log(SIGMA_SCALE) - LOG_2PI
            - log_sigma - 0.5 * mu ** 2 * inv_var)
    entropy = 0.5 * D * (1.0 + LOG_2PI) + np.sum(log_std)
    value = -(entropy + np.mean(logp))

    def pullback(g):
        d_mu = -mu * inv_var
        d_ls = -log_sigma / SIGMA_SCALE ** 2 - 1.0 + mu ** 2 * inv_var
        dsamp = np.stack([d_mu, d_ls], axis=1) * (-g / num_samples)
        gp = np.empty_like(params)
        gp[:D] = dsamp.sum(axis=0)
        gp[D:] = np.sum(dsamp * eps, axis=0) * std - g
        return gp, None

    return value, pullback
