"""The engine's whole interface to a profiler: one optional session object.

When a session is installed (``install``), every ``grad``/``value_and_grad`` call tells it
``start(tape, f)`` before running ``f`` and hands it the reverse pass:
``backward(tape, acc, start)`` must run ``engine.tape.backward`` (timing it as it likes).
With no session installed the engine pays one global lookup per gradient, nothing per primitive.
"""

from __future__ import annotations

_session = None


def current():
    return _session


def install(session) -> None:
    global _session
    _session = session


def uninstall() -> None:
    global _session
    _session = None
