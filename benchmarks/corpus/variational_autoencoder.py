"""A variational autoencoder for binary images (autograd's variational_autoencoder example,
rewritten): encoder and decoder are lists of (W, b) layers, the ELBO a one-sample reparameterised
estimate with the noise drawn inside the objective from a seeded generator."""

import numpy as np
from optimizers import adam

import adcli


def diag_gaussian_log_density(x, mu, log_std):
    return np.sum(-0.5 * np.log(2 * np.pi) - log_std - 0.5 * ((x - mu) / np.exp(log_std)) ** 2, axis=-1)


def unpack_gaussian_params(params):
    D = np.shape(params)[-1] // 2
    return params[:, :D], params[:, D:]


def sample_diag_gaussian(mean, log_std, rs):
    return rs.standard_normal(mean.shape) * np.exp(log_std) + mean


def bernoulli_log_density(targets, unnormalized_logprobs):
    label_probabilities = -np.logaddexp(0, -unnormalized_logprobs * (2 * targets - 1))
    return np.sum(label_probabilities, axis=-1)


def relu(x):
    return np.maximum(0, x)


def init_net_params(scale, layer_sizes, rs):
    return [(scale * rs.standard_normal((m, n)), scale * rs.standard_normal(n))
            for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]


def neural_net_predict(params, inputs):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = relu(outputs)
    return outputs


def vae_lower_bound(gen_params, rec_params, data, rs):
    q_means, q_log_stds = unpack_gaussian_params(neural_net_predict(rec_params, data))
    latents = sample_diag_gaussian(q_means, q_log_stds, rs)
    q_latents = diag_gaussian_log_density(latents, q_means, q_log_stds)
    p_latents = diag_gaussian_log_density(latents, 0, 0)
    logits = neural_net_predict(gen_params, latents)
    p_images = bernoulli_log_density(data, logits)
    return np.mean(p_images + p_latents - q_latents)


LATENT, DATA_DIM, BATCH = 4, 64, 32


def make_images(rng, num=256):
    """8x8 binary pictures of horizontal and vertical bars."""
    images = np.zeros((num, 8, 8))
    for k in range(num):
        if rng.uniform() < 0.5:
            images[k, rng.integers(8), :] = 1.0
        else:
            images[k, :, rng.integers(8)] = 1.0
    flips = rng.uniform(size=images.shape) < 0.03
    return np.abs(images - flips).reshape(num, DATA_DIM)


def make_objective(train_images):
    def objective(combined_params, iter):
        data_idx = (iter * BATCH) % len(train_images)
        gen_params, rec_params = combined_params
        return -vae_lower_bound(gen_params, rec_params, train_images[data_idx:data_idx + BATCH],
                                np.random.default_rng(iter))

    return objective


def init_params(rng):
    gen = init_net_params(0.1, [LATENT, 48, DATA_DIM], rng)
    rec = init_net_params(0.1, [DATA_DIM, 48, 2 * LATENT], rng)
    return (gen, rec)


def gradient_case(seed=0):
    rng = np.random.default_rng(seed)
    return make_objective(make_images(rng)), (init_params(rng), 0)


def main(num_iters=150):
    rng = np.random.default_rng(0)
    objective = make_objective(make_images(rng))
    grad = adcli.grad(objective)
    params = adam(grad, init_params(rng), num_iters, step_size=0.01)
    print(f"variational_autoencoder: -ELBO {objective(params, 0):.3f}")


if __name__ == "__main__":
    main()
