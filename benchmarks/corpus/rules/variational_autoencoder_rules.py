"""Expert rule for variational_autoencoder.py's top suggestion: ``neural_net_predict`` on a
two-layer list of (W, b) pairs (encoder and decoder alike). ReLU after every layer but the last
output, as the script computes it; the pullback masks by the kept pre-activations' signs."""

import numpy as np

import adcli.rules

TARGET = "__main__.neural_net_predict(list(tuple(f64[2d], f64[1d]), tuple(f64[2d], f64[1d])), f64[2d])"


@adcli.rules.rule("__main__:neural_net_predict", "list(tuple(f64[2d], f64[1d]), tuple(f64[2d], f64[1d]))", "f64[2d]")
def predict_rule(params, inputs):
    (W1, b1), (W2, b2) = params
    z1 = inputs @ W1 + b1
    h1 = np.maximum(0, z1)
    out = h1 @ W2 + b2

    def pullback(g):
        dh1 = g @ W2.T
        dz1 = dh1 * (z1 > 0)
        # np.maximum(0, z) passes half the cotangent where z == 0 exactly; such ties do not occur here
        return [(inputs.T @ dz1, dz1.sum(axis=0)), (h1.T @ g, g.sum(axis=0))], (lambda: dz1 @ W1.T)

    return out, pullback
