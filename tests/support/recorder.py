"""Keep the tapes the engine records: a minimal hook session for tests."""

from types import SimpleNamespace

from adcli.engine import hooks


class TapeRecorder(hooks.Session):
    """Each gradient's tape as it stood when its reverse pass began (the pass drops each node
    once its pullback has run, engine.tape.backward), as an object with ``nodes``."""

    def __init__(self):
        self.tapes = []

    def start(self, tape, f, args=(), kwargs=None):
        self.tapes.append(tape)

    def backward(self, tape, acc, start):
        self.tapes[self.tapes.index(tape)] = SimpleNamespace(nodes=list(tape.nodes))
        super().backward(tape, acc, start)


def recording(fn):
    """Run ``fn()`` with a recorder installed; return its result and the tapes it recorded."""
    rec = TapeRecorder()
    hooks.install(rec)
    try:
        out = fn()
    finally:
        hooks.uninstall()
    return out, rec.tapes
