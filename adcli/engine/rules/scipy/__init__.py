"""Rules for SciPy: scipy.special's ufuncs (registered on first use), SciPy's Python functions
and scipy.stats' distributions and scipy.integrate.odeint (served through engine.library's
dispatch points while a gradient records). SciPy is optional: nothing here imports it at load."""

from . import functions, integrate, special, stats  # noqa: F401  (each fills the registry as it loads)
