"""Random state arguments (``np.random.Generator``, ``RandomState``): recorded in a profile as data
(the bit generator's name and state), read back only against each bit generator's exact fields,
and restored before every call ``check_rule`` makes, so a rule for a function that draws noise
checks on the profile's sample."""

import json
import os
import sys

import numpy as np
import pytest
from click.testing import CliRunner

import adcli.rules
from adcli.cli import cli
from adcli.data.random_states import SCHEMAS, decode_random_state, encode_random_state
from adcli.data.samples import decode, encode, malformed
from adcli.data.store import _bounded_int
from adcli.testing import GradientMismatch, check_grad, check_rule
from tests.support.profiles import document, stats, write


def through_json(entry):
    """What a profile written and read again holds: the JSON text, parsed as ``load`` parses it."""
    return json.loads(json.dumps(entry), parse_int=_bounded_int)


GENERATORS = [np.random.Generator(bg(7)) for bg in (np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937,
                                                    np.random.Philox, np.random.SFC64)]
RANDOM_STATES = [np.random.RandomState(7), np.random.RandomState(np.random.PCG64(7))]


@pytest.mark.parametrize("rs", GENERATORS + RANDOM_STATES, ids=lambda rs: f"{type(rs).__name__}")
def test_a_random_state_is_recorded_as_data_and_draws_the_same_numbers_when_read(rs):
    rs.standard_normal(3)  # a state some way along, a cached normal for RandomState
    entry = through_json(encode(rs, "s1_a0", {}))
    assert set(entry) == {"random"} and malformed(entry) is None
    back = decode(entry, {})
    assert type(back) is type(rs) and back is not rs
    assert np.array_equal(back.standard_normal(5), rs.standard_normal(5))
    assert np.array_equal(back.integers(0, 100, 4) if isinstance(rs, np.random.Generator) else back.randint(0, 100, 4),
                          rs.integers(0, 100, 4) if isinstance(rs, np.random.Generator) else rs.randint(0, 100, 4))


def test_a_bit_generator_of_another_class_is_described_not_recorded():
    class Mine(np.random.PCG64):
        pass

    assert encode(np.random.Generator(Mine(1)), "k", {}) == {"unsupported": "obj(numpy.random.Generator)"}
    assert encode_random_state(object()) is None


def crafted(**changes):
    """A valid MT19937 RandomState entry with ``changes`` applied (dotted paths into it)."""
    entry = through_json(encode_random_state(np.random.RandomState(1)))
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = entry
        for p in parents:
            node = node[p]
        node[last] = value
    return entry


PCG = through_json(encode_random_state(np.random.default_rng(1)))
CRAFTED = {
    "pos past the key": crafted(state__state__pos=10**6),  # NumPy takes it, and reads past the key
    "pos negative": crafted(state__state__pos=-1),
    "short key": crafted(state__state__key=[1, 2, 3]),
    "key too wide": crafted(state__state__key=[2**40] * 624),
    "key of strings": crafted(state__state__key=["1"] * 624),
    "gauss not a float": crafted(state__gauss="0.5"),
    "gauss not finite": crafted(state__gauss=float("nan")),
    "flag 7": crafted(state__has_gauss=7),
    "a name to look up": crafted(bit_generator="os.system"),
    "a name of numpy.random": crafted(bit_generator="RandomState"),
    "another kind": crafted(kind="Generator.__init__"),
    "an extra field": crafted(state__extra=1),
    "a missing field": {"kind": "RandomState", "bit_generator": "MT19937", "state": {}},
    "not an object": {"random": "np.random.default_rng(0)"},
    "Philox buffer_pos past the buffer": {"kind": "Generator", "bit_generator": "Philox", "state": {
        "state": {"counter": [0] * 4, "key": [0, 0]}, "buffer": [0] * 4, "buffer_pos": 10**6, "has_uint32": 0,
        "uinteger": 0}},
    "PCG state of 200 bits": {**PCG, "state": {**PCG["state"], "state": {
        "state": "0x" + "f" * 50, "inc": "0x1"}}},
    "PCG state as code": {**PCG, "state": {**PCG["state"], "state": {
        "state": "__import__('os').system('touch PWNED')", "inc": "0x1"}}},
}


@pytest.mark.parametrize("name", list(CRAFTED))
def test_a_crafted_state_is_refused(name):
    entry = CRAFTED[name]
    entry = entry if "random" in entry and len(entry) == 1 else {"random": entry}
    assert malformed(entry) == ""
    assert decode(entry, {}, missing="missing") == "missing"
    if isinstance(entry["random"], dict):
        with pytest.raises(ValueError) as info:
            decode_random_state(entry["random"])
        assert "\n" not in str(info.value)


@pytest.mark.parametrize("name", ["pos past the key", "a name to look up", "PCG state as code"])
def test_a_profile_with_a_crafted_state_fails_to_load_in_one_line(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    sample = {"args": [{"array": "s1_a0"}, {"random": CRAFTED[name]}], "kwargs": {}}
    path = write(tmp_path / "p.json", document([stats(1, "__main__.noisy_loss(f64[1d], obj(numpy.random.Generator))",
                                                      sample=sample)]))
    res = CliRunner().invoke(cli, ["suggest", path])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert res.output.strip().count("\n") == 0 and "args[1]" in res.output and "is not an encoded value" in res.output
    assert not (tmp_path / "PWNED").exists()


def test_every_bit_generator_has_a_schema_for_its_fields():
    """A new field in NumPy's state of a bit generator would leave its states unrecorded."""
    for name in SCHEMAS:
        assert encode_random_state(np.random.Generator(getattr(np.random, name)(3))) is not None


# --- check_rule: the state restored before each call ----------------------------------------------


def noisy_loss(w, X, rng):
    noise = rng.standard_normal(X.shape[0])
    return np.sum((X @ w + 0.5 * noise) ** 2)


def dropout_loss(w, X, rs):
    keep = rs.uniform(size=X.shape[0]) < 0.6
    return np.sum(((X @ w) * keep) ** 2)


def noisy_fwd(factor):
    def fwd(w, X, rng):
        r = X @ w + 0.5 * rng.standard_normal(X.shape[0])
        return np.sum(r ** 2), lambda g: (factor * g * 2.0 * X.T @ r, g * 2.0 * np.outer(r, w), None)
    return fwd


@pytest.fixture
def noisy_rule():
    def declare(factor=1.0):
        adcli.rules.register(f"{__name__}:noisy_loss", ("f64[1d]", "f64[2d]", "obj(numpy.random.Generator)"),
                             noisy_fwd(factor))
        return adcli.rules.dispatch(noisy_loss)

    yield declare
    adcli.rules.unregister(f"{__name__}:noisy_loss")


W, X = np.array([0.3, -0.2, 0.5]), np.random.default_rng(0).standard_normal((6, 3))


def test_without_restoring_the_state_finite_differences_see_other_noise():
    rng = np.random.default_rng(1)
    with pytest.raises(GradientMismatch):
        check_grad(lambda w: noisy_loss(w, X, rng), W)


def test_check_rule_restores_the_random_state_before_each_call_and_after(noisy_rule):
    rng = np.random.default_rng(1)
    report = check_rule(noisy_rule(), W, X, rng, timing=False)
    assert "finite differences" in report.checks and "repeatable" in report.checks
    assert "agrees with derived rule" in report.checks and report.nonsmooth == ""
    assert np.array_equal(rng.standard_normal(4), np.random.default_rng(1).standard_normal(4))  # as it was


def test_a_wrong_rule_with_a_random_state_still_fails_naming_the_argument(noisy_rule):
    with pytest.raises(GradientMismatch, match=r"argument 0 \(w\) is wrong: worst component"):
        check_rule(noisy_rule(factor=2.0), W, X, np.random.default_rng(1), timing=False)


def test_a_legacy_random_state_is_restored_too():
    report = check_rule(dropout_loss, W, X, np.random.RandomState(3), timing=False)
    assert report.checks[:1] == ["finite differences"]


# --- the loop: profile, then check on the profile's sample ---------------------------------------


PROGRAM = '''
import numpy as np

import adcli


def noisy_loss(w, X, rng):
    noise = rng.standard_normal(X.shape[0])
    return np.sum((X @ w + 0.5 * noise) ** 2)


def dropout_loss(w, X, rs):
    keep = rs.uniform(size=X.shape[0]) < 0.6
    return np.sum(((X @ w) * keep) ** 2)


def objective(w, X, seed):
    return noisy_loss(w, X, np.random.default_rng(seed)) + dropout_loss(w, X, np.random.RandomState(seed))


if __name__ == "__main__":
    X = np.random.default_rng(0).standard_normal((20, 3))
    w = np.zeros(3)
    for t in range(3):
        w = w - 0.01 * adcli.grad(objective)(w, X, t)
'''

RULES = '''
import numpy as np

import adcli.rules


@adcli.rules.rule("__main__:noisy_loss", "f64[1d]", "f64[2d]", "obj(numpy.random.Generator)")
def noisy_rule(w, X, rng):
    r = X @ w + 0.5 * rng.standard_normal(X.shape[0])
    return np.sum(r ** 2), lambda g: ({factor} * g * 2.0 * X.T @ r, g * 2.0 * np.outer(r, w), None)


@adcli.rules.rule("__main__:dropout_loss", "f64[1d]", "f64[2d]", "obj(numpy.random.RandomState)")
def dropout_rule(w, X, rs):
    keep = rs.uniform(size=X.shape[0]) < 0.6
    z = (X @ w) * keep
    return np.sum(z ** 2), lambda g: (X.T @ (2.0 * g * z * keep), np.outer(2.0 * g * z * keep, w), None)
'''


@pytest.mark.parametrize("factor", [1, 2])
def test_check_runs_a_rule_taking_a_random_state_on_the_profiles_sample(tmp_path, monkeypatch, factor):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "prog.py").write_text(PROGRAM)
    (tmp_path / "rules.py").write_text(RULES.format(factor=factor))
    runner = CliRunner()
    res = runner.invoke(cli, ["profile", "-o", "p.json", "prog.py"])
    assert res.exit_code == 0, res.output
    doc = json.load(open("p.json"))
    kinds = sorted(a["random"]["kind"] for s in doc["signatures"] if s["sample"] for a in s["sample"]["args"]
                   if "random" in a)
    assert kinds == ["Generator", "RandomState"]
    try:
        res = runner.invoke(cli, ["check", "rules.py", "--profile", "p.json", "--script", "prog.py", "--format",
                                  "json"])
    finally:
        for name in ("noisy_loss", "dropout_loss"):
            adcli.rules.unregister(f"__main__:{name}")
    results = {r["rule"].split("(")[0]: r for r in json.loads(res.stdout)["results"]}
    assert results["__main__.dropout_loss"]["status"] == "ok" and results["__main__.dropout_loss"]["on"] == "profile samples"
    noisy = results["__main__.noisy_loss"]
    if factor == 1:
        assert res.exit_code == 0 and noisy["status"] == "ok" and noisy["on"] == "profile samples", res.output
    else:
        assert res.exit_code == 1 and noisy["status"] == "wrong" and "argument 0 (w) is wrong" in noisy["report"]
    assert os.path.exists("p.json")


def test_an_exported_skeleton_builds_a_seeded_random_state_for_its_test():
    # (check_rule restores the state before every call, so a fresh seeded generator serves)
    from adcli.app.stubs import _example

    for desc, kind in (("obj(numpy.random.Generator)", np.random.Generator),
                       ("obj(numpy.random.RandomState)", np.random.RandomState)):
        expr = _example(desc, None)
        assert expr is not None and isinstance(eval(expr, {"np": np}), kind)  # (our own constant, not a profile's)
