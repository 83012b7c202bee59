"""Testing rules, for adcli's own tests and its users': the finite-difference oracle
(``check_grad``, from adcli.gradcheck) and ``check_rule``, which checks the rule that serves one
call the way Mooncake's ``test_rule`` does.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .engine.core import Tracer, has_tracer
from .engine.descriptors import callable_name
from .engine.grad import value_and_grad
from .engine.pytree import flatten, paths
from .engine.registry import declared_for, names_of, qualified_name, serving, suspended, target_key
from .engine.signature import Signature
from .errors import AdcliError, RuleError
from .gradcheck import GradientMismatch, argument_names, check_grad, gradient_check, is_float_leaf
from .measure import Measurement, measure
from .units import duration, human_bytes

__all__ = ["check_grad", "check_rule", "compare_gradients", "GradientMismatch", "RuleNotServed", "RuleReport", "Measurement",
           "measure"]


@dataclass
class RuleReport:
    """What check_rule measured; ``rule`` and ``fallback`` describe who served the call."""

    signature: str
    rule: str
    fallback: str | None
    cost: Measurement | None
    fallback_cost: Measurement | None
    checks: list = field(default_factory=list)
    nonsmooth: str = ""  # why the sample is not smooth and how the rule was judged there, or ""

    def __str__(self) -> str:
        lines = [f"{self.signature}: served by {self.rule}; all checks passed ({', '.join(self.checks)})"]
        if self.nonsmooth:
            lines.append(f"  {self.nonsmooth}")
        if self.cost is not None:
            lines.append(f"  gradient {duration(self.cost.seconds)}, peak memory {human_bytes(self.cost.peak_bytes)}")
        if self.fallback_cost is not None:
            fc = self.fallback_cost
            lines.append(f"  {self.fallback}: {duration(fc.seconds)}, peak memory {human_bytes(fc.peak_bytes)} "
                         f"(the rule is {fc.seconds / max(self.cost.seconds, 1e-12):.2f}x faster)")
        return "\n".join(lines)


class RuleNotServed(GradientMismatch):
    """The rule under test did not serve a checked call (another rule, or the derived one, did)."""


def check_rule(target: Callable, *args: Any, kwargs: dict | None = None, seed: int = 0,
               rtol: float | None = None, atol: float | None = None, repeats: int = 15,
               timing: bool = True, rule=None, argnums: tuple | None = None,
               domain: Callable | None = None) -> RuleReport:
    """Check the rule that serves ``target(*args, **kwargs)``, in the spirit of Mooncake's
    ``test_rule``: gradient against central finite differences (random directions, several
    steps), agreement with the derived/native rule it replaces, output type/shape/dtype equal to
    the primal's, inputs not mutated, repeated calls identical, accumulation into a gradient
    buffer that already holds a cotangent; then time and allocations against the fallback.

    A sample on a kink (``floor`` at an integer, ``np.where(x > 0, ...)`` at 0) fails finite
    differences for a correct rule too. Where the rule replaces another and that one also
    disagrees with finite differences at the sample, the sample is not smooth: the rule must then
    agree with the replaced rule there and with finite differences at a slightly perturbed
    sample (the report's ``nonsmooth`` says both); a wrong rule still fails.

    Random states among the arguments (``np.random.Generator``, ``RandomState``, a bit
    generator) are restored before every call, so that each call draws the same numbers.

    ``argnums``: the arguments to differentiate (every one holding a float, if not given).
    ``domain``: a function of the argument list giving the list the target is called with, for
    a target whose inputs obey a contract finite differences would break (``np.linalg.cholesky``
    takes a symmetric matrix: ``domain`` symmetrises it, and the check runs on that subspace).

    ``rule``: the declared rule that must serve the call. Without it, a target with declared
    rules must be served by one of them: a call that no declared rule matches (a keyword
    argument left out, another type) fails rather than checking the derived rule instead.

    Raises GradientMismatch (an AssertionError; RuleNotServed when the rule did not serve every
    traced call) on the first failed check, raised here, so that pytest shows its one-line
    message and not adcli's frames; returns a RuleReport.
    """
    __tracebackhide__ = True  # pytest: a failed check is its message
    try:
        return _check_rule(target, args, kwargs or {}, seed, rtol, atol, repeats, timing, rule, argnums, domain)
    except (GradientMismatch, RuleError) as exc:
        raise exc.with_traceback(None) from None


def _check_rule(target, args, kwargs, seed, rtol, atol, repeats, timing, expected, argnums, domain) -> RuleReport:
    rng = np.random.default_rng(seed)
    states = random_states([args, kwargs])
    key = _key(target)
    served = serving(key, args, kwargs) if key is not None else None
    call_sig = Signature.of_call(*(names_of(key) if key is not None else callable_name(target)), args, kwargs)
    if served is None:
        raise GradientMismatch(f"no rule serves {call_sig}")
    rule = served.rule
    declared = expected if expected is not None else _only_declared(key)
    if declared is not None and rule is not declared and not (expected is None and rule is not None):
        raise RuleNotServed(not_served(declared, call_sig, key))
    fallback = f"{served.fallback} rule" if rule is not None and served.fallback is not None else None
    name = str(rule.signature) if rule is not None else qualified_name(key)
    if argnums is None:
        argnums = tuple(i for i, a in enumerate(args) if any(is_float_leaf(v) for v in flatten(a)[0]))
    if not argnums:
        raise GradientMismatch(f"{name}: no float argument to differentiate")
    names = argument_names(getattr(target, "__adcli_original__", target), len(args))
    if domain is not None:
        call, target = target, lambda *a, **kw: call(*domain(list(a)), **kw)
    reseed(states)
    primal = target(*args, **kwargs)
    primal_leaves = flatten(primal)[0]
    weights = [rng.standard_normal(np.shape(v)) for v in primal_leaves]
    seeds = {i: [rng.standard_normal(np.shape(v)) if is_float_leaf(v) else None for v in flatten(args[i])[0]] for i in argnums}
    captured = []
    counter = counting(rule)
    ran, traced, served_calls, tally = counter.ran, [0], [0], [True]

    def scalar(*a):
        reseed(states)
        calls = ran[0]
        out = target(*a, **kwargs)
        captured.append(out)
        if has_tracer(a) and tally[0]:  # the rule serves traced calls (its forward pass runs once per call)
            traced[0] += 1
            served_calls[0] += ran[0] > calls
        return sum(np.sum(w * o) for w, o in zip(weights, flatten(out)[0]))

    checks, nonsmooth = [], ""
    before = copy.deepcopy(args)
    fd = dict(rtol=rtol, atol=atol, seed=seed, names=names)
    with counter:
        try:
            grads = gradient_check(scalar, args, argnums, who="the rule" if rule is not None else "adcli",
                                   explain=fallback is None, **fd)
            checks.append("finite differences")
        except GradientMismatch as exc:
            if fallback is None:
                raise GradientMismatch(f"{name}: {exc}") from None
            grads, nonsmooth = _judge_on_kink(Kink(name, scalar, args, argnums, fd, rule, fallback, tally))
            checks.append("finite differences at a perturbed sample")  # and agreement with the fallback, below
        _check_output(name, primal, captured[0])
        checks.append("output type/shape/dtype")
        _check_unchanged(name, before, args)
        checks.append("inputs unchanged")
        again = value_and_grad(scalar, argnums)(*args)[1]
        compare_gradients(name, grads, again, "repeated call", argnums, names, exact=True)
        checks.append("repeatable")

        def seeded(order):
            def f(*a):
                pre = sum(np.sum(s * v) for i in argnums for s, v in zip(seeds[i], flatten(a[i])[0]) if s is not None)
                body = scalar(*a)
                return (pre + body) if order == "before" else (body + pre)
            return f

        for order in ("before", "after"):
            g2 = value_and_grad(seeded(order), argnums)(*args)[1]
            expected_g = [_add_tree(g, seeds[i]) for g, i in zip(grads, argnums)]
            compare_gradients(name, expected_g, g2, f"accumulation with another cotangent recorded {order} the call", argnums,
                     names)
        checks.append("accumulation")
        cost = measure(lambda: value_and_grad(scalar, argnums)(*args), repeats) if timing else None
    if rule is not None and served_calls[0] != traced[0]:
        raise RuleNotServed(f"{name}: the rule served {served_calls[0]} of the {traced[0]} traced call(s) the check made")
    fallback_cost, derived = None, None
    if rule is not None and fallback is not None:
        with suspended(rule):
            try:
                derived = value_and_grad(scalar, argnums)(*args)[1]
            except AdcliError as exc:  # the replaced rule refuses this call: nothing to agree with
                checks.append(f"the {fallback} does not serve this call ({exc})")
            if timing and derived is not None:
                fallback_cost = measure(lambda: value_and_grad(scalar, argnums)(*args), repeats)
    if derived is not None:
        compare_gradients(name, derived, grads, f"the {fallback}", argnums, names, rtol=rtol or 1e-6, atol=atol or 1e-9,
                          who=("the rule", "the " + fallback))
        checks.append(f"agrees with {fallback}")
    captured.clear()
    reseed(states)  # the caller's random states as they were
    return RuleReport(name, repr(rule) if rule is not None else f"{served.source} rule", fallback, cost, fallback_cost,
                      checks, nonsmooth)


def _key(target):
    """The registry key of ``target``: a NumPy callable itself, ``(module, qualname)`` for a
    Python function, a closure or a method too (rules serve them by name at dispatch points);
    None for a lambda, which no rule can name."""
    try:
        return target_key(target)
    except RuleError:
        func = getattr(target, "__adcli_original__", target)
        module, qualname = getattr(func, "__module__", None), getattr(func, "__qualname__", None)
        if isinstance(module, str) and isinstance(qualname, str) and "<lambda>" not in qualname:
            return (module, qualname)
        return None


def _only_declared(key):
    """The declared rules of ``key`` (any one, to name them), or None when it has none."""
    rules = declared_for(key) if key is not None else []
    return rules[0] if rules else None


def not_served(rule, call: Signature, key) -> str:
    """Why ``rule`` does not serve a call of signature ``call`` to the callable ``key``."""
    if isinstance(rule.target, tuple) and key != rule.target:
        module, qualname = key if isinstance(key, tuple) else names_of(key)
        return (f"the rule for {rule.signature} did not serve the call: the function called is {module}:{qualname} "
                f"(imported under another name), the rule is declared for {rule.signature.target}")
    others = [str(r.signature) for r in declared_for(rule.target)] or [str(rule.signature)]
    return (f"the rule for {rule.signature} did not serve the call: signature mismatch: the call is {call}, "
            f"declared rule(s): {', '.join(others)} (types and keyword arguments must match exactly)")


class counting:
    """Count the calls ``rule`` serves while the block runs (its forward pass runs once a call):
    ``with counting(rule) as ran: ...`` then ``ran[0]``."""

    def __init__(self, rule):
        self.rule, self.ran = rule, [0]

    def __enter__(self):
        if self.rule is not None:
            fwd, ran = self.fwd, self.ran = self.rule.fwd, self.ran

            def counted(*args, **kwargs):
                ran[0] += 1
                return fwd(*args, **kwargs)

            self.rule.fwd = counted
        return self.ran

    def __exit__(self, *exc):
        if self.rule is not None:
            self.rule.fwd = self.fwd


RANDOM_STATES = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)


def random_states(tree) -> list:
    """(random state, its state now) for each ``np.random`` Generator, RandomState or bit
    generator among ``tree``'s leaves: what ``reseed`` restores."""
    out = []
    for v in flatten(tree)[0]:
        if isinstance(v, np.random.Generator):
            out.append((v.bit_generator, v.bit_generator.state))
        elif isinstance(v, np.random.RandomState):
            out.append((v, v.get_state(legacy=False)))
        elif isinstance(v, np.random.BitGenerator):
            out.append((v, v.state))
    return out


def reseed(states: list) -> None:
    """Put each random state of ``random_states`` back as it was: every call draws the same
    numbers, as finite differences and a repeated call need."""
    for rs, state in states:
        if isinstance(rs, np.random.RandomState):
            rs.set_state(state)
        else:
            rs.state = state


@dataclass
class Kink:
    """What judging a rule at a sample that fails finite differences needs."""

    name: str  # the rule, as failures name it
    scalar: Callable  # the checked function: the rule's outputs weighted at random
    args: tuple
    argnums: tuple
    fd: dict  # gradient_check's tolerances, seed and argument names
    rule: Any
    fallback: str  # what the rule replaces: "derived rule", "native rule"
    tally: list  # [False] while the replaced rule's calls are made: they are not the rule's to serve


PERTURBATIONS = 3  # perturbed samples tried before finite differences are said not to judge a rule
# Off a kink, other kinks are near (fluidsim's 27,000 floor() kinks, all within 1e-2 of a
# perturbed zero velocity): smaller steps cross fewer of them, and float64 rounds little at 1e-8.
KINK_STEPS = (1e-5, 1e-6, 1e-7, 1e-8)


def _judge_on_kink(k: Kink):
    """The rule's gradient at a sample where it disagrees with finite differences, and the note
    saying how it was judged there; GradientMismatch when it is wrong. The sample is not smooth
    when the replaced rule disagrees with finite differences there too: the rule must then give
    the replaced rule's gradient at the sample (a kink's convention is the program's) and agree
    with finite differences at a sample moved off the kink (each float argument plus 1e-2 of its
    scale, at random; steps down to 1e-8; another such sample when the replaced rule is not smooth
    there either)."""
    who = f"the {k.fallback}"

    def replaced(run, *a, **kw):  # ``run`` with the rule suspended: the replaced rule serves
        k.tally[0] = False
        try:
            with suspended(k.rule):
                return run(*a, **kw)
        finally:
            k.tally[0] = True

    def replaced_check(a):
        return replaced(gradient_check, k.scalar, a, k.argnums, who=who, explain=False, steps=KINK_STEPS, **k.fd)

    try:
        replaced_check(k.args)
    except GradientMismatch as exc:
        why = str(exc)
    else:  # a smooth sample: the rule alone is wrong, named by its worst component
        try:
            gradient_check(k.scalar, k.args, k.argnums, who="the rule", **k.fd)
        except GradientMismatch as exc:
            raise GradientMismatch(f"{k.name}: {exc}") from None
        raise GradientMismatch(f"{k.name}: the gradient disagrees with finite differences along a random direction, "
                               "and agrees when checked again")
    at = f"{k.name}: the sample is not smooth ({who} disagrees with finite differences there too: {why})"
    grads = value_and_grad(k.scalar, k.argnums)(*k.args)[1]
    compare_gradients(at, replaced(lambda: value_and_grad(k.scalar, k.argnums)(*k.args)[1]), grads, f"{who} at this sample",
             k.argnums, k.fd["names"], who=("the rule", who))
    rng = np.random.default_rng(k.fd["seed"] + 1)
    for attempt in range(1, PERTURBATIONS + 1):
        moved = list(k.args)
        for i in k.argnums:
            moved[i] = perturbed(k.args[i], rng)
        try:
            gradient_check(k.scalar, moved, k.argnums, who="the rule", explain=False, steps=KINK_STEPS, **k.fd)
        except GradientMismatch:
            try:
                replaced_check(moved)
            except GradientMismatch:
                continue  # not smooth there either: another sample
            try:
                gradient_check(k.scalar, moved, k.argnums, who="the rule", steps=KINK_STEPS, **k.fd)
            except GradientMismatch as exc:
                raise GradientMismatch(f"{at}; at a perturbed sample, where {who} agrees with finite differences, "
                                       f"{exc}") from None
        return grads, (f"the sample is not smooth ({who} disagrees with finite differences there too): the rule "
                       f"agrees with {who} at the sample, and with finite differences at a sample perturbed by 1e-2 "
                       f"of each argument's scale{f' (attempt {attempt})' if attempt > 1 else ''}")
    raise GradientMismatch(f"{at}; finite differences cannot judge the rule: {who} disagrees with them at "
                           f"{PERTURBATIONS} perturbed samples too")


def perturbed(arg, rng):
    """``arg`` with each float leaf moved at random by 1e-2 of its scale (its root mean square,
    at least 1; 1e-1 for a float32 or float16 leaf, whose finite differences take larger steps)."""
    leaves, unflatten = flatten(arg)
    out = []
    for v in leaves:
        if not is_float_leaf(v):
            out.append(v)
            continue
        x = np.asarray(v)
        size = 1e-2 if x.dtype == np.float64 else 1e-1
        scale = max(float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if x.size else 0.0, 1.0)
        moved = (x + size * scale * rng.standard_normal(x.shape)).astype(x.dtype)
        out.append(float(moved) if type(v) is float else moved if isinstance(v, np.ndarray) else moved[()])
    return unflatten(out)


def _add_tree(g, seed_leaves):
    leaves, unflatten = flatten(g)
    return unflatten([v if s is None else v + s for v, s in zip(leaves, seed_leaves)])


def compare_gradients(name, a, b, what, argnums, names, exact=False, rtol=1e-6, atol=1e-9, who=("the rule", None)):
    """Raise GradientMismatch (``against`` = ``what``) naming the argument and its worst component
    where the gradients ``b`` (what the rule gave) differ from ``a`` (what it should give: ``what``),
    one per argument of ``argnums``, each a tree; float32 leaves compared at their precision."""
    for k, (ga, gb) in zip(argnums, zip(a, b)):
        where = paths(ga)
        for p, x, y in zip(where, flatten(ga)[0], flatten(gb)[0]):
            if x is None or y is None:
                continue
            low = max(np.finfo(np.result_type(v)).resolution if np.result_type(v).kind == "f" else 1e-15 for v in (x, y))
            tol = (max(rtol, 10 * low), max(atol, low * max(np.max(np.abs(x), initial=0.0), 1.0)))  # float32: its precision
            ok = np.array_equal(x, y) if exact else np.allclose(x, y, rtol=tol[0], atol=tol[1])
            if ok:
                continue
            xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
            err = np.abs(ya - xa)
            bad = ~(err <= (0 if exact else tol[1] + tol[0] * np.abs(xa)))
            i = int(np.argmax(np.where(bad, err / (tol[1] + tol[0] * np.abs(xa)), -1.0)))
            index = np.unravel_index(i, xa.shape) if xa.ndim else ()
            at = p + (f"[{', '.join(map(str, index))}]" if index else "")
            rel = f"{err.flat[i] / abs(xa.flat[i]):.3g}" if xa.flat[i] else "inf"
            argument = f"argument {k} ({names[k]})" if names and k < len(names) else f"argument {k}"
            raise GradientMismatch(
                f"{name}: the gradient w.r.t. {argument} differs from {what}: worst component{' ' + at if at else ''}: "
                f"{who[0]} {ya.flat[i]:.6g}, {who[1] or 'expected'} {xa.flat[i]:.6g} (relative error {rel}); "
                f"{int(np.count_nonzero(bad))} of {xa.size} component(s) differ", against=what)


def _check_output(name, primal, traced):
    pl, tl = flatten(primal)[0], flatten(traced)[0]
    if len(pl) != len(tl):
        raise GradientMismatch(f"{name}: the rule returned {len(tl)} outputs, the primal {len(pl)}")
    for p, t in zip(pl, tl):
        v = t.value if isinstance(t, Tracer) else t
        if np.shape(v) != np.shape(p) or np.result_type(v) != np.result_type(p):
            raise GradientMismatch(
                f"{name}: the rule's output has shape {np.shape(v)} and dtype {np.result_type(v)}, "
                f"the primal's {np.shape(p)} and {np.result_type(p)}"
            )
        if isinstance(p, np.ndarray) != isinstance(v, np.ndarray):
            raise GradientMismatch(f"{name}: the rule's output is {type(v).__name__}, the primal's {type(p).__name__}")
        if not np.allclose(v, p, rtol=1e-10, atol=1e-12, equal_nan=True):
            raise GradientMismatch(f"{name}: the rule's forward value differs from the primal's")


def _check_unchanged(name, before, after):
    for b, a in zip(flatten(list(before))[0], flatten(list(after))[0]):
        if isinstance(b, np.ndarray) and not np.array_equal(a, b, equal_nan=True):
            raise GradientMismatch(f"{name}: an input array was modified")
