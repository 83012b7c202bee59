"""Expert rule for ode_net.py's top suggestion: ``ode_pred(params, y0, t)``, scipy's odeint of a
one-hidden-layer tanh network.

The forward pass is SciPy's solve of the plain dynamics. The pullback is the adjoint method, as
the engine's own odeint rule does it, but with the network's vector-Jacobian products written by
hand instead of a nested gradient per evaluation: interval by interval from the last time back
to the first, odeint integrates the state backwards together with the adjoint ``a`` and the
parameters' accumulated cotangent (y' = f, a' = -a df/dy, theta' = -a df/dtheta). Cotangents of
y0 and of the times are returned as thunks (the program differentiates the weights only)."""

import numpy as np
from scipy.integrate import odeint

import adcli.rules

TARGET = "__main__.ode_pred(list(tuple(f64[2d], f64[1d]), tuple(f64[2d], f64[1d])), f64[1d], f64[1d])"
RTOL = ATOL = 1e-6  # the script's tolerances


def _dynamics(W1, b1, W2, b2):
    def f(y, _t):
        return np.tanh(y @ W1 + b1) @ W2 + b2
    return f


@adcli.rules.rule("__main__:ode_pred", "list(tuple(f64[2d], f64[1d]), tuple(f64[2d], f64[1d]))", "f64[1d]",
                  "f64[1d]")
def ode_pred_rule(params, y0, t):
    (W1, b1), (W2, b2) = params
    f = _dynamics(W1, b1, W2, b2)
    ys = odeint(f, y0, t, rtol=RTOL, atol=ATOL)
    n, h = len(y0), len(b1)
    sizes = [W1.size, h, W2.size, len(b2)]
    m = 2 * n + sum(sizes)

    def augmented(s, _t):
        y, a = s[:n], s[n:2 * n]
        z = np.tanh(y @ W1 + b1)
        dz = (W2 @ a) * (1.0 - z * z)  # a . d(tanh(y W1 + b1) W2 + b2) / d(pre-activation)
        out = np.empty(m)
        out[:n] = z @ W2 + b2
        out[n:2 * n] = -(W1 @ dz)
        k = 2 * n
        out[k:k + W1.size] = -np.outer(y, dz).ravel()
        k += W1.size
        out[k:k + h] = -dz
        k += h
        out[k:k + W2.size] = -np.outer(z, a).ravel()
        out[k + W2.size:] = -a
        return out

    def pullback(G):
        a = G[-1].copy()
        theta = np.zeros(sum(sizes))
        gt = np.zeros(len(t))
        for i in range(len(t) - 1, 0, -1):
            gt[i] = G[i] @ f(ys[i], t[i])
            s = odeint(augmented, np.concatenate([ys[i], a, theta]), [t[i], t[i - 1]], rtol=RTOL, atol=ATOL)[-1]
            a = s[n:2 * n] + G[i - 1]
            theta = s[2 * n:]
        gt[0] = -(a - G[0]) @ f(ys[0], t[0]) if len(t) > 1 else 0.0
        parts = np.split(theta, np.cumsum(sizes)[:-1])
        grads = [(parts[0].reshape(W1.shape), parts[1]), (parts[2].reshape(W2.shape), parts[3])]
        return grads, (lambda: a), (lambda: gt)

    return ys, pullback
