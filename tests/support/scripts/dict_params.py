import numpy as np

from adcli import grad


def loss(params, X, idx):
    total = 0.0
    for i in idx:  # one row at a time: a loop a hand-written rule would vectorise
        h = np.tanh(X[i] @ params["W"] + params["b"])
        total = total + np.sum(h**2)
    return total


rng = np.random.default_rng(0)
X = rng.standard_normal((6, 3))
idx = np.array([0, 2, 2, 5, 1, 3, 4, 0, 5, 2, 1, 4])
params = {"W": rng.standard_normal((3, 2)), "b": np.zeros(2)}

if __name__ == "__main__":
    print("training")  # the main block: not run again by the exported tests
    for _ in range(5):
        g = grad(loss)(params, X, idx)
        params = {k: params[k] - 0.1 * g[k] for k in params}
