"""Expert rule for lstm.py's top suggestion: ``lstm_log_likelihood(params, inputs, targets)``.

The four gates' weights act as one matrix: the inputs' part of every step is one product before
the recurrence, each step one product with the hidden state; every output's projection and
log-softmax is one batched product after it. The pullback is backpropagation through time for the
cell and hidden states, the weight gradients as products over all steps at once."""

import numpy as np
from scipy.special import expit

import adcli.rules

GATES = ("change", "forget", "ingate", "outgate")
PARAMS = ("dict{'init cells': f64[2d], 'init hiddens': f64[2d], change: f64[2d], forget: f64[2d], ingate: f64[2d], "
          "outgate: f64[2d], predict: f64[2d]}")
TARGET = f"__main__.lstm_log_likelihood({PARAMS}, f64[3d], f64[3d])"


@adcli.rules.rule("__main__:lstm_log_likelihood", PARAMS, "f64[3d]", "f64[3d]")
def lstm_rule(params, inputs, targets):
    T, B, I = inputs.shape
    W = np.concatenate([params[k] for k in GATES], axis=1)  # (I + H + 1, 4H)
    H = W.shape[1] // 4
    Wx, Wh, wb = W[:I], W[I:I + H], W[I + H]
    P = params["predict"]
    Pw, pb = P[:H], P[H]
    Hs = np.empty((T + 1, B, H))
    Cs = np.empty((T + 1, B, H))
    G = np.empty((T, B, 4 * H))  # the gates' activations
    TC = np.empty((T, B, H))
    Hs[0], Cs[0] = params["init hiddens"], params["init cells"]
    XW = inputs @ Wx + wb
    for t in range(T):
        A = XW[t] + Hs[t] @ Wh
        G[t, :, :H] = np.tanh(A[:, :H])
        G[t, :, H:] = expit(A[:, H:])
        g, f, i, o = G[t, :, :H], G[t, :, H:2 * H], G[t, :, 2 * H:3 * H], G[t, :, 3 * H:]
        Cs[t + 1] = Cs[t] * f + i * g
        TC[t] = np.tanh(Cs[t + 1])
        Hs[t + 1] = o * TC[t]
    Z = Hs[:T] @ Pw + pb
    zmax = Z.max(axis=2, keepdims=True)
    E = np.exp(Z - zmax)
    SE = E.sum(axis=2, keepdims=True)
    logp = Z - zmax - np.log(SE)
    scale = 1.0 / (T * B)
    value = np.sum(logp * targets) * scale

    def pullback(gout):
        dlogp = (gout * scale) * targets
        dZ = dlogp - (E / SE) * dlogp.sum(axis=2, keepdims=True)
        gP = np.empty_like(P)
        gP[:H] = Hs[:T].reshape(-1, H).T @ dZ.reshape(-1, dZ.shape[2])
        gP[H] = dZ.sum(axis=(0, 1))
        dH = dZ @ Pw.T
        DA = np.empty((T, B, 4 * H))
        ch = np.zeros((B, H))
        cc = np.zeros((B, H))
        for t in range(T - 1, -1, -1):
            dh = ch if t == T - 1 else ch + dH[t + 1]
            g, f, i, o = G[t, :, :H], G[t, :, H:2 * H], G[t, :, 2 * H:3 * H], G[t, :, 3 * H:]
            tc = TC[t]
            dc = cc + dh * o * (1.0 - tc ** 2)
            DA[t, :, :H] = dc * i * (1.0 - g ** 2)
            DA[t, :, H:2 * H] = dc * Cs[t] * f * (1.0 - f)
            DA[t, :, 2 * H:3 * H] = dc * g * i * (1.0 - i)
            DA[t, :, 3 * H:] = dh * tc * o * (1.0 - o)
            cc = dc * f
            ch = DA[t] @ Wh.T
        DA2 = DA.reshape(-1, 4 * H)
        gW = np.empty_like(W)
        gW[:I] = inputs.reshape(-1, I).T @ DA2
        gW[I:I + H] = Hs[:T].reshape(-1, H).T @ DA2
        gW[I + H] = DA2.sum(axis=0)
        grads = {k: gW[:, j * H:(j + 1) * H].copy() for j, k in enumerate(GATES)}
        grads["init hiddens"] = (ch + dH[0]).sum(axis=0, keepdims=True)
        grads["init cells"] = cc.sum(axis=0, keepdims=True)
        grads["predict"] = gP
        return {k: grads[k] for k in params}, (lambda: DA @ Wx.T), (lambda: (gout * scale) * logp)

    return value, pullback
