"""Gradient sampling (profiler/sampling.py): which gradients a session records in full, and the
call tree scaled from them to every gradient."""

import datetime
import functools
import json

import numpy as np
import pytest

import adcli
from adcli.data.model import Profile
from adcli.data.schema import ProfileError
from adcli.profiler.api import run_meta
from adcli.profiler.build import build
from adcli.profiler.sampling import Kind, Sampler, kind_of
from adcli.profiler.session import Session, run_with_profile_hook
from adcli.render.profile import _headline

NEVER = -1.0  # an overhead budget no recording fits: only the first two gradients of each kind are recorded


def _profile(session):
    return build(session, run_meta(session, ["test"], datetime.datetime.now(), 0, False))[0]


def _calls(profile) -> dict:
    return {str(s.signature): s.calls for s in profile.signatures}


def _run(session, steps):
    def program():
        for step in steps:
            step()
    run_with_profile_hook(session, program)
    return _profile(session)


def _training_loop(n):
    x = np.linspace(0.1, 1.0, 8)
    loss = adcli.value_and_grad(lambda w: np.sum(np.sin(w) * np.exp(w)))
    return [lambda: loss(x)] * n


def test_a_training_loop_is_recorded_in_part_and_its_counts_are_exact():
    n = 300
    sampled, every = Session(), Session(every_gradient=True)
    p, q = _run(sampled, _training_loop(n)), _run(every, _training_loop(n))
    assert p.totals.gradients == q.totals.gradients == n
    assert 1 <= p.totals.profiled_gradients < n and p.totals.sampled
    assert q.totals.profiled_gradients == n and not q.totals.sampled
    assert _calls(p) == _calls(q) and set(_calls(p).values()) == {n}
    for s in p.signatures:
        assert sum(s.served_counts.values()) == s.calls
    tree = json.loads(json.dumps(p.to_json()))["tree"]
    assert tree[0]["primitives"] == n * 3 + n  # sin, exp, multiply per gradient, and sum


def test_never_affordable_records_only_the_first_two_gradients_of_each_kind():
    x = np.linspace(0.1, 1.0, 5)
    a = adcli.value_and_grad(lambda w: np.sum(np.sin(w)))
    b = adcli.value_and_grad(lambda w: np.mean(np.cos(w)) + np.mean(np.cos(2 * w)) + np.mean(np.cos(3 * w)))
    steps = [lambda: a(x), lambda: a(x), lambda: b(x)] * 40  # two kinds, 80 and 40 gradients
    profile = _run(Session(overhead_budget=NEVER), steps)
    assert profile.totals.gradients == 120 and profile.totals.profiled_gradients == 4
    calls = _calls(profile)
    # each kind scaled by its own gradients: a's 80 sums, b's 3 means in each of 40
    assert calls["numpy.sum(f64[1d])"] == 80 and calls["numpy.mean(f64[1d])"] == 120
    assert "recorded in full" in _headline(profile) and "4 of 120" in _headline(profile)


def test_a_kind_first_seen_late_is_recorded():
    x = np.linspace(0.1, 1.0, 5)
    a = adcli.value_and_grad(lambda w: np.sum(np.sin(w)))
    late = adcli.value_and_grad(lambda w: np.max(np.tanh(w)))
    profile = _run(Session(overhead_budget=NEVER), [lambda: a(x)] * 50 + [lambda: late(x)])
    assert _calls(profile)["numpy.max(f64[1d])"] == 1 and _calls(profile)["numpy.sum(f64[1d])"] == 50


def test_arguments_of_other_types_are_a_kind_of_their_own():
    # a float32 pass, or one sample instead of a batch: other signatures, recorded the first time
    loss = adcli.value_and_grad(lambda w, X: np.sum(np.tanh(X * w)))
    w, X = np.ones(3), np.ones((32, 3))
    steps = [lambda: loss(w, X)] * 40 + [lambda: loss(w, X.astype(np.float32)), lambda: loss(w, X[0])]
    profile = _run(Session(overhead_budget=NEVER), steps)
    assert profile.totals.profiled_gradients == 4
    calls = _calls(profile)
    assert calls["numpy.sum(f64[2d])"] == 41 and calls["numpy.sum(f64[1d])"] == 1


def test_the_same_array_given_another_rank_in_place_is_another_kind():
    # the arguments passed again as the same objects are not described again (sampling._same_key),
    # unless their rank changed: an in-place reshape makes the next gradient another kind
    loss = adcli.value_and_grad(lambda w, X: np.sum(np.tanh(X * w)))
    w, X, c = np.ones(3), np.ones((4, 3)), 2.0

    def flatten():
        X.shape = (12,)
        return loss(np.ones(12), X)

    steps = [lambda: loss(w, X)] * 30 + [flatten, lambda: loss(np.ones(12), X), lambda: loss(w, c)]
    profile = _run(Session(overhead_budget=NEVER), steps)
    calls = _calls(profile)
    assert calls["numpy.sum(f64[2d])"] == 30 and calls["numpy.sum(f64[1d])"] == 3
    assert profile.totals.profiled_gradients == 5  # the first two 2-d, both 1-d, the one with a float


def test_the_differentiated_argument_is_keyed_as_passed():
    # the engine hands the profiler the arguments as given, not their tracers (a tracer is
    # described by its value): the same array differentiated again is not described again,
    # unless its rank changed in place; another dtype is another kind
    loss = adcli.value_and_grad(lambda w: np.sum(np.tanh(w)))
    w = np.ones(6)

    def reshape():
        w.shape = (2, 3)
        return loss(w)

    steps = [lambda: loss(w)] * 20 + [reshape, lambda: loss(w.astype(np.float32))]
    profile = _run(Session(overhead_budget=NEVER), steps)
    calls = _calls(profile)
    assert calls["numpy.sum(f64[1d])"] == 20 and calls["numpy.sum(f64[2d])"] == 1 and calls["numpy.sum(f32[2d])"] == 1
    assert profile.totals.profiled_gradients == 4 and profile.totals.gradients == 22


def test_keywords_or_a_scalar_array_given_a_rank_in_place_make_another_kind():
    # each after a run of gradients timed whole on the thread's credit (sampling._same_key)
    loss = adcli.value_and_grad(lambda w, c, scale=1.0: np.sum(np.tanh(w * c)) * scale)
    w, c = np.ones(3), np.array(2.0)

    def grow():
        c.shape = (1,)
        return loss(w, c)

    for last in (grow, lambda: loss(w, c, scale=2.0)):
        c.shape = ()
        profile = _run(Session(overhead_budget=NEVER), [lambda: loss(w, c)] * 20 + [last])
        assert profile.totals.profiled_gradients == 3 and profile.totals.gradients == 21  # two kinds


def test_a_full_recordings_cost_counts_the_hooks_work_around_its_passes():
    sampler = Sampler(budget=0.1)
    kind = Kind(None)
    sampler.done(kind, 1.0, 1.0, False)  # the first: its one-time costs left out
    sampler.done(kind, 1.0, 1.0, False, 3.0)
    sampler.done(kind, 1.0, 1.0, False, 1.5)  # never less than its two passes
    assert kind.warm == 2 and kind.warm_s == 5.0
    assert kind.seconds == [[3.0, 3.0], [3.0, 3.0]]


def test_a_function_made_again_each_step_is_one_kind():
    def loss(w, scale):
        return np.sum(np.sin(w) * scale)

    def methods():
        class Model:
            def loss(self, w):
                return np.sum(w)
        return Model().loss, Model().loss

    assert kind_of(lambda w: w) != kind_of(lambda w: w + 1)
    assert kind_of(functools.partial(loss, scale=1.0)) is kind_of(functools.partial(loss, scale=2.0)) is loss.__code__
    m1, m2 = methods()
    assert kind_of(m1) is kind_of(m2)
    # dispatch points (every function `adcli profile` compiles) share the dispatcher's code
    from adcli.rules.dispatch import dispatch

    def a(w):
        return w

    def b(w):
        return w

    assert kind_of(dispatch(a)) is a.__code__ and kind_of(dispatch(b)) is b.__code__
    x = np.linspace(0.1, 1.0, 5)
    steps = [lambda k=k: adcli.grad(lambda w: loss(w, float(k)))(x) for k in range(30)]
    profile = _run(Session(overhead_budget=NEVER), steps)
    assert profile.totals.profiled_gradients == 2 and _calls(profile)["numpy.sum(f64[1d])"] == 30


def test_the_scaled_tree_adds_up_to_the_measured_totals():
    session = Session(overhead_budget=NEVER)
    profile = _run(session, _training_loop(200))
    top = profile.tree.children
    assert sum(c.forward_s for c in top) <= profile.totals.forward_s * 1.0001
    assert sum(c.reverse_s for c in top) <= profile.totals.reverse_s * 1.0001
    # the two full recordings' seconds, times all the gradients' forward (reverse) seconds over its own
    [kind] = session.sampler.kinds.values()
    (full_fwd, full_rev), (all_fwd, all_rev) = kind.seconds
    assert all_fwd == pytest.approx(profile.totals.forward_s) and all_rev == pytest.approx(profile.totals.reverse_s)
    recorded = kind.root.children
    assert sum(c.forward_s for c in top) == pytest.approx(sum(c.fwd for c in recorded.values()) * all_fwd / full_fwd)
    assert sum(c.self_reverse_s for c in top) == pytest.approx(sum(c.rev for c in recorded.values()) * all_rev / full_rev)


def test_the_budget_is_kept_and_full_recordings_continue():
    # timings made up: full recordings take 2 s, the others 1 s; a 10% budget allows one full
    # recording per ~10 gradients, after the first two and one timed whole
    sampler = Sampler(budget=0.1)
    batch = sampler.new_batch()
    full = []
    for _ in range(200):
        if batch.credit > 0 and sampler.fast(batch, _training_loop, (), None):
            f = False
        else:
            kind, f = sampler.choose(_training_loop, lambda: None, (), None, batch)
        if f:
            sampler.done(kind, 2.0, 0.0, False)
        else:
            batch.n += 1
            batch.forward_s += 1.0
            batch.fastest = 1.0
        full.append(f)
    sampler.settle_all()
    assert full[:3] == [True, True, False] and 10 <= sum(full) <= 25
    assert sampler.gradients == 200 and sampler.forward_s == 200 + sum(full)
    [kind] = sampler.kinds.values()
    extra = kind.full_done * 1.0
    assert extra <= 0.1 * sum(kind.seconds[1]) + 1.0  # within one recording of the budget
    assert Kind(None).scale == 1.0


def test_profiled_gradients_round_trip_and_are_validated(tmp_path):
    profile = _run(Session(overhead_budget=NEVER), _training_loop(20))
    doc = json.loads(json.dumps(profile.to_json()))
    assert doc["totals"]["profiled_gradients"] == 2
    assert Profile.from_json(doc, "p.json").totals.profiled_gradients == 2
    old = json.loads(json.dumps(doc))
    del old["totals"]["profiled_gradients"]
    back = Profile.from_json(old, "p.json").totals
    assert back.profiled_gradients is None and not back.sampled
    for bad in (21, -1, True, 1.5, "1"):
        doc["totals"]["profiled_gradients"] = bad
        with pytest.raises(ProfileError, match="profiled_gradients"):
            Profile.from_json(doc, "p.json")


def test_compare_says_when_the_runs_recorded_different_shares_in_full():
    from adcli.app.compare import compare_profiles

    sampled = _run(Session(overhead_budget=NEVER), _training_loop(40))
    every = _run(Session(every_gradient=True), _training_loop(40))
    notes = " ".join(compare_profiles(every, sampled).notes)
    assert "different shares of their gradients in full (40 of 40 and 2 of 40)" in notes
    for same in (every, sampled):
        assert "in full" not in " ".join(compare_profiles(same, same).notes)
