import numpy as np

import adcli.rules


@adcli.rules.rule(np.cumsum, "f64[1d]", replace=True)
def cumsum_rule(x):
    def pullback(g):
        return (np.cumsum(g[::-1])[::-1],)

    return np.cumsum(x), pullback
