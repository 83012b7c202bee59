"""Expert rule for rnn.py's top suggestion: the closure ``make_rnn_funs.<locals>.rnn_log_likelihood``.

The forward pass runs the recurrence alone (one product per step, the hidden states kept), then
every step's output projection and log-softmax as one batched product; the pullback is
backpropagation through time: the outputs' cotangents in one product, a reverse sweep over the
steps for the recurrent part, the weight gradients as products over all steps at once."""

import numpy as np

import adcli.rules

TARGET = ("__main__:make_rnn_funs.<locals>.rnn_log_likelihood(dict{'init hiddens': f64[2d], change: f64[2d], "
          "predict: f64[2d]}, f64[3d], f64[3d])")
PARAMS = "dict{'init hiddens': f64[2d], change: f64[2d], predict: f64[2d]}"


@adcli.rules.rule("__main__:make_rnn_funs.<locals>.rnn_log_likelihood", PARAMS, "f64[3d]", "f64[3d]")
def rnn_rule(params, inputs, targets):
    T, B, I = inputs.shape
    C, P = params["change"], params["predict"]
    H = C.shape[1]
    Cx, Ch, cb = C[:I], C[I:I + H], C[I + H]
    Pw, pb = P[:H], P[H]
    Hs = np.empty((T + 1, B, H))
    Hs[0] = params["init hiddens"]
    XC = inputs @ Cx + cb  # the inputs' part of every step at once
    for t in range(T):
        Hs[t + 1] = np.tanh(XC[t] + Hs[t] @ Ch)
    Z = Hs[:T] @ Pw + pb  # only the first T outputs enter the likelihood
    zmax = Z.max(axis=2, keepdims=True)
    E = np.exp(Z - zmax)
    SE = E.sum(axis=2, keepdims=True)
    logp = Z - zmax - np.log(SE)
    scale = 1.0 / (T * B)
    value = np.sum(logp * targets) * scale

    def pullback(g):
        dlogp = (g * scale) * targets
        dZ = dlogp - (E / SE) * dlogp.sum(axis=2, keepdims=True)
        gP = np.empty_like(P)
        gP[:H] = Hs[:T].reshape(-1, H).T @ dZ.reshape(-1, dZ.shape[2])
        gP[H] = dZ.sum(axis=(0, 1))
        dH = dZ @ Pw.T  # cotangents of h_0 .. h_{T-1} from the outputs
        DA = np.empty((T, B, H))
        carry = np.zeros((B, H))
        for t in range(T - 1, -1, -1):
            dh = carry if t == T - 1 else carry + dH[t + 1]
            DA[t] = dh * (1.0 - Hs[t + 1] ** 2)
            carry = DA[t] @ Ch.T
        DA2 = DA.reshape(-1, H)
        gC = np.empty_like(C)
        gC[:I] = inputs.reshape(-1, I).T @ DA2
        gC[I:I + H] = Hs[:T].reshape(-1, H).T @ DA2
        gC[I + H] = DA2.sum(axis=0)
        g_init = (carry + dH[0]).sum(axis=0, keepdims=True)
        return ({"init hiddens": g_init, "change": gC, "predict": gP},
                lambda: DA @ Cx.T, lambda: (g * scale) * logp)

    return value, pullback
