"""A two-layer 1-D convolutional network that denoises a signal."""

import numpy as np
import scipy.signal


def conv_layer(signal, filters, biases):
    """One feature map per filter, each shorter than the signal by the filter's length minus one."""
    return np.stack([scipy.signal.convolve(signal, f, mode="valid") + b for f, b in zip(filters, biases)])


def denoise(params, noisy):
    hidden = np.maximum(0.0, conv_layer(noisy, params["filters"], params["biases"]))
    # full convolutions bring each feature map back to the signal's length
    return sum(scipy.signal.convolve(h, w, mode="full") for h, w in zip(hidden, params["mix"])) + params["out_bias"]


def loss(params, data):
    return np.mean((denoise(params, data["noisy"]) - data["clean"]) ** 2)


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, 24)
    clean = np.sin(2 * np.pi * 2 * t) + 0.5 * np.sign(np.sin(2 * np.pi * 3 * t))
    noisy = clean + 0.3 * rng.standard_normal(t.shape)
    params = {
        "filters": 0.4 * rng.standard_normal((3, 5)),
        "biases": 0.1 * rng.standard_normal(3),
        "mix": 0.4 * rng.standard_normal((3, 5)),
        "out_bias": 0.0,
    }
    return params, {"noisy": noisy, "clean": clean}
