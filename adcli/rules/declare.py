"""Declaring rules for exact signatures: ``@adcli.rules.rule(np.kron, "f64[2d]", "f64[2d]")``.

A rule is a function ``fwd(*args) -> (ans, pullback)`` on plain values, Mooncake's ``rrule!!``
shape: ``pullback(g)`` returns one cotangent per argument (``None`` for an argument that is not
differentiable), each with its argument's structure, shape and dtype, or a thunk (a callable of
no arguments giving it), which the engine calls only when that argument is traced: a rule does
not know which of its arguments a program differentiates. With
``accumulate=True`` the pullback is ``pullback(g, buffers)`` instead and adds into
``buffers[i]`` (a writable array the engine owns) in place, returning nothing: the way the
engine's own indexing rule avoids allocating a full-size gradient per call.

Rules are exact: every argument type is a concrete descriptor (engine/signature.py,
docs/descriptors.md) or a small tuple of them (a finite union, expanded into one signature
each). A second rule for a signature that already has one is an error unless ``replace=True``.

Targets: any NumPy callable, or a Python function of the user's. A rule for a user function
takes effect through a *dispatch point* (see adcli/rules/dispatch.py and docs/rules.md).
"""

from __future__ import annotations

import inspect
import itertools
import re
from typing import Callable

import numpy as np

from ..engine.core import Tracer, kept, make_tracer, mixed_tapes, node_kind
from ..engine.descriptors import parse_descriptor
from ..engine.fills import call_plain, unfill
from ..engine.pytree import flatten
from ..engine.registry import REGISTRY, add_rule, names_of, remove_rule, target_key
from ..engine.signature import Signature
from ..engine.tape import parent_at, parents_at
from ..errors import RuleError
from .dispatch import activate

SOURCES = ("hand-written", "imported", "native")
_MAX_UNION = 64  # signatures one declaration may expand to; more is not "a small finite union"


class Rule:
    """One rule for one signature of one callable."""

    __slots__ = ("target", "signature", "key", "fwd", "source", "accumulate", "origin", "__weakref__")

    def __init__(self, target, signature: Signature, fwd: Callable, source: str, accumulate: bool, origin: str):
        self.target = target  # the registry key: the NumPy callable, or (module, qualname)
        self.signature = signature
        self.key = signature.key  # the registry's key within the target's entry
        self.fwd = fwd
        self.source = source
        self.accumulate = accumulate
        self.origin = origin  # where it was declared, or which library it came from

    @property
    def name(self) -> str:
        return self.signature.function

    def __repr__(self) -> str:
        return f"<{self.source} rule {self.signature}>"

    def __call__(self, *args, **kwargs):
        """Apply the rule to (possibly traced) arguments: one tape node for the whole call."""
        args, kwargs = unfill(args), unfill(kwargs)  # arrays made by np.zeros & co. (engine.fills)
        tape = None
        parents = []  # (argnum, leaf position, tracer index)
        plain = []
        for i, a in enumerate(args):
            if isinstance(a, Tracer):  # the common case, without building a pytree
                if tape is None:
                    tape = a.tape
                elif a.tape is not tape:
                    mixed_tapes(a, a)
                plain.append(a.value)
                parents.append((i, 0, a.idx))
                continue
            if type(a) not in (tuple, list, dict):
                plain.append(kept(a))  # the rule's pullback may read it after the program changed it
                continue
            leaves, unflatten = flatten(a)
            new = list(leaves)
            for j, v in enumerate(leaves):
                if not isinstance(v, Tracer):
                    new[j] = kept(v)
                    continue
                if tape is None:
                    tape = v.tape
                elif v.tape is not tape:
                    mixed_tapes(v, v)
                new[j] = v.value
                parents.append((i, j, v.idx))
            plain.append(unflatten(new))
        for k, v in kwargs.items():
            if any(isinstance(leaf, Tracer) for leaf in flatten(v)[0]):
                raise RuleError(
                    f"{self.signature}: keyword argument {k}= is traced; rules differentiate positional "
                    "arguments only: pass it positionally"
                )
        out = call_plain(self.fwd, *plain, **kwargs)
        if not (isinstance(out, tuple) and len(out) == 2 and callable(out[1])):
            raise RuleError(f"rule {self.signature} must return (ans, pullback), got {type(out).__name__}")
        ans, pullback = out
        if tape is None:
            return ans
        nodes = tape.nodes
        nodes.append((_pb_rule, self, tuple(parents), pullback, tuple(plain), ans))
        me = len(nodes) - 1
        if not isinstance(ans, tuple):
            return make_tracer(ans, me, tape)
        # Several outputs (slogdet, eigh): each is its own traced value whose node hands its
        # cotangent to the rule's node, which calls the pullback once with all of them.
        outs = []
        for k, v in enumerate(ans):
            nodes.append((_pb_pick, me, k, len(ans)))
            outs.append(make_tracer(v, len(nodes) - 1, tape))
        return type(ans)(*outs) if hasattr(ans, "_fields") else tuple(outs)


@node_kind(output=None, parents=parent_at(1))
def _pb_pick(node, g, acc):
    _, me, k, n = node
    slot = acc.grads[me]
    if slot is None:
        slot = acc.grads[me] = [None] * n
    slot[k] = g if slot[k] is None else slot[k] + g


@node_kind(output=5, parents=parents_at(2))
def _pb_rule(node, g, acc):
    _, rule, parents, pullback, plain, ans = node
    if isinstance(ans, tuple):  # g is the list _pb_pick filled: zeros for unused outputs
        g = tuple(np.zeros_like(a) if c is None else c for a, c in zip(ans, g))
    if rule.accumulate:
        buffers = _Buffers(rule, parents, plain, acc)
        pullback(g, buffers)
        return
    cots = pullback(g)
    if len(plain) == 1 and not (isinstance(cots, tuple) and len(cots) == 1):
        cots = (cots,)
    if not isinstance(cots, (tuple, list)) or len(cots) != len(plain):
        raise RuleError(
            f"the pullback of {rule!r} returned {type(cots).__name__} of length {getattr(cots, '__len__', lambda: '?')()}; "
            f"it must return one cotangent per argument ({len(plain)})"
        )
    flat = {}
    for i, j, p in parents:
        c = cots[i]
        if c is None:
            raise RuleError(f"the pullback of {rule!r} returned None for argument {i}, which is traced")
        if callable(c):  # a thunk: computed only for a traced argument, once (ChainRules' @thunk)
            if type(cots) is not list:
                cots = list(cots)
            c = cots[i] = c()
            if c is None:
                raise RuleError(f"the pullback of {rule!r} returned a thunk giving None for argument {i}, which is traced")
        primal = plain[i]
        if type(primal) in (tuple, list, dict):  # a pytree argument: pick the leaf
            if i not in flat:
                flat[i] = (_leaves_like(c, primal, rule, i), flatten(primal)[0])
            c, primal = flat[i][0][j], flat[i][1][j]
        check_cotangent(rule, i, primal, c)
        acc.add(p, c)


def _leaves_like(c, primal, rule, i: int, path: str = "") -> list:
    """The leaves of the cotangent ``c`` in the order of its pytree argument's: a dict's by key
    (a pullback may build its dict in any order), a list's or tuple's by position; a structure
    that does not match is a RuleError naming where."""
    t = type(primal)
    if t is dict or isinstance(primal, dict):
        if not isinstance(c, dict) or set(c) != set(primal):
            got = sorted(map(repr, c)) if isinstance(c, dict) else type(c).__name__
            raise RuleError(f"the pullback of {rule!r} returned {got} at argument {i}{path}: its cotangent must have "
                            f"the argument's keys {sorted(map(repr, primal))}")
        return [leaf for k in primal for leaf in _leaves_like(c[k], primal[k], rule, i, f"{path}[{k!r}]")]
    if t is list or isinstance(primal, tuple):
        if not isinstance(c, (list, tuple)) or len(c) != len(primal):
            raise RuleError(f"the pullback of {rule!r} returned {type(c).__name__} at argument {i}{path}: its cotangent "
                            f"must be a list or tuple of {len(primal)} like the argument")
        return [leaf for k, (cv, pv) in enumerate(zip(c, primal)) for leaf in _leaves_like(cv, pv, rule, i, f"{path}[{k}]")]
    return [c]


class _Buffers:
    """``buffers[i]``: the owned gradient buffer of argument i (a plain array argument)."""

    __slots__ = ("rule", "parents", "plain", "acc")

    def __init__(self, rule, parents, plain, acc):
        self.rule, self.parents, self.plain, self.acc = rule, parents, plain, acc

    def __getitem__(self, i: int):
        for argnum, j, p in self.parents:
            if argnum == i:
                v = self.plain[i]
                if not isinstance(v, np.ndarray):
                    raise RuleError(
                        f"{self.rule!r}: in-place accumulation needs an array argument, argument {i} is {type(v).__name__}"
                    )
                return self.acc.buffer(p, v.shape, v.dtype)
        return None


def check_cotangent(rule, i: int, primal, c) -> None:
    """A cotangent must match its primal exactly: shape, and dtype for float arrays. Never
    broadcast: a silently broadcast cotangent is a wrong gradient."""
    if isinstance(primal, np.ndarray):
        if not isinstance(c, (np.ndarray, np.generic, float, int)) or np.shape(c) != primal.shape:
            raise RuleError(
                f"the pullback of {rule!r} returned a cotangent of shape {np.shape(c)} for argument {i} of shape "
                f"{primal.shape}: cotangents must have their argument's shape (no broadcasting)"
            )
        dt = getattr(c, "dtype", None)
        if dt is not None and primal.dtype.kind == "f" and dt != primal.dtype:
            raise RuleError(
                f"the pullback of {rule!r} returned a {dt} cotangent for argument {i} of dtype {primal.dtype}"
            )
    elif np.shape(c) != ():
        raise RuleError(
            f"the pullback of {rule!r} returned a cotangent of shape {np.shape(c)} for scalar argument {i}"
        )


# --- declaring ----------------------------------------------------------------------------


_KW = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.+)$")


def _descriptor(d) -> str:
    if not isinstance(d, str):
        raise RuleError(f"argument types are descriptor strings such as 'f64[2d]', not {d!r}")
    try:
        return parse_descriptor(d)
    except ValueError as exc:
        raise RuleError(str(exc)) from None


def parse_types(types) -> tuple[list, dict]:
    """Split declared types into positional options (a tuple of descriptors per argument, a
    finite union) and keyword descriptors (``"axis=int"`` entries, listed last)."""
    positional, keywords = [], {}
    for t in types:
        if isinstance(t, str) and _KW.match(t.strip()):
            name, desc = _KW.match(t.strip()).groups()
            if name in keywords:
                raise RuleError(f"keyword {name}= is given twice")
            keywords[name] = _descriptor(desc)
            continue
        options = t if isinstance(t, (tuple, list, set, frozenset)) else (t,)
        if not options:
            raise RuleError("an empty union of types")
        if keywords:
            raise RuleError(f"positional type {t!r} after a keyword type: list keyword types (name=descriptor) last")
        positional.append(tuple(_descriptor(o) for o in options))
    return positional, keywords


def _expand(types) -> list[tuple]:
    """Every signature key the declared types stand for: positional descriptors, then
    ``name=descriptor`` for keyword arguments sorted by name (engine.signature.signature_key)."""
    positional, keywords = parse_types(types)
    kw_key = tuple(f"{k}={d}" for k, d in sorted(keywords.items()))
    sigs = [tuple(s) + kw_key for s in itertools.product(*positional)]
    if len(sigs) > _MAX_UNION:
        raise RuleError(f"these types expand to {len(sigs)} signatures; rules are for concrete types (at most {_MAX_UNION})")
    return sigs


def register(target, types, fwd: Callable, *, replace: bool = False, accumulate: bool = False,
             source: str = "hand-written", origin: str = "") -> list[Rule]:
    """Register ``fwd`` as the rule of ``target`` for each signature ``types`` expands to."""
    if source not in SOURCES:
        raise RuleError(f"unknown rule source {source!r}; one of {', '.join(SOURCES)}")
    key = target_key(target)
    module, qualname = names_of(key)
    rules = [Rule(key, Signature.from_key(module, qualname, sig), fwd, source, accumulate, origin)
             for sig in _expand(types)]
    install(rules, replace=replace)
    return rules


def install(rules: list, replace: bool = False, name: str | None = None) -> list:
    """Put declared rules into the registry, all or none: a signature that already has a rule
    is an error unless ``replace``. Returns the rules replaced (None where there was none), in
    order. ``name``: the entry's public name when its callable does not say it (SciPy's ufuncs).
    A rule for a user function makes its module-level name a dispatch point."""
    for r in rules:
        old = REGISTRY[r.target].by_signature.get(r.key) if r.target in REGISTRY else None
        if old is not None and not replace:
            raise RuleError(
                f"{r.signature} already has a {old.source} rule ({old.origin or 'declared earlier'}); "
                "pass replace=True to replace it"
            )
    replaced = [add_rule(r, name) for r in rules]
    for key in {r.target for r in rules if isinstance(r.target, tuple)}:
        activate(key)
    return replaced


def rule(target, *types, replace: bool = False, accumulate: bool = False):
    """Decorator: declare ``fwd`` as the hand-written rule of ``target`` for ``types``.

    >>> import numpy as np
    >>> @rule(np.cumsum, "f64[1d]", replace=True)
    ... def cumsum_rule(x):
    ...     def pullback(g):
    ...         return (np.cumsum(g[::-1])[::-1],)
    ...     return np.cumsum(x), pullback
    >>> unregister(np.cumsum)
    """

    def declare(fwd):
        try:
            origin = f"{inspect.getsourcefile(fwd)}:{inspect.getsourcelines(fwd)[1]}"
        except (TypeError, OSError):
            origin = getattr(fwd, "__qualname__", "")
        register(target, types, fwd, replace=replace, accumulate=accumulate, source="hand-written", origin=origin)
        return fwd

    return declare


def unregister(target, types=None) -> int:
    """Remove the rules of ``target`` (all, or those for ``types``); returns how many."""
    key = target_key(target)
    e = REGISTRY.get(key)
    if e is None:
        return 0
    sigs = list(e.by_signature) if types is None else _expand(types)
    return sum(remove_rule(e.by_signature[s]) for s in sigs if s in e.by_signature)


def rules_for(target) -> dict:
    """The declared rules of ``target``, keyed by signature tuple."""
    e = REGISTRY.get(target_key(target))
    return dict(e.by_signature) if e is not None else {}
