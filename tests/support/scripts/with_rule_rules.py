import numpy as np

import adcli.rules


@adcli.rules.rule("__main__:energy", "f64[1d]")
def energy(x):
    s = np.sin(x)
    return np.sum(s ** 2), lambda g: (g * 2.0 * s * np.cos(x),)
