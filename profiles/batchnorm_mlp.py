"""A multilayer perceptron with batch normalisation, written as a class: ``BatchNormMLP`` holds
the layer sizes 32-64-64-10 and its method ``loss(self, params, X, labels)`` is the objective
(``f`` is the bound method of a module-level instance). Each hidden layer is linear (no bias),
then batch norm in training mode (``np.mean(h, axis=0)``, ``np.var(h, axis=0)``, learned scale
gamma and shift beta), then ReLU; the output layer is affine, followed by a hand-written
log-softmax; loss = mean cross-entropy of integer labels plus weight decay 1e-4 on the weight
matrices. Parameters: a list of per-layer dicts. Data: a batch of 128 samples from a random
10-class Gaussian mixture in 32 dimensions, fixed seed. Not part of Mooncake's suite: a
realistic model; gradient with respect to the params."""
import numpy as np

import adcli

NAME = "batchnorm_mlp"
ARGNUMS = 0

LAYER_SIZES = (32, 64, 64, 10)
BATCH = 128


class BatchNormMLP:
    def __init__(self, layer_sizes, eps=1e-5, weight_decay=1e-4):
        self.layer_sizes = tuple(layer_sizes)
        self.eps = eps
        self.weight_decay = weight_decay

    def init_params(self, rng):
        params = []
        sizes = self.layer_sizes
        for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:])):
            layer = {"W": rng.standard_normal((m, n)) * np.sqrt(2.0 / m)}
            if i < len(sizes) - 2:  # hidden layers are batch-normalised: beta replaces the bias
                layer["gamma"] = np.ones(n) + 0.1 * rng.standard_normal(n)
                layer["beta"] = 0.1 * rng.standard_normal(n)
            else:
                layer["b"] = np.zeros(n)
            params.append(layer)
        return params

    def batch_norm(self, h, gamma, beta):
        mu = np.mean(h, axis=0)
        var = np.var(h, axis=0)
        return gamma * (h - mu) / np.sqrt(var + self.eps) + beta

    def forward(self, params, X):
        h = X
        for layer in params[:-1]:
            h = h @ layer["W"]
            h = self.batch_norm(h, layer["gamma"], layer["beta"])
            h = np.maximum(h, 0.0)
        return h @ params[-1]["W"] + params[-1]["b"]

    @staticmethod
    def log_softmax(logits):
        shifted = logits - np.max(logits, axis=1, keepdims=True)
        return shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))

    def loss(self, params, X, labels):
        logp = self.log_softmax(self.forward(params, X))
        nll = -np.mean(logp[np.arange(X.shape[0]), labels])
        l2 = sum(np.sum(layer["W"] ** 2) for layer in params)
        return nll + 0.5 * self.weight_decay * l2


model = BatchNormMLP(LAYER_SIZES)
f = model.loss


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    d, k = LAYER_SIZES[0], LAYER_SIZES[-1]
    centres = 1.5 * rng.standard_normal((k, d))
    labels = rng.integers(k, size=BATCH)
    X = centres[labels] + rng.standard_normal((BATCH, d))
    params = model.init_params(rng)
    return params, X, labels


def main():
    args = inputs()
    value, grads = adcli.value_and_grad(f, argnums=ARGNUMS)(*args)
    print(f"{NAME}: value = {float(value):.6f}")
    for i, layer in enumerate(grads):
        for k in sorted(layer):
            print(f"  grad layer {i} {k}: shape {layer[k].shape}, norm {np.linalg.norm(layer[k]):.6f}")


if __name__ == "__main__":
    main()
