import numpy as np

import adcli


def load():
    return np.loadtxt("no-such-file-for-adcli-tests.csv")


data = load()
adcli.grad(lambda x: np.sum(x * data))(np.ones(3))
