"""A variational autoencoder for binary vectors, trained on a reparameterised ELBO estimate."""

import numpy as np
from scipy.stats import norm


def init_net_params(scale, layer_sizes, rng):
    return [
        (scale * rng.standard_normal((m, n)), scale * rng.standard_normal(n))
        for m, n in zip(layer_sizes[:-1], layer_sizes[1:])
    ]


def neural_net_predict(params, inputs):
    """tanh hidden layers, linear output layer."""
    for W, b in params[:-1]:
        inputs = np.tanh(np.dot(inputs, W) + b)
    W, b = params[-1]
    return np.dot(inputs, W) + b


def nn_predict_gaussian(params, inputs):
    """Mean and log standard deviation of a diagonal Gaussian."""
    outputs = neural_net_predict(params, inputs)
    latent_dim = outputs.shape[1] // 2
    return outputs[:, :latent_dim], outputs[:, latent_dim:]


def sample_diag_gaussian(mean, log_std, eps):
    return mean + np.exp(log_std) * eps


def bernoulli_log_density(targets, unnormalized_logprobs):
    # targets are 0 or 1; log sigmoid(logit) for a 1, log sigmoid(-logit) for a 0
    label_probabilities = -np.logaddexp(0, -unnormalized_logprobs * (2 * targets - 1))
    return np.sum(label_probabilities, axis=-1)


def vae_lower_bound(gen_params, rec_params, data, eps):
    q_means, q_log_stds = nn_predict_gaussian(rec_params, data)
    latents = sample_diag_gaussian(q_means, q_log_stds, eps)
    log_q = np.sum(norm.logpdf(latents, q_means, np.exp(q_log_stds)), axis=1)
    log_prior = np.sum(norm.logpdf(latents, 0.0, 1.0), axis=1)
    logits = neural_net_predict(gen_params, latents)
    log_lik = bernoulli_log_density(data, logits)
    return np.mean(log_lik + log_prior - log_q)


def loss(params, data):
    return -vae_lower_bound(params["decoder"], params["encoder"], data["images"], data["eps"])


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    data_dim, hidden, latent_dim, batch = 6, 5, 2, 8
    params = {
        "encoder": init_net_params(0.3, [data_dim, hidden, 2 * latent_dim], rng),
        "decoder": init_net_params(0.3, [latent_dim, hidden, data_dim], rng),
    }
    images = (rng.uniform(size=(batch, data_dim)) < 0.4).astype(float)
    eps = rng.standard_normal((batch, latent_dim))  # one fixed draw of the reparameterisation noise
    return params, {"images": images, "eps": eps}
