"""A character-level LSTM on sequences from a noisy cyclic grammar (autograd's lstm example,
rewritten): the step function is a closure over the parameters inside ``lstm_predict``, gates
share one concatenate-and-multiply helper, parameters in a dict."""

import numpy as np
from optimizers import adam
from scipy.special import expit, logsumexp

import adcli

ALPHABET = 6


def init_lstm_params(input_size, state_size, output_size, rng, param_scale=0.1):
    def rp(*shape):
        return rng.standard_normal(shape) * param_scale

    return {"init cells": rp(1, state_size), "init hiddens": rp(1, state_size),
            "change": rp(input_size + state_size + 1, state_size),
            "forget": rp(input_size + state_size + 1, state_size),
            "ingate": rp(input_size + state_size + 1, state_size),
            "outgate": rp(input_size + state_size + 1, state_size),
            "predict": rp(state_size + 1, output_size)}


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
        return output - logsumexp(output, axis=1, keepdims=True)

    num_sequences = inputs.shape[1]
    hiddens = np.repeat(params["init hiddens"], num_sequences, axis=0)
    cells = np.repeat(params["init cells"], num_sequences, axis=0)
    output = [hiddens_to_output_probs(hiddens)]
    for input in inputs:
        hiddens, cells = update_lstm(input, hiddens, cells)
        output.append(hiddens_to_output_probs(hiddens))
    return output


def lstm_log_likelihood(params, inputs, targets):
    logprobs = lstm_predict(params, inputs)
    loglik = 0.0
    num_time_steps, num_examples, _ = inputs.shape
    for t in range(num_time_steps):
        loglik += np.sum(logprobs[t] * targets[t])
    return loglik / (num_time_steps * num_examples)


def make_sequences(rng, length=20, num=8):
    seqs = np.empty((length, num), dtype=int)
    seqs[0] = rng.integers(ALPHABET, size=num)
    for t in range(1, length):
        jump = rng.uniform(size=num) < 0.1
        seqs[t] = np.where(jump, rng.integers(ALPHABET, size=num), (seqs[t - 1] + 2) % ALPHABET)
    one_hot = np.eye(ALPHABET)[seqs]
    return one_hot[:-1], one_hot[1:]


def objective(params, inputs, targets):
    return -lstm_log_likelihood(params, inputs, targets)


def gradient_case(seed=0):
    rng = np.random.default_rng(seed)
    inputs, targets = make_sequences(rng)
    return objective, (init_lstm_params(ALPHABET, 16, ALPHABET, rng), inputs, targets)


def main(num_iters=40):
    rng = np.random.default_rng(0)
    inputs, targets = make_sequences(rng)
    grad = adcli.grad(objective)
    params = adam(lambda p, i: grad(p, inputs, targets), init_lstm_params(ALPHABET, 16, ALPHABET, rng), num_iters,
                  step_size=0.05)
    print(f"lstm: log-likelihood per symbol {lstm_log_likelihood(params, inputs, targets):.4f}")


if __name__ == "__main__":
    main()
