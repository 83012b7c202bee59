"""A character-level LSTM language model on a tiny alphabet."""

import numpy as np
from scipy.special import expit, logsumexp


def init_lstm_params(input_size, state_size, output_size, rng, param_scale=0.3):
    def rp(*shape):
        return rng.standard_normal(shape) * param_scale

    return {
        "init cells": rp(1, state_size),
        "init hiddens": rp(1, state_size),
        "change": rp(input_size + state_size + 1, state_size),
        "forget": rp(input_size + state_size + 1, state_size),
        "ingate": rp(input_size + state_size + 1, state_size),
        "outgate": rp(input_size + state_size + 1, state_size),
        "predict": rp(state_size + 1, output_size),
    }


def concat_and_multiply(weights, *args):
    cat_state = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
    return np.dot(cat_state, weights)


def lstm_predict(params, inputs):
    def update_lstm(input, hiddens, cells):
        change = np.tanh(concat_and_multiply(params["change"], input, hiddens))
        forget = expit(concat_and_multiply(params["forget"], input, hiddens))
        ingate = expit(concat_and_multiply(params["ingate"], input, hiddens))
        outgate = expit(concat_and_multiply(params["outgate"], input, hiddens))
        cells = cells * forget + ingate * change
        hiddens = outgate * np.tanh(cells)
        return hiddens, cells

    def hiddens_to_output_probs(hiddens):
        output = concat_and_multiply(params["predict"], hiddens)
        return output - logsumexp(output, axis=1, keepdims=True)  # normalise log-probs

    num_sequences = inputs.shape[1]
    hiddens = np.repeat(params["init hiddens"], num_sequences, axis=0)
    cells = np.repeat(params["init cells"], num_sequences, axis=0)

    output = [hiddens_to_output_probs(hiddens)]
    for input in inputs:  # iterate over time steps
        hiddens, cells = update_lstm(input, hiddens, cells)
        output.append(hiddens_to_output_probs(hiddens))
    return output


def lstm_log_likelihood(params, inputs, targets):
    logprobs = np.array(lstm_predict(params, inputs))  # (time steps + 1, sequences, characters)
    num_time_steps, num_examples, _ = inputs.shape
    loglik = 0.0
    for t in range(num_time_steps):  # logprobs[t + 1] has seen the first t + 1 characters
        loglik += np.sum(logprobs[t + 1] * targets[t])
    return loglik / (num_time_steps * num_examples)


def string_to_one_hot(string, alphabet):
    return np.array([[c == a for a in alphabet] for c in string], dtype=float)


def loss(params, data):
    return -lstm_log_likelihood(params, data["inputs"], data["targets"])


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    alphabet = "abcd"
    lines = ["".join(rng.choice(list(alphabet), size=7)) for _ in range(2)]
    one_hot = np.stack([string_to_one_hot(line, alphabet) for line in lines], axis=1)  # (steps, sequences, chars)
    inputs, targets = one_hot[:-1], one_hot[1:]
    params = init_lstm_params(input_size=4, state_size=4, output_size=4, rng=rng)
    return params, {"inputs": inputs, "targets": targets}
