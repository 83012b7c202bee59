"""Rules written for you: a rule synthesized from a function's source by transforming it (as
Google's Tangent did for a Python/NumPy subset), and verified before it is used.

>>> s = synthesize(f)            # doctest: +SKIP
>>> print(s.source)              # the rule module: fwd(*args) -> (ans, pullback)   # doctest: +SKIP
>>> verify(s, (x,))              # check_rule: finite differences, the derived rule, ...   # doctest: +SKIP

The subset: assignments and augmented assignments to names and to elements and slices of
arrays the function made (``y = np.zeros(n); y[i] = e``), tuple unpacking, ``+ - * / ** @``
and unary ``-`` with broadcasting, comparisons, NumPy ufuncs with a native rule (their VJPs
inlined from the registry), any other NumPy or SciPy function (the engine's gradient of that
call), the user's own functions (synthesized in turn, else the engine's), methods and ``.T``,
indexing with ints, slices, None, masks and index arrays, list and tuple displays, ``xs.append``
on a list the function made, ``for`` over ``range``, a sequence (items unpacked), ``enumerate``
or ``zip``, ``while``, ``if``/``elif``/
``else``, parameters with defaults, keyword arguments, containers (dict, list, tuple) as
arguments, globals and closure variables as constants, one ``return`` at the end. Anything else
raises SynthesisError naming the construct and its ``file:line`` (subset.py).
"""

from .declare import declare
from .synthesize import Synthesis, synthesize
from .verify import verify

__all__ = ["Synthesis", "declare", "synthesize", "verify"]
