"""energy() has a hand-written rule in with_rule_rules.py (declared by name, __main__:energy)."""
import numpy as np

import adcli


def energy(x):
    return np.sum(np.sin(x) ** 2)


def loss(x):
    return energy(x) * 2.0


if __name__ == "__main__":
    adcli.grad(loss)(np.linspace(0.0, 1.0, 8))
