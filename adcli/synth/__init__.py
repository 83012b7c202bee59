"""Rules written for you: a rule synthesized from a function's source by transforming it (as
Google's Tangent did for a Python/NumPy subset), and verified before it is used.

>>> s = synthesize(f)            # doctest: +SKIP
>>> print(s.source)              # the rule module: fwd(*args) -> (ans, pullback)   # doctest: +SKIP
>>> verify(s, (x,))              # check_rule: finite differences, the derived rule, ...   # doctest: +SKIP

The subset: assignments (``y = e``, ``y += e``, ``a, b = e1, e2``) to names; ``+ - * / **`` and
unary ``-`` on scalars and arrays (broadcasting); NumPy ufuncs with a native rule; ``np.sum(a)``,
``len(x)``; ``x[i]``; ``for i in range(...)``, ``while``, ``if``/``else``; one ``return`` at the
end. Anything else raises SynthesisError naming the construct and its ``file:line``.
"""

from .synthesize import Synthesis, synthesize
from .verify import verify

__all__ = ["Synthesis", "synthesize", "verify"]
