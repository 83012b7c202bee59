"""A deterministic clock for the replays: ``measure.alternating_medians`` with each function run
once and its "seconds" one plus the tape nodes its gradients ran. A test that asks which of two
ways of serving a gradient runs less (a rule's one node against a derived body) gets the same
answer on a busy machine as on a quiet one; how much time that saves is a benchmark's to say."""

from adcli.engine import hooks
from adcli.engine.hooks import Session


class NodeCount(Session):
    """Counts the tape nodes a gradient's reverse pass runs."""

    nodes = 0

    def backward(self, tape, acc, start):
        self.nodes += sum(n is not None for n in tape.nodes[:start + 1])
        super().backward(tape, acc, start)


def counted_medians(fns, budget=0.2, calls=None, **options):
    """What ``alternating_medians(fns, budget, calls=calls)`` returns, on the node clock."""
    out = []
    for fn in fns:
        counter, previous = NodeCount(), hooks.current()
        hooks.install(counter)
        try:
            fn()
        finally:
            if previous is None:
                hooks.uninstall()
            else:
                hooks.install(previous)
        out.append(1.0 + counter.nodes)
    if calls is not None:
        calls[:] = [1] * len(fns)
    return out


def counted_rounds(fns, budget=0.2, *args, **options):
    """What ``alternating_rounds(fns, budget, ...)`` returns, on the node clock: one round."""
    from adcli.measure import Rounds

    return Rounds([[t] for t in counted_medians(fns)], "cpu", [1] * len(fns))


def use_node_clock(monkeypatch):
    """Time the replays (signatures alone and in the program) on the node clock."""
    from adcli.profiler import replay

    monkeypatch.setattr(replay, "alternating_medians", counted_medians)
    monkeypatch.setattr(replay, "alternating_rounds", counted_rounds)
