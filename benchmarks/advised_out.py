"""A rules module that takes out the native rules the advice put in the engine (origin
"advised": np.roll, np.var, np.outer, np.triu, np.tril), so that the NumPy functions they serve
are derived again: ``adcli corpus run ... --rules benchmarks/advised_out.py`` profiles a corpus
as the engine was before its library tier was shipped (benchmarks/ecosystem.py defaults)."""

import numpy as np

from adcli.engine.registry import REGISTRY

ADVISED = (np.roll, np.var, np.outer, np.triu, np.tril)

for _f in ADVISED:
    if REGISTRY[_f].origin != "advised":
        raise RuntimeError(f"{_f.__name__}'s native rule is not the advised one: update ADVISED")
    REGISTRY[_f].native = None
