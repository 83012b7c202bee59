"""Takes a gradient, then changes folder: the profile must still go where -o said."""
import os
import sys

import numpy as np

import adcli

adcli.grad(lambda x: np.sum(x * x))(np.ones(3))
os.chdir(sys.argv[1])
