"""Expert rule for heat_equation.py's top suggestion: ``heat_step(u, kappa, dt, h)``, one explicit
step (the advice prefers it to a rule for the whole ``diffuse`` loop: it saves nearly as much and
is a smaller rule).

Each explicit step is linear in the field: the pullback applies the interior five-point stencil's
transpose to the interior cotangent (the fixed edges pass nothing on), and the diffusivity's
gradient is the inner product of the step's cotangent with its Laplacian.

``diffuse_rule`` (below, not registered) is the whole time loop as one rule, the earlier top
suggestion: its measured saving was 61% (benchmarks/corpus/RESULTS.md of 2026-12-05, 16:37)."""

import numpy as np

import adcli.rules

TARGET = "__main__.heat_step(f64[2d], f64, float, float)"


def _lap(u, h2):
    return (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]) / h2


def _step_t(bi, c, shape):
    """A step's transpose applied to its interior cotangent ``bi`` (c = dt kappa / h^2): the
    interior point itself and its four neighbours, the edges passing nothing on."""
    g = np.zeros(shape)
    g[1:-1, 1:-1] = (1.0 - 4.0 * c) * bi
    g[2:, 1:-1] += c * bi
    g[:-2, 1:-1] += c * bi
    g[1:-1, 2:] += c * bi
    g[1:-1, :-2] += c * bi
    return g


@adcli.rules.rule("__main__:heat_step", "f64[2d]", "f64", "float", "float")
def heat_step_rule(u, kappa, dt, h):
    h2 = h * h
    lap = _lap(u, h2)
    out = np.zeros_like(u)
    out[1:-1, 1:-1] = u[1:-1, 1:-1] + (dt * kappa) * lap

    def pullback(b):
        bi = b[1:-1, 1:-1]
        g = _step_t(bi, dt * kappa / h2, u.shape)
        gk = np.sum(bi * lap) * dt
        # dt and h: the program does not differentiate them (thunks, computed only if asked)
        return g, np.float64(gk), (lambda: gk * kappa / dt), (lambda: -2.0 * gk * kappa / h)

    return out, pullback


def diffuse_rule(u0, log_kappa, num_steps, dt, h):
    kappa = float(np.exp(log_kappa))
    h2 = h * h
    us, laps = [u0], []
    u = u0
    for _ in range(num_steps):
        lap = _lap(u, h2)
        laps.append(lap)
        nxt = np.zeros_like(u)
        nxt[1:-1, 1:-1] = u[1:-1, 1:-1] + (dt * kappa) * lap
        us.append(nxt)
        u = nxt

    def pullback(b):
        gk = 0.0
        c = dt * kappa / h2
        for k in range(num_steps - 1, -1, -1):
            bi = b[1:-1, 1:-1]
            gk += dt * np.sum(bi * laps[k])
            b = _step_t(bi, c, b.shape)
        # dt and h enter through dt * kappa / h^2 only (the program does not differentiate them)
        return b, np.float64(gk * kappa), None, (lambda: gk * kappa / dt), (lambda: -2.0 * gk * kappa / h)

    return u, pullback
