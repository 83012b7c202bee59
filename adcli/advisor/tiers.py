"""The rule set chosen in two tiers over the merged call tree (docs/advisor.md § Two tiers).

Tier 1, **library** (NumPy and SciPy callables): each signature on its own, since its rule
serves every program. Tier 2, **user functions**: what is left once the library tier is
applied (a user function is never credited with what an import inside it saves), chosen over
the merged call tree, preferring the innermost functions that together save ``nest_share`` of
what their caller's rule would.

A saving is a :class:`~adcli.advisor.options.Span`: an action is taken only when its whole
interval clears its burden; one whose interval straddles the burden is *uncertain* and kept
derived, so that noise in one profile cannot flip the advice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..engine.signature import Signature
from .costs import Cost
from .options import Option, Span

# How far below nest_share the rules inside a caller may save and still win over it: a caller's
# saving and its callees' are measured apart (their own replays and what-ifs), and over four
# profiles of one MLP the callee's came to 0.77-0.86 of its caller's. Within this margin the pick
# is the smaller rules, reported as a close call, so that the noise of one profile cannot flip it.
NEST_NOISE = 0.1

# A rounding guard for comparisons of sums that are equal on paper (a pick's net and its own
# high end when nothing bounds it).
_EPS = 1e-12


@dataclass
class Pick:
    """An option chosen for some calls: what it saves over them (``gain``, after what library
    rules inside save) and that less its burden (``net``)."""

    option: Option
    gain: Span
    calls: int

    @property
    def net(self) -> float:
        return self.gain.point - self.option.burden_s

    @property
    def net_low(self) -> float:
        return self.gain.low - self.option.burden_s

    @property
    def net_high(self) -> float:
        return self.gain.high - self.option.burden_s


@dataclass
class CallNode:
    """One signature at one path of the call tree merged across profiles."""

    signature: Signature | None
    calls: int = 0
    children: dict = field(default_factory=dict)  # Signature -> CallNode
    # the user tier's choice, bottom-up (choose_user)
    pick: Pick | None = None  # this node's own rule, when it won over the rules inside it
    inside: float = 0.0  # what the library rules inside it save per run (credited to it)
    best: float = 0.0  # the best net saving of user-tier rules in its subtree
    best_high: float = 0.0  # the same at the high ends of the intervals
    best_gain: float = 0.0  # what those rules save (before their burdens)
    close: float | None = None  # the rules inside won with this share of its own saving, below nest_share


def call_tree(profiles) -> CallNode:
    """The profiles' call trees merged by signature path."""
    root = CallNode(None)
    for p in profiles:
        names = {s.id: s.signature for s in p.signatures}
        stack = [(p.tree, root)]
        while stack:
            node, into = stack.pop()
            for child in node.children:
                name = names.get(child.sig)
                if name is None:
                    continue
                slot = into.children.get(name)
                if slot is None:
                    slot = into.children[name] = CallNode(name)
                slot.calls += child.calls
                stack.append((child, slot))
    return root


def walk(tree: CallNode) -> list[CallNode]:
    """Every node of a merged tree, in pre-order (a caller before its callees), without
    recursion (a 1500-deep recursion in the program is a 1500-deep tree): the advisor's one walk
    of the whole tree."""
    out: list = []
    stack = list(tree.children.values())[::-1]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(list(node.children.values())[::-1])
    return out


def best(c: Cost, opts: list[Option], calls: int, credited: float = 0.0,
         cap: float = float("inf")) -> tuple[Pick | None, Pick | None]:
    """The option with the largest net saving over ``calls`` calls whose whole interval clears
    its burden, less what the library tier already saves inside them (``credited``), never more
    than ``cap`` (the gradient time: estimates from replays timed at other moments than the
    program can add up to more); and the best of those whose interval straddles the burden
    (uncertain), if it is better: (certain pick or None, uncertain pick or None)."""
    sure = unsure = None
    for opt in opts:
        gain = opt.per_call(c).times(calls).capped(cap).less(credited)
        pick = Pick(opt, gain, calls)
        if gain.point <= 0:
            continue
        if pick.net_low >= -_EPS:
            if sure is None or pick.net > sure.net:
                sure = pick
        elif pick.net_high >= 0 and (unsure is None or pick.net > unsure.net):
            unsure = pick
    if unsure is not None and sure is not None and unsure.net <= sure.net:
        unsure = None
    return sure, unsure


def choose_user(tree: CallNode, costs: dict, options: dict, per_call: dict, nest_share: float,
                total: float) -> list[CallNode]:
    """Bottom-up over ``tree``: each node's ``best`` (the best net saving of user-tier rules in
    its subtree) and ``inside`` (the library saving inside it); a node's own rule wins
    (``pick``) unless the rules inside it save at least ``nest_share`` less ``NEST_NOISE`` of what
    its own saves, or more net: smaller rules are the lighter burden. Savings themselves are
    compared, before burdens: a caller and the function it wraps save nearly the same, and the
    ratio of their savings less burdens of ~20% each swung across the threshold from one profile to
    the next. Where the rules inside win by less than ``nest_share`` (``close``), the choice is
    within the noise of two what-ifs measured apart, and the advice says so. A caller wins only
    when its net saving clears what the rules inside could save at the high end of their
    intervals. Returns the walk (pre-order)."""
    order = walk(tree)
    for node in reversed(order):  # callees before their callers
        below = below_high = below_gain = inside = 0.0
        for child in node.children.values():
            below, below_high, inside = below + child.best, below_high + child.best_high, inside + child.inside
            below_gain += child.best_gain
        node.inside = inside
        node.best, node.best_high, node.best_gain = below, below_high, below_gain
        c = costs.get(node.signature)
        if c is not None and c.kind != "numpy" and node.signature in options:
            own, _ = best(c, options[node.signature], node.calls, inside, total)
            share = below_gain / own.gain.point if own is not None and own.gain.point > 0 else 0.0
            if own is not None and own.net >= below and own.net_low >= below_high - _EPS:
                if below_gain <= 0 or share < nest_share - NEST_NOISE:
                    node.pick = own
                    node.best, node.best_high, node.best_gain = own.net, own.net_high, own.gain.point
                elif share < nest_share:
                    node.close = share  # the rules inside won within noise of nest_share: said so
        if node.signature in per_call:  # its own library rule: credited to its callers, not to it
            node.inside += node.calls * per_call[node.signature]
    return order


@dataclass
class UserChoice:
    """The user tier's result: per signature, the pick summed over its chosen tree nodes, the
    chosen caller covering it, or its own best pick passed over for the rules inside it."""

    chosen: dict = field(default_factory=dict)  # Signature -> Pick (calls and gains summed)
    covered: dict = field(default_factory=dict)  # Signature -> the chosen caller's Signature
    passed: dict = field(default_factory=dict)  # Signature -> Pick it would have had
    close: dict = field(default_factory=dict)  # Signature passed over -> the rules inside's share (a close call)
    close_to: dict = field(default_factory=dict)  # Signature chosen -> its caller passed over by a close call
    inside: dict = field(default_factory=dict)  # Signature -> library saving inside its nodes


def top_down(tree: CallNode, costs: dict, options: dict, total: float) -> UserChoice:
    """Take a node's own rule where it won, else look inside it."""
    out = UserChoice()
    stack = [(n, None) for n in tree.children.values()]
    while stack:
        node, owner = stack.pop()
        name = node.signature
        inside = _children_inside(node)
        out.inside[name] = out.inside.get(name, 0.0) + inside
        if owner is not None:
            out.covered.setdefault(name, owner)
            stack.extend((k, owner) for k in node.children.values())
            continue
        if node.pick is not None:
            prev = out.chosen.get(name)
            pick = node.pick if prev is None else Pick(prev.option, prev.gain + node.pick.gain, prev.calls + node.calls)
            out.chosen[name] = pick
            stack.extend((k, name) for k in node.children.values())
        else:
            c = costs.get(name)
            if c is not None and c.kind != "numpy" and name in options:
                own, _ = best(c, options[name], node.calls, inside, total)
                if own is not None:
                    out.passed.setdefault(name, own)
                    if node.close is not None:
                        out.close.setdefault(name, node.close)
                        for k in _picked_under(node):
                            out.close_to.setdefault(k, name)
            stack.extend((k, None) for k in node.children.values())
    return out


def _picked_under(node: CallNode) -> list:
    """The signatures of the nodes under ``node`` whose own rule won (the topmost on each path)."""
    out, stack = [], list(node.children.values())
    while stack:
        n = stack.pop()
        if n.pick is not None:
            out.append(n.signature)
        else:
            stack.extend(n.children.values())
    return out


def _children_inside(node: CallNode) -> float:
    return sum(child.inside for child in node.children.values())


def nest_consistently(costs: dict, tree) -> None:
    """A caller's derived time per run is never below its callees': bottom-up over the merged
    call tree, a measured signature whose replayed derived cost per run (calls x derived_s) is
    below the sum of those of the user functions it calls only from within itself is counted at
    that sum (``below_callees_s`` keeps what its replay measured). Replays of different signatures run
    on their own first-call samples, at other moments: one lstm profile measured a caller at less
    than half the time per run of the callee it loops over (docs/engine.md § Measurements behind
    the code)."""
    order = walk(tree)
    under: dict = {}  # (caller, callee) -> the callee's calls made from within the caller
    for node in order:
        for child in node.children.values():
            key = (node.signature, child.signature)
            under[key] = under.get(key, 0) + child.calls
    callees: dict = {}
    for (caller, callee), calls in under.items():
        c = costs.get(callee)
        if c is not None and caller != callee and calls >= c.calls:
            callees.setdefault(caller, []).append(c)
    for node in reversed(order):  # callees before their callers
        c = costs.get(node.signature)
        inner = callees.get(node.signature)
        if c is None or not inner or not c.measured or not c.calls or not c.derived_s:
            continue
        # each callee's replay is a gradient of its own: less the engine's fixed cost of one
        # (rule_call_s, measured with the profile), which its calls inside the caller do not pay
        # NumPy callees are left out: a replay of one tiny call is mostly a gradient's own fixed
        # cost (np.stack of two numbers costs many times more replayed alone than inside its caller)
        floor = sum(k.calls * max(k.derived_s - (k.rule_call_s or 0.0), 0.0) for k in inner
                    if k.kind != "numpy" and k.measured and k.derived_s)
        if floor > c.calls * c.derived_s * (1 + 1e-9):
            c.below_callees_s = c.derived_s
            c.derived_s = floor / c.calls
