"""A neural ordinary differential equation fitted to a spiral trajectory (autograd's ode_net
example, rewritten): the dynamics are a small tanh network whose (W, b) layers are passed to
scipy's odeint through ``args``; the loss compares the solution with the data at its times."""

import numpy as np
from optimizers import adam
from scipy.integrate import odeint

import adcli

D = 2


def init_nn_params(scale, layer_sizes, rng):
    return [(scale * rng.standard_normal((m, n)), scale * rng.standard_normal(n))
            for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]


def nn_predict(inputs, t, params):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs


def nn_dynamics(state, time, params):
    return nn_predict(state, time, params)


def true_dynamics(state, time):
    A = np.array([[-0.1, 2.0], [-2.0, -0.1]])
    return np.dot(state ** 3, A)


def ode_pred(params, y0, t):
    return odeint(nn_dynamics, y0, t, args=(params,), rtol=1e-6, atol=1e-6)


def L1_loss(pred, targets):
    return np.mean(np.abs(pred - targets))


def make_data(num_times=30):
    t = np.linspace(0.0, 1.5, num_times)
    y0 = np.array([1.0, 0.0])
    return y0, t, odeint(true_dynamics, y0, t)


def make_train_loss(y0, t, targets):
    def train_loss(params, iter):
        pred = ode_pred(params, y0, t)
        return L1_loss(pred, targets)

    return train_loss


def gradient_case(seed=0):
    rng = np.random.default_rng(seed)
    y0, t, targets = make_data()
    return make_train_loss(y0, t, targets), (init_nn_params(0.1, [D, 16, D], rng), 0)


def main(num_iters=25):
    rng = np.random.default_rng(0)
    y0, t, targets = make_data()
    train_loss = make_train_loss(y0, t, targets)
    params = adam(adcli.grad(train_loss), init_nn_params(0.1, [D, 16, D], rng), num_iters, step_size=0.02)
    print(f"ode_net: L1 loss {train_loss(params, 0):.4f}")


if __name__ == "__main__":
    main()
