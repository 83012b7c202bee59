"""Keep the tapes the engine records: a minimal hook session for tests."""

from adcli.engine import hooks


class TapeRecorder(hooks.Session):
    def __init__(self):
        self.tapes = []

    def start(self, tape, f):
        self.tapes.append(tape)


def recording(fn):
    """Run ``fn()`` with a recorder installed; return its result and the tapes it recorded."""
    rec = TapeRecorder()
    hooks.install(rec)
    try:
        out = fn()
    finally:
        hooks.uninstall()
    return out, rec.tapes
