"""A vanilla tanh recurrent network trained as a next-symbol language model, written in the
style of autograd's rnn example: ``make_rnn_funs(input_size, state_size, output_size)`` returns
closures ``init_params``, ``predict`` and ``loss``, and the objective ``f`` is the factory's
``loss`` closure. Parameters live in a dict {'init hiddens', 'change', 'predict'}; each step
concatenates the one-hot input with the hidden state and applies ``tanh``, every step's output
goes through a hand-written log-softmax, and the loss is the mean cross-entropy over 40 time
steps and a batch of 8 sequences (hidden 32, input/output 16 symbols). The sequences are sampled
from a random first-order Markov chain over the 16 symbols with a fixed seed. Not part of
Mooncake's suite: a realistic sequence model; gradient with respect to the parameter dict."""
import numpy as np

import adcli

NAME = "rnn"
ARGNUMS = 0

SYMBOLS = 16
HIDDEN = 32
SEQ_LEN = 40
BATCH = 8


def log_softmax(x, axis=1):
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def make_rnn_funs(input_size, state_size, output_size):
    def init_params(rng, param_scale=0.1):
        return {
            "init hiddens": param_scale * rng.standard_normal((1, state_size)),
            "change": param_scale * rng.standard_normal((input_size + state_size + 1, state_size)),
            "predict": param_scale * rng.standard_normal((state_size + 1, output_size)),
        }

    def update_rnn(params, input, hiddens):
        cat_state = np.concatenate((input, hiddens), axis=1)
        return np.tanh(np.dot(cat_state, params["change"][:-1]) + params["change"][-1:])

    def hiddens_to_output_probs(params, hiddens):
        output = np.dot(hiddens, params["predict"][:-1]) + params["predict"][-1:]
        return log_softmax(output, axis=1)

    def predict(params, inputs):
        """inputs: (time, batch, input_size) one-hot; returns per-step log-probabilities."""
        num_sequences = inputs.shape[1]
        hiddens = np.repeat(params["init hiddens"], num_sequences, axis=0)
        output = [hiddens_to_output_probs(params, hiddens)]
        for input in inputs:
            hiddens = update_rnn(params, input, hiddens)
            output.append(hiddens_to_output_probs(params, hiddens))
        return output

    def loss(params, inputs, targets):
        """Mean cross-entropy of the next-symbol predictions (targets one-hot, like inputs)."""
        logprobs = predict(params, inputs)[1:]
        total = 0.0
        for t in range(len(logprobs)):
            total = total - np.sum(logprobs[t] * targets[t])
        return total / (targets.shape[0] * targets.shape[1])

    return init_params, predict, loss


init_params, predict, f = make_rnn_funs(SYMBOLS, HIDDEN, SYMBOLS)


def one_hot(indices, depth):
    return (indices[..., None] == np.arange(depth)).astype(np.float64)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    transitions = rng.dirichlet(0.3 * np.ones(SYMBOLS), size=SYMBOLS)
    seqs = np.empty((SEQ_LEN + 1, BATCH), dtype=np.int64)
    seqs[0] = rng.integers(SYMBOLS, size=BATCH)
    for t in range(1, SEQ_LEN + 1):
        for b in range(BATCH):
            seqs[t, b] = rng.choice(SYMBOLS, p=transitions[seqs[t - 1, b]])
    params = init_params(rng)
    return params, one_hot(seqs[:-1], SYMBOLS), one_hot(seqs[1:], SYMBOLS)


def main():
    args = inputs()
    value, grads = adcli.value_and_grad(f, argnums=ARGNUMS)(*args)
    print(f"{NAME}: value = {float(value):.6f}")
    for k in sorted(grads):
        print(f"  grad {k}: shape {grads[k].shape}, norm {np.linalg.norm(grads[k]):.6f}")


if __name__ == "__main__":
    main()
