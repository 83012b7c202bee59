"""Expert rule for logistic_regression.py's top suggestion: ``expand_features(X, scales)``.

The per-column loop becomes one standardisation of all columns; the columns interleave as the
loop appends them (z_j, then z_j squared). The pullback gives the scales' gradient as column sums
and the data's (a thunk: the program does not differentiate X) through the standardisation."""

import numpy as np

import adcli.rules

TARGET = "__main__.expand_features(f64[2d], f64[1d])"


@adcli.rules.rule("__main__:expand_features", "f64[2d]", "f64[1d]")
def expand_rule(X, scales):
    n = X.shape[0]
    mu = X.mean(axis=0)
    xc = X - mu
    sd = np.sqrt(np.mean(xc ** 2, axis=0))
    den = sd + 1e-8
    Z = xc / den
    out = np.empty((n, 2 * X.shape[1]))
    out[:, 0::2] = scales * Z
    out[:, 1::2] = scales * Z ** 2

    def pullback(G):
        G0, G1 = G[:, 0::2], G[:, 1::2]
        g_scales = np.sum(G0 * Z + G1 * Z ** 2, axis=0)

        def g_X():
            dZ = scales * (G0 + 2.0 * G1 * Z)
            return (dZ - dZ.mean(axis=0)) / den - xc * (np.sum(dZ * xc, axis=0) / (n * sd * den ** 2))

        return g_X, g_scales

    return out, pullback
