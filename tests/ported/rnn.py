"""An Elman recurrent network that predicts, at each step, whether the running sum of its input is positive."""

import numpy as np
import scipy.special as sp


def create_rnn_params(input_size, state_size, output_size, rng, param_scale=0.3):
    return {
        "init hiddens": param_scale * rng.standard_normal((1, state_size)),
        "change": param_scale * rng.standard_normal((input_size + state_size + 1, state_size)),
        "predict": param_scale * rng.standard_normal((state_size + 1, output_size)),
    }


def concat_and_multiply(weights, *args):
    cat_state = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
    return np.dot(cat_state, weights)


def rnn_predict(params, inputs):
    """Probabilities for every step and sequence, shape (steps, sequences, outputs), and the hidden states."""
    num_sequences = inputs.shape[1]
    hiddens = np.repeat(params["init hiddens"], num_sequences, axis=0)
    states = [hiddens]
    probs = []
    for input in inputs:  # iterate over time steps
        hiddens = np.tanh(concat_and_multiply(params["change"], input, hiddens))
        states.append(hiddens)
        probs.append(sp.expit(concat_and_multiply(params["predict"], hiddens)))
    return np.stack(probs), np.array(states)


def rnn_log_likelihood(params, inputs, targets):
    probs, _ = rnn_predict(params, inputs)
    return np.mean(targets * np.log(probs) + (1 - targets) * np.log1p(-probs))


def loss(params, data):
    _, states = rnn_predict(params, data["inputs"])
    activity = np.mean(states[1:] ** 2)  # keep the hidden units away from saturation
    return -rnn_log_likelihood(params, data["inputs"], data["targets"]) + data["activity_penalty"] * activity


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    inputs = rng.standard_normal((7, 3, 2))  # (time steps, sequences, features)
    targets = (np.cumsum(inputs[:, :, :1] - 0.5 * inputs[:, :, 1:], axis=0) > 0).astype(float)
    params = create_rnn_params(input_size=2, state_size=4, output_size=1, rng=rng)
    return params, {"inputs": inputs, "targets": targets, "activity_penalty": 0.1}
