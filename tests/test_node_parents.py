"""Every kind of tape node says which values it depends on (engine.tape.node_parents), and
says it truly: the indices its pullback sends cotangents to are exactly its declared parents.

The profiler reads a call's dependence structure through this (a loop whose steps each need
the last is a recurrence, not a map: profiler.decompose), so a kind that under-declared would
make a recurrence look vectorisable, and one that over-declared would make a map look serial.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcli
from adcli.engine import hooks
from adcli.engine.tape import node_parents
from adcli.rules import register, unregister
from tests.support.kinds import pullback_kinds


class _Recording(list):
    """A gradient list that remembers which slots a pullback wrote."""

    def __init__(self, n):
        super().__init__([None] * n)
        self.written: set = set()

    def __setitem__(self, i, v):
        self.written.add(i)
        super().__setitem__(i, v)


class _Checking(hooks.Session):
    """Runs the reverse pass node by node, comparing each pullback's writes with its parents."""

    def __init__(self):
        self.kinds: dict = {}  # kind name -> nodes checked
        self.mismatches: list = []

    def backward(self, tape, acc, start):
        nodes = tape.nodes
        grads = _Recording(len(acc.grads))
        for i, g in enumerate(acc.grads):
            list.__setitem__(grads, i, g)
        acc.grads = grads
        for i in range(start, -1, -1):
            g = grads[i]
            node = nodes[i]
            if g is None or node is None:
                continue
            list.__setitem__(grads, i, None)
            parents = node_parents(node)
            assert all(0 <= p < i for p in parents), (node[0].__name__, parents, i)
            grads.written.clear()
            before = {p: grads[p] for p in parents}
            node[0](node, g, acc)
            # a buffer written in place (acc.buffer made it before this node) counts as written
            touched = grads.written | {p for p in parents if grads[p] is not before[p]}
            self.kinds[node[0].__name__] = self.kinds.get(node[0].__name__, 0) + 1
            if not touched <= set(parents):
                self.mismatches.append((node[0].__name__, sorted(touched), parents))
            nodes[i] = False


def _programs():
    def elementwise(x, y):
        return np.sum(np.sin(x) * y + np.exp(x) - x ** 2.0) + np.sum(np.maximum(x, y))

    def general(x, y):
        return np.sum(np.dot(x.reshape(2, 3), y.reshape(3, 2))) + np.sum(np.where(x > 0, x, y))

    def indexing(x, y):
        z = x + 0.0
        z[1] = y[0] * 2.0
        z[2:4] = y[:2]
        s = 0.0
        for i in range(3):
            s = s + x[i] * y[i]
        return s + np.sum(z[[0, 0, 1]]) + np.sum(np.diagonal(np.outer(x, y))) + np.sum(np.repeat(x, 2))

    def shapes(x, y):
        a = np.concatenate([x, y]) * np.stack([x, y]).sum(0).repeat(2)
        return np.sum(a * np.sort(np.concatenate([y, x]))) + np.sum(x.reshape(2, 3).T @ np.ones(2))

    def linalg(x, y):
        a = np.outer(x, x) + 6.0 * np.eye(6)
        return np.sum(np.linalg.solve(a, y)) + np.sum(np.linalg.cholesky(a)) + np.sum(np.linalg.eigh(a)[0])

    def constants(x, y):
        z = np.zeros(6)
        z[0] = x[0]
        return np.sum(z * y) + np.sum(np.zeros_like(x) + x * y)

    return [elementwise, general, indexing, shapes, linalg, constants]


@pytest.mark.parametrize("f", _programs(), ids=lambda f: f.__name__)
def test_each_pullback_sends_cotangents_only_to_its_declared_parents(f):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=6), rng.normal(size=6)
    session = _Checking()
    hooks.install(session)
    try:
        adcli.grad(f, argnums=(0, 1))(x, y)
    finally:
        hooks.uninstall()
    assert session.kinds, "no node was checked"
    assert not session.mismatches


def _slogdet_rule(a):
    sign, logdet = np.linalg.slogdet(a)

    def pullback(g):
        return g[1] * np.linalg.inv(a).T

    return (sign, logdet), pullback


def test_a_hand_written_rule_with_two_outputs_declares_its_parents():
    register(np.linalg.slogdet, ("f64[2d]",), _slogdet_rule)
    try:
        a = np.eye(3) * 2.0 + 0.1

        def f(x, y):
            return np.linalg.slogdet(np.outer(x, y) + a)[1] * np.sum(x)

        session = _Checking()
        hooks.install(session)
        try:
            adcli.grad(f, argnums=(0, 1))(np.ones(3), np.arange(3.0))
        finally:
            hooks.uninstall()
    finally:
        unregister(np.linalg.slogdet)
    assert {"_pb_rule", "_pb_pick"} <= set(session.kinds), session.kinds
    assert not session.mismatches


def _all_kinds():
    return pullback_kinds()


def test_every_node_kind_declares_its_parents():
    kinds = _all_kinds()
    assert len(kinds) >= 20
    assert not [f"{f.__module__}.{f.__name__}" for f in kinds if not callable(getattr(f, "parents_of", None))]


def test_a_leaf_has_no_parents():
    assert node_parents(None) == ()


def test_the_programs_above_check_every_kind_of_node():
    """A new kind of node gets a program here that makes one (else its parents go unchecked)."""
    seen: set = set()
    rng = np.random.default_rng(1)
    for f in _programs():
        session = _Checking()
        hooks.install(session)
        try:
            adcli.grad(f, argnums=(0, 1))(rng.normal(size=6), rng.normal(size=6))
        finally:
            hooks.uninstall()
        seen |= set(session.kinds)
    missing = {f.__name__ for f in _all_kinds()} - seen - {"_pb_rule", "_pb_pick"}  # (the rule test's)
    assert not missing
