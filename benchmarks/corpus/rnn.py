"""A character-level recurrent network on sequences from a noisy cyclic grammar (autograd's rnn
example, rewritten): closures from ``make_rnn_funs``, one concatenate-and-multiply helper, a
log-softmax over the symbols, parameters in a dict."""

import numpy as np
from optimizers import adam
from scipy.special import logsumexp

import adcli

ALPHABET = 8


def concat_and_multiply(weights, *args):
    cat_state = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
    return np.dot(cat_state, weights)


def make_rnn_funs(input_size, state_size, output_size):
    def init_params(rng, param_scale=0.1):
        return {"init hiddens": param_scale * rng.standard_normal((1, state_size)),
                "change": param_scale * rng.standard_normal((input_size + state_size + 1, state_size)),
                "predict": param_scale * rng.standard_normal((state_size + 1, output_size))}

    def update_rnn(params, input, hiddens):
        return np.tanh(concat_and_multiply(params["change"], input, hiddens))

    def hiddens_to_output_probs(params, hiddens):
        output = concat_and_multiply(params["predict"], hiddens)
        return output - logsumexp(output, axis=1, keepdims=True)

    def rnn_predict(params, inputs):
        num_sequences = inputs.shape[1]
        hiddens = np.repeat(params["init hiddens"], num_sequences, axis=0)
        output = [hiddens_to_output_probs(params, hiddens)]
        for input in inputs:
            hiddens = update_rnn(params, input, hiddens)
            output.append(hiddens_to_output_probs(params, hiddens))
        return output

    def rnn_log_likelihood(params, inputs, targets):
        logprobs = rnn_predict(params, inputs)
        loglik = 0.0
        num_time_steps, num_examples, _ = inputs.shape
        for t in range(num_time_steps):
            loglik += np.sum(logprobs[t] * targets[t])
        return loglik / (num_time_steps * num_examples)

    return init_params, rnn_predict, rnn_log_likelihood


init_params, rnn_predict, rnn_log_likelihood = make_rnn_funs(ALPHABET, 24, ALPHABET)


def make_sequences(rng, length=30, num=16):
    seqs = np.empty((length, num), dtype=int)
    seqs[0] = rng.integers(ALPHABET, size=num)
    for t in range(1, length):
        jump = rng.uniform(size=num) < 0.15
        seqs[t] = np.where(jump, rng.integers(ALPHABET, size=num), (seqs[t - 1] + 1) % ALPHABET)
    one_hot = np.eye(ALPHABET)[seqs]
    return one_hot[:-1], one_hot[1:]


def objective(params, inputs, targets):
    return -rnn_log_likelihood(params, inputs, targets)


def gradient_case(seed=0):
    rng = np.random.default_rng(seed)
    inputs, targets = make_sequences(rng)
    return objective, (init_params(rng), inputs, targets)


def main(num_iters=60):
    rng = np.random.default_rng(0)
    inputs, targets = make_sequences(rng)
    grad = adcli.grad(objective)
    params = adam(lambda p, i: grad(p, inputs, targets), init_params(rng), num_iters, step_size=0.05)
    print(f"rnn: log-likelihood per symbol {rnn_log_likelihood(params, inputs, targets):.4f}")


if __name__ == "__main__":
    main()
