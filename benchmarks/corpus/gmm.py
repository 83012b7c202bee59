"""A two-dimensional Gaussian mixture fitted by gradient ascent on the log-likelihood (autograd's
gmm example, rewritten): parameters in a dict (log proportions, means, square roots of the
covariances), each component's log-density from scipy's multivariate normal, summed by logsumexp."""

import numpy as np
from optimizers import adam
from scipy.special import logsumexp
from scipy.stats import multivariate_normal as mvn

import adcli


def init_gmm_params(num_components, D, scale, rng):
    return {"log proportions": rng.standard_normal(num_components) * scale,
            "means": rng.standard_normal((num_components, D)) * scale,
            "lower triangles": np.zeros((num_components, D, D)) + np.eye(D)}


def log_normalize(x):
    return x - logsumexp(x)


def unpack_gmm_params(params):
    normalized_log_proportions = log_normalize(params["log proportions"])
    return normalized_log_proportions, params["means"], params["lower triangles"]


def make_psd(L):
    return np.dot(L.T, L) + 1e-6 * np.eye(L.shape[0])


def gmm_log_likelihood(params, data):
    cluster_lls = []
    for log_proportion, mean, chol in zip(*unpack_gmm_params(params)):
        cov = make_psd(chol)
        cluster_lls.append(log_proportion + mvn.logpdf(data, mean, cov))
    return np.sum(logsumexp(np.vstack(cluster_lls), axis=0))


def make_data(rng, num_per_cluster=150):
    centres = np.array([[-2.0, 0.0], [2.0, 1.0], [0.0, -2.5], [1.0, 3.0]])
    return np.concatenate([c + 0.6 * rng.standard_normal((num_per_cluster, 2)) for c in centres])


def objective(params, data):
    return -gmm_log_likelihood(params, data)


def gradient_case(seed=0):
    rng = np.random.default_rng(seed)
    data = make_data(rng)
    return objective, (init_gmm_params(4, 2, 0.5, rng), data)


def main(num_iters=100):
    rng = np.random.default_rng(0)
    data = make_data(rng)
    grad = adcli.grad(objective)
    params = adam(lambda p, i: grad(p, data), init_gmm_params(4, 2, 0.5, rng), num_iters, step_size=0.1)
    print(f"gmm: log-likelihood {gmm_log_likelihood(params, data):.3f}")


if __name__ == "__main__":
    main()
