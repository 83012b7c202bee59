"""Expert rule for fisher_kpp.py's top suggestion: the method ``FisherKPP.step``, one explicit Euler
step (the advice prefers it to a rule for the whole ``simulate`` loop: it saves nearly as much
and is a smaller rule).

The pullback is the discrete adjoint of the step: the Laplacian's transpose (the mirrored ends
make it non-symmetric there), the reaction's derivative r (1 - 2u), and the two parameters'
gradients as inner products with the step's own terms.

``simulate_rule`` (below, not registered) is the whole time loop as one rule, the earlier top
suggestion: its measured saving was 72% (benchmarks/corpus/RESULTS.md of 2026-12-05, 16:37)."""

import numpy as np

import adcli.rules

TARGET = "__main__:FisherKPP.step(obj(__main__.FisherKPP), f64[1d], f64, f64)"


def _lap(u, dx2):
    out = np.empty_like(u)
    out[1:-1] = u[2:] - 2.0 * u[1:-1] + u[:-2]
    out[0] = 2.0 * (u[1] - u[0])
    out[-1] = 2.0 * (u[-2] - u[-1])
    return out / dx2


def _lap_t(b, dx2):
    c = -2.0 * b
    c[1:] += b[:-1]
    c[:-1] += b[1:]
    c[1] += b[0]
    c[-2] += b[-1]
    return c / dx2


@adcli.rules.rule("__main__:FisherKPP.step", "obj(__main__.FisherKPP)", "f64[1d]", "f64", "f64")
def step_rule(self, u, D, r):
    dt, dx2 = self.dt, self.dx ** 2
    lap = _lap(u, dx2)
    growth = u * (1.0 - u)
    out = u + dt * (D * lap + r * growth)

    def pullback(b):
        db = dt * b
        gu = b + D * _lap_t(db, dx2) + r * (1.0 - 2.0 * u) * db
        return None, gu, np.float64(np.dot(db, lap)), np.float64(np.dot(db, growth))

    return out, pullback


def simulate_rule(self, log_params, num_snapshots):
    D, r = np.exp(log_params[0]), np.exp(log_params[1])
    dt, dx2, spp = self.dt, self.dx ** 2, self.steps_per_snapshot
    steps = num_snapshots * spp
    us = np.empty((steps + 1, len(self.x)))
    us[0] = self.initial_condition()
    laps = np.empty((steps, len(self.x)))
    for k in range(steps):
        u = us[k]
        laps[k] = _lap(u, dx2)
        us[k + 1] = u + dt * (D * laps[k] + r * u * (1.0 - u))
    out = us[spp::spp].copy()

    def pullback(G):
        b = np.zeros(us.shape[1])
        gD = gr = 0.0
        for k in range(steps - 1, -1, -1):
            if (k + 1) % spp == 0:
                b = b + G[(k + 1) // spp - 1]
            u = us[k]
            gD += dt * np.dot(b, laps[k])
            gr += dt * np.dot(b, u * (1.0 - u))
            b = b + dt * (D * _lap_t(b, dx2) + r * (1.0 - 2.0 * u) * b)
        return None, np.array([gD * D, gr * r]), None

    return out, pullback
