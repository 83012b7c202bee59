"""From a finished session to a :class:`~adcli.data.model.Profile`: the call tree with
inclusive and self values, and the per-signature totals (docs/profile-format.md)."""

from __future__ import annotations

from ..data.model import Profile
from ..data.records import Allocs, CallTree, Sample, SignatureStats, Totals
from ..data.samples import encode
from .session import Session


def build(session: Session, meta: dict) -> tuple[Profile, dict]:
    """The profile of everything ``session`` measured, and the sample arrays for its .npz."""
    stats: dict = {}  # signature id -> SignatureStats
    # Post-order without recursion: a deep call tree must not exhaust Python's stack.
    # Each frame: (session node, its CallTree, the ids of the signatures open above it).
    out_root = CallTree(sig=0)
    order: list = []
    stack = [(session.root, out_root, frozenset())]  # (scaled to every gradient: profiler.sampling)
    while stack:
        node, tree, above = stack.pop()
        order.append((node, tree, above))
        inner = above | {node.sig.id}
        for child in node.children.values():
            t = CallTree(sig=child.sig.id)
            tree.children.append(t)
            stack.append((child, t, inner))
    for node, tree, above in reversed(order):  # children before parents
        own = Allocs((node.fwd_allocs, node.fwd_bytes), (node.rev_allocs, node.rev_bytes))
        fwd = node.fwd if node.parent is not None else sum(c.fwd for c in node.children.values())
        child_fwd = sum(c.fwd for c in node.children.values())
        tree.calls = node.calls
        tree.forward_s, tree.self_forward_s = fwd, max(fwd - child_fwd, 0.0)
        tree.self_reverse_s, tree.self_primitives, tree.self_allocs = node.rev, node.prims, own
        tree.reverse_s = node.rev + sum(c.reverse_s for c in tree.children)
        tree.primitives = node.prims + sum(c.primitives for c in tree.children)
        tree.allocs = own
        for c in tree.children:
            tree.allocs = tree.allocs + c.allocs
        if node.parent is None:
            continue
        s = stats.get(node.sig.id)
        if s is None:
            obs = node.sig
            s = stats[obs.id] = SignatureStats(id=obs.id, signature=obs.signature, kind=obs.kind,
                                               served_by="derived", location=obs.location)
        s.calls += node.calls
        s.self_forward_s += tree.self_forward_s
        s.self_reverse_s += node.rev
        s.self_primitives += node.prims
        s.self_allocs = s.self_allocs + own
        if node.sig.id not in above:  # outermost occurrence: inclusive totals count once
            s.forward_s += fwd
            s.reverse_s += tree.reverse_s
            s.primitives += tree.primitives
            s.allocs = s.allocs + tree.allocs
    arrays: dict = {}
    signatures = []
    for sig_id in sorted(stats):
        s = stats[sig_id]
        obs = session.by_id[sig_id]
        s.served_counts = _scaled(obs.served, s.calls)
        s.served_by = max(obs.served, key=obs.served.get) if obs.served else "derived"
        s.sample = _sample(obs, arrays)
        s.traced = None if obs.traced is None else list(obs.traced)
        s.output = obs.output
        s.lines = source_lines(obs.func) if obs.kind == "user" and obs.func is not None else None
        signatures.append(s)
    totals = Totals(session.gradients, session.forward_s, session.reverse_s, session.profiled_gradients)
    return Profile(totals=totals, signatures=signatures, tree=out_root, **meta), arrays


def _sample(obs, arrays: dict) -> Sample | None:
    """The signature's sample inputs: arrays into ``arrays`` (``s<id>_<path>``), the rest inline."""
    if not isinstance(obs.sample, list):
        return None
    prefix = f"s{obs.id}"
    return Sample([encode(a, f"{prefix}_a{i}", arrays) for i, a in enumerate(obs.sample)],
                  {k: encode(v, f"{prefix}_k{j}", arrays) for j, (k, v) in enumerate((obs.sample_kwargs or {}).items())})



def _scaled(served: dict, calls: int) -> dict:
    """Calls per rule source, counted in the gradients recorded in full, as shares of the
    signature's calls in all of them (the same counts when every gradient was recorded)."""
    seen = sum(served.values())
    if not seen or seen == calls:
        return dict(served)
    out = {k: round(v * calls / seen) for k, v in served.items()}
    top = max(out, key=out.get)
    out[top] += calls - sum(out.values())  # rounding: the shares add up to the calls
    return out


def source_lines(func) -> int | None:
    """Lines of a Python function's body as compiled (None for a NumPy callable)."""
    code = getattr(getattr(func, "__adcli_original__", func), "__code__", None)
    if code is None:
        return None
    lines = [line for _, _, line in code.co_lines() if line is not None]
    return max(lines) - code.co_firstlineno + 1 if lines else None
