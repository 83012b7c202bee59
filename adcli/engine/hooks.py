"""The engine's whole interface to a profiler: one optional session object.

When a :class:`Session` is installed (``install``), the engine calls it at four places:

* ``start(tape, f, args, kwargs)`` when ``grad``/``value_and_grad`` begins recording ``f`` on
  ``tape``, called with ``args`` (the differentiated ones traced) and ``kwargs``;
* ``numpy_call(module, qualname, source, fn, spread, args, kwargs, func=None)`` when a NumPy
  function is dispatched, or a rule serves a user function's dispatch point (``source``: native, derived, imported or
  hand-written; ``func``: the user function); it must return ``fn(*args, **kwargs)`` when
  ``spread``, else ``fn(args, kwargs)`` (a derivation), and call it itself (no wrapper: every
  frame added per call is a frame a deep recursion of the program loses); it is also called
  for a user function's calls outside any gradient, and then only calls ``fn``;
* ``backward(tape, acc, start)`` for the reverse pass; it must run ``engine.tape.backward``
  on ``tape.nodes``, timing it as it likes: as a whole, or pullback by pullback with a visitor
  (``backward(tape.nodes, acc, start, visit)``: profiler/stretches.py, profiler/decompose.py),
  never with a loop of its own;
* ``finish(tape)`` when the gradient computation ends, normally or by an exception.

Gradients may be taken in several threads at once: a session keeps per-thread state.

With no session installed the engine pays one global lookup per gradient and per NumPy
function call, nothing per primitive.
"""

from __future__ import annotations

from .tape import backward

_session = None


class Session:
    """The default behaviour of every hook; a profiler overrides what it measures."""

    def start(self, tape, f, args=(), kwargs=None) -> None:
        pass

    def numpy_call(self, module: str, qualname: str, source: str, fn, spread: bool, args: tuple, kwargs: dict,
                   func=None):
        return fn(*args, **kwargs) if spread else fn(args, kwargs)

    def backward(self, tape, acc, start: int) -> None:
        backward(tape.nodes, acc, start)

    def finish(self, tape) -> None:
        pass


def current():
    return _session


def install(session: Session) -> None:
    global _session
    _session = session


def uninstall() -> None:
    global _session
    _session = None
