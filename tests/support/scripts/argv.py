import sys

import numpy as np

import adcli

adcli.grad(lambda x: np.sum(np.exp(x)))(np.ones(3))
print("ARGV", sys.argv[1:])
