"""Expert rule for gmm.py's top suggestion: ``gmm_log_likelihood(params, data)``.

All components at once with batched 2x2 linear algebra in place of scipy's per-component
multivariate normal; the pullback weighs each point by its responsibilities (the softmax over
components of the cluster log-likelihoods) and uses the Gaussian's closed-form derivatives in its
mean and covariance, the covariance's cotangent taken back through C = L^T L + eps I."""

import numpy as np

import adcli.rules

TARGET = ("__main__.gmm_log_likelihood(dict{'log proportions': f64[1d], means: f64[2d], "
          "'lower triangles': f64[3d]}, f64[2d])")
PARAMS = "dict{'log proportions': f64[1d], means: f64[2d], 'lower triangles': f64[3d]}"


@adcli.rules.rule("__main__:gmm_log_likelihood", PARAMS, "f64[2d]")
def gmm_rule(params, data):
    logits, means, Ls = params["log proportions"], params["means"], params["lower triangles"]
    K, D = means.shape
    m = logits.max()
    log_w = logits - m - np.log(np.sum(np.exp(logits - m)))
    C = np.matmul(Ls.transpose(0, 2, 1), Ls) + 1e-6 * np.eye(D)
    Cinv = np.linalg.inv(C)
    _, logdet = np.linalg.slogdet(C)
    diff = data[None, :, :] - means[:, None, :]  # (K, N, D)
    sol = np.matmul(diff, Cinv)  # C is symmetric: rows of diff @ Cinv are Cinv @ diff_n
    quad = np.sum(sol * diff, axis=2)
    lls = log_w[:, None] - 0.5 * quad - 0.5 * logdet[:, None] - 0.5 * D * np.log(2 * np.pi)
    top = lls.max(axis=0)
    e = np.exp(lls - top)
    tot = e.sum(axis=0)
    value = np.sum(top + np.log(tot))

    def pullback(g):
        resp = g * (e / tot)  # (K, N)
        Rk = resp.sum(axis=1)
        g_logits = Rk - g * len(data) * np.exp(log_w)
        g_means = np.einsum("kn,knd->kd", resp, sol)
        S = np.einsum("kn,kni,knj->kij", resp, sol, sol)
        dC = 0.5 * (S - Rk[:, None, None] * Cinv)
        g_L = 2.0 * np.matmul(Ls, dC)
        return ({"log proportions": g_logits, "means": g_means, "lower triangles": g_L},
                lambda: -np.einsum("kn,knd->nd", resp, sol))

    return value, pullback
