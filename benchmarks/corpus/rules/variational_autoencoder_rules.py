"""Expert rule for variational_autoencoder.py's top suggestion: ``vae_lower_bound``, the one-sample
ELBO (encoder, reparameterised sample, decoder, the three log-densities) as one rule.

The forward pass draws the noise from the program's own generator, as the function does (the
same draw, so the same sample); the pullback is the textbook backward pass: the Bernoulli
log-likelihood's derivative (the label's sign times a sigmoid), the decoder's products, the
reparameterisation (latents = mean + noise * std) carried back to the encoder's two heads, where
the Gaussian log-densities add their closed forms (in terms of the noise: the latents less the
mean over the std), then the encoder's products.

``predict_rule`` (below, not registered) is the rule for ``neural_net_predict``, the earlier top
suggestion: its measured saving was -6% (a rule call with a list of (W, b) pairs costs the engine
what the rule saves: benchmarks/corpus/RESULTS.md of 2026-12-05, 16:37)."""

import numpy as np

import adcli.rules

NETS = "list(tuple(f64[2d], f64[1d]), tuple(f64[2d], f64[1d]))"
TARGET = f"__main__.vae_lower_bound({NETS}, {NETS}, f64[2d], obj(numpy.random.Generator))"
_LOG_2PI = np.log(2 * np.pi)


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


@adcli.rules.rule("__main__:vae_lower_bound", NETS, NETS, "f64[2d]", "obj(numpy.random.Generator)")
def lower_bound_rule(gen_params, rec_params, data, rs):
    (W1, b1), (W2, b2) = rec_params
    (V1, c1), (V2, c2) = gen_params
    n = data.shape[0]
    z1 = data @ W1 + b1
    h1 = np.maximum(0, z1)
    enc = h1 @ W2 + b2
    d = enc.shape[1] // 2
    mu, log_std = enc[:, :d], enc[:, d:]
    std = np.exp(log_std)
    eps = rs.standard_normal(mu.shape)
    lat = eps * std + mu
    y1 = lat @ V1 + c1
    g1 = np.maximum(0, y1)
    logits = g1 @ V2 + c2
    sign = 2 * data - 1
    p_images = -np.logaddexp(0, -logits * sign).sum(axis=-1)
    p_latents = (-0.5 * _LOG_2PI - 0.5 * lat ** 2).sum(axis=-1)
    q_latents = (-0.5 * _LOG_2PI - log_std - 0.5 * eps ** 2).sum(axis=-1)
    value = np.mean(p_images + p_latents - q_latents)

    def pullback(g):
        w = g / n
        s = _sigmoid(-logits * sign)
        dlogits = (w * sign) * s
        dg1 = dlogits @ V2.T
        dy1 = dg1 * (y1 > 0)
        dlat = dy1 @ V1.T - w * lat + w * eps / std
        dmu = dlat - w * eps / std
        dlog_std = dlat * eps * std + w * (1.0 - eps ** 2)
        denc = np.concatenate([dmu, dlog_std], axis=1)
        dh1 = denc @ W2.T
        dz1 = dh1 * (z1 > 0)
        gen = [(lat.T @ dy1, dy1.sum(axis=0)), (g1.T @ dlogits, dlogits.sum(axis=0))]
        rec = [(data.T @ dz1, dz1.sum(axis=0)), (h1.T @ denc, denc.sum(axis=0))]
        return gen, rec, (lambda: dz1 @ W1.T + (2 * w) * logits * s), None

    return value, pullback


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
