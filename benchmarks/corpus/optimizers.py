"""Optimisers shared by the corpus programs (a sibling module, as example code keeps them):
gradient steps over parameters held as an array, a dict of arrays or a list of (W, b) pairs."""

import numpy as np


def tree_map(fn, *trees):
    first = trees[0]
    if isinstance(first, dict):
        return {k: tree_map(fn, *(t[k] for t in trees)) for k in first}
    if isinstance(first, (list, tuple)):
        return type(first)(tree_map(fn, *parts) for parts in zip(*trees))
    return fn(*trees)


def adam(grad, params, num_iters, step_size=0.01, b1=0.9, b2=0.999, eps=1e-8, callback=None):
    """Adam over any parameter tree; ``grad(params, i)`` is the gradient at iteration i."""
    m = tree_map(np.zeros_like, params)
    v = tree_map(np.zeros_like, params)
    for i in range(num_iters):
        g = grad(params, i)
        if callback is not None:
            callback(params, i, g)
        m = tree_map(lambda mi, gi: b1 * mi + (1 - b1) * gi, m, g)
        v = tree_map(lambda vi, gi: b2 * vi + (1 - b2) * gi ** 2, v, g)
        mhat_scale, vhat_scale = 1 / (1 - b1 ** (i + 1)), 1 / (1 - b2 ** (i + 1))
        params = tree_map(lambda p, mi, vi: p - step_size * mi * mhat_scale / (np.sqrt(vi * vhat_scale) + eps),
                          params, m, v)
    return params


def sgd(grad, params, num_iters, step_size=0.1, mass=0.9, callback=None):
    """Gradient descent with momentum."""
    velocity = tree_map(np.zeros_like, params)
    for i in range(num_iters):
        g = grad(params, i)
        if callback is not None:
            callback(params, i, g)
        velocity = tree_map(lambda v, gi: mass * v - (1.0 - mass) * gi, velocity, g)
        params = tree_map(lambda p, v: p + step_size * v, params, velocity)
    return params
