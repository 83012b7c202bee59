"""The engine's native rules and verified derivations, by domain. Each module declares its rules
to the registry (``defufunc``, ``defnative``, ``derive``, ``library_rule``) when it loads; nothing
outside this package imports a rule module to find a rule: the registry answers (``serving``,
``UFUNCS``, ``REDUCTIONS``, ``METHODS``). Where a rule came from is a field of its registry entry
(``origin``: "engine", or "advised" for the advisor's library-tier verdicts), not a file.

Loading order matters only where a module builds on another's rules (shape on elementwise's
``nondiff``, norms on contractions): each imports what it builds on.
"""

from . import (  # noqa: F401  (each fills the registry as it loads)
    contractions,  # dot, matmul, einsum, tensordot, outer
    counting,  # unique, bincount, histogram: their traced float outputs
    creation,  # zeros_like & co., full_like, linspace
    derived,  # the verified derivations, and native rules built from traced operations
    elementwise,  # the ufuncs; real/imag/angle, nan_to_num
    joins,  # concatenate, stack, hstack, vstack
    linalg,  # solve, inv, det, cholesky, eigh, svd, ...
    norms,  # np.linalg.norm, vector_norm, matrix_norm
    reductions,  # sum, mean, max, prod, cumsum, var, std, ...; reductions given lists of traced values
    scipy,  # scipy.special, SciPy's Python functions, scipy.stats, scipy.integrate.odeint
    shape,  # reshape, transpose, indexing, where, clip, sort, roll, triu/tril
)
