"""Expert rule for spring_mass.py's top suggestion: ``simulate(log_k, x0, v0, masses, num_steps, dt)``.

The spring loop becomes vectorised stretches and forces; the forward pass keeps the positions,
velocities and stretches of every step; the pullback is the adjoint of the symplectic Euler
scheme, step by step in reverse, with the stiffnesses', masses' and initial state's gradients."""

import numpy as np

import adcli.rules

TARGET = "__main__.simulate(f64[1d], f64[1d], f64[1d], f64[1d], int, float)"
DAMPING, REST = 0.05, 1.0  # the script's defaults


def _stretch(x):
    s = np.empty_like(x)
    s[0] = x[0] - REST
    s[1:] = np.diff(x) - REST
    return s


@adcli.rules.rule("__main__:simulate", "f64[1d]", "f64[1d]", "f64[1d]", "f64[1d]", "int", "float")
def simulate_rule(log_k, x0, v0, masses, num_steps, dt):
    k = np.exp(log_k)
    xs = np.empty((num_steps + 1, len(x0)))
    vs = np.empty_like(xs)
    S = np.empty((num_steps, len(x0)))
    F = np.empty_like(S)
    xs[0], vs[0] = x0, v0
    for t in range(num_steps):
        s = _stretch(xs[t])
        ks = k * s
        f = -ks
        f[:-1] += ks[1:]
        S[t], F[t] = s, f
        vs[t + 1] = vs[t] + dt * (f / masses - DAMPING * vs[t])
        xs[t + 1] = xs[t] + dt * vs[t + 1]
    out = xs[1:].copy()

    def pullback(G):
        bx = np.zeros(len(x0))
        bv = np.zeros(len(x0))
        bk = np.zeros(len(x0))
        bm = np.zeros(len(x0))
        bdt = 0.0
        for t in range(num_steps - 1, -1, -1):
            bx = bx + G[t]
            bdt += np.dot(bx, vs[t + 1])
            bv = bv + dt * bx  # x' = x + dt v'
            bdt += np.dot(bv, F[t] / masses - DAMPING * vs[t])
            ba = dt * bv  # v' = v + dt a
            bF = ba / masses
            bm -= ba * F[t] / masses ** 2
            bv = bv - DAMPING * ba
            bks = -bF
            bks[1:] += bF[:-1]
            bk += bks * S[t]
            bs = bks * k
            bx = bx + bs
            bx[:-1] -= bs[1:]
        return bk * k, bx, bv, bm, None, float(bdt)

    return out, pullback
