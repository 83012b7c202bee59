"""Probabilistic matrix factorisation of a sparsely observed ratings matrix, with user and item biases."""

import numpy as np


def predict(params, users, items):
    U, V = params["user_factors"], params["item_factors"]
    return (np.sum(U[users] * V[items], axis=1) + params["user_bias"][users] + params["item_bias"][items]
            + params["global_bias"])


def loss(params, data):
    residuals = predict(params, data["users"], data["items"]) - data["ratings"]
    penalty = np.sum(params["user_factors"] ** 2) + np.sum(params["item_factors"] ** 2)
    return 0.5 * np.mean(residuals**2) + 0.5 * data["reg"] * penalty


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    num_users, num_items, rank, num_ratings = 6, 5, 2, 18
    observed = rng.choice(num_users * num_items, size=num_ratings, replace=False)
    users, items = np.divmod(observed, num_items)  # each user and item is seen several times
    true_u = rng.standard_normal((num_users, rank))
    true_v = rng.standard_normal((num_items, rank))
    ratings = np.sum(true_u[users] * true_v[items], axis=1) + 3.0 + 0.1 * rng.standard_normal(num_ratings)
    params = {
        "user_factors": 0.3 * rng.standard_normal((num_users, rank)),
        "item_factors": 0.3 * rng.standard_normal((num_items, rank)),
        "user_bias": np.zeros(num_users),
        "item_bias": np.zeros(num_items),
        "global_bias": np.array(2.5),
    }
    return params, {"users": users, "items": items, "ratings": ratings, "reg": 0.01}
