"""Expert rule for gaussian_process.py's top suggestion: the closure
``make_gp_funs.<locals>.log_marginal_likelihood`` (with the script's RBF covariance).

One Cholesky factor serves the value and the whole gradient: with alpha = K^-1 (y - m), the
cotangent of K is (alpha alpha^T - K^-1) / 2, K^-1 from LAPACK's potri; every parameter's
gradient is a contraction of it with the kernel's own derivative."""

import numpy as np
from scipy.linalg import cho_solve, lapack

import adcli.rules

TARGET = "__main__:make_gp_funs.<locals>.log_marginal_likelihood(f64[1d], f64[2d], f64[1d])"


@adcli.rules.rule("__main__:make_gp_funs.<locals>.log_marginal_likelihood", "f64[1d]", "f64[2d]", "f64[1d]")
def lml_rule(params, x, y):
    n = len(y)
    mean, noise = params[0], np.exp(params[1]) + 0.0001
    scale, ls = np.exp(params[2]), np.exp(params[3:])
    xs = x / ls
    diffs = xs[:, None, :] - xs[None, :, :]
    Kf = scale * np.exp(-0.5 * np.sum(diffs ** 2, axis=2))
    K = Kf + noise * np.eye(n)
    L = np.linalg.cholesky(K)
    r = y - mean
    alpha = cho_solve((L, True), r)
    value = -0.5 * np.dot(r, alpha) - np.sum(np.log(np.diag(L))) - 0.5 * n * np.log(2 * np.pi)

    def pullback(g):
        half, _ = lapack.dpotri(L, lower=1)
        Kinv = half + np.tril(half, -1).T
        dK = (0.5 * g) * (np.outer(alpha, alpha) - Kinv)
        W = dK * Kf
        gp = np.empty_like(params)
        gp[0] = g * np.sum(alpha)
        gp[1] = np.trace(dK) * (noise - 0.0001)
        gp[2] = np.sum(W)
        gp[3:] = np.einsum("ij,ijd->d", W, diffs ** 2)

        def gx():
            return -2.0 * (xs * W.sum(axis=1)[:, None] - W @ xs) / ls

        return gp, gx, (lambda: -g * alpha)

    return value, pullback
