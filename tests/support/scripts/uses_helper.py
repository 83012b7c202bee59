"""Imports a user module from its own folder: its functions count as the user's code."""
import numpy as np
from adcli_helpermod_for_tests import smooth

import adcli

if __name__ == "__main__":
    adcli.grad(lambda x: np.sum(smooth(x)))(np.linspace(0.0, 1.0, 6))
