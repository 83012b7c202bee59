"""The engine's shipped library rules against what the corpus advice picks on the bundled
corpus (profiles/), profiled with those rules taken out (benchmarks/advised_out.py), so that
the functions they serve are derived again and the advice can weigh them.

The profiles are measured, not made up: ``benchmarks/ecosystem.py defaults --store S --fixture
tests/data/corpus_defaults`` profiles the 23 programs on a two-worker cluster (over a minute,
too long for CI) and saves them here; this test stores them in a corpus store as ``corpus
run`` would and asks the library tier. A shipped rule the advice does not pick must be
explained: no program of the corpus calls it, or what it saves there is under the advisor's
threshold (the row says so); a rule it picks that the engine does not ship must be a
hand-written rule still to write (its cost estimated): a candidate, where shipping needs a rule
that exists and is measured."""

import hashlib
import json
from pathlib import Path

import pytest

from adcli.advisor import HAND_WRITE, KEEP_DERIVED, Thresholds
from adcli.corpus.programs import Program
from adcli.corpus.store import CorpusStore
from adcli.corpus.tier import library_tier
from adcli.engine.registry import REGISTRY, qualified_name

FIXTURE = Path(__file__).parent / "data" / "corpus_defaults"
PROGRAMS = sorted(p.stem for p in (Path(__file__).parent.parent / "profiles").glob("*.py"))


def _shipped() -> set:
    """The library functions whose native rule the advice put in the engine (origin "advised")."""
    return {qualified_name(f) for f, e in REGISTRY.items() if getattr(e, "origin", None) == "advised"}


@pytest.fixture(scope="module")
def tier(tmp_path_factory):
    files = sorted(FIXTURE.glob("*.json"))
    assert sorted(f.stem for f in files) == PROGRAMS  # one measured profile per bundled program
    store = tmp_path_factory.mktemp("corpus") / "store"
    with CorpusStore(str(store)) as db:
        for f in files:
            program = Program(f"profiles/{f.stem}.py", "script", f"/profiles/{f.stem}.py", "/profiles", "")
            key = hashlib.sha256(f.stem.encode()).hexdigest()[:32]
            outcome = {"status": "ok", "reason": "", "wall_s": 1.0, "profile": f.read_bytes(), "samples": None,
                       "inputs": None}
            assert db.record(program, key, outcome, "fixture") == "ok"
    with CorpusStore(str(store), create=False, read_only=True) as db:
        return library_tier(db, True, Thresholds())


def test_the_fixture_was_profiled_with_the_shipped_rules_taken_out_and_is_complete():
    from adcli.data import store

    for f in FIXTURE.glob("*.json"):  # every replay ran: an import left unmeasured could not be weighed
        assert not store.load(str(f)).problems(), f.name
    shipped = _shipped()
    assert len(shipped) >= 3  # roll, var, outer, triu, tril when this was written
    served = {}
    for f in FIXTURE.glob("*.json"):
        for s in json.loads(f.read_text())["signatures"]:
            name = s["function"]
            if name in shipped:
                served.setdefault(name, set()).add(s["served_by"])
    assert served and all(by == {"derived"} for by in served.values()), served


def test_the_shipped_defaults_are_what_the_corpus_advice_picks_or_the_difference_is_explained(tier):
    shipped = _shipped()
    assert tier.profiles == len(PROGRAMS) and not tier.corrupt
    rows = {}
    for row in tier.rows:
        rows.setdefault(row.function, []).append(row)
    picked = {fn for fn, rs in rows.items() if any(r.action != KEEP_DERIVED for r in rs)}
    for fn in picked - shipped:  # a rule to write, estimated: the engine can ship only a rule that exists
        for r in rows[fn]:
            assert r.action in (KEEP_DERIVED, HAND_WRITE) and not (r.action == HAND_WRITE and r.measured), (fn, r)
    for fn in shipped - picked:
        if fn not in rows:
            continue  # no program of the bundled corpus derives it: nothing to weigh
        for r in rows[fn]:  # weighed and left derived: what it saves is under the threshold
            assert r.action == KEEP_DERIVED and r.reason, (fn, r)
    # the ones the corpus can speak for: a shipped rule derived in it is picked, unless its share is small
    weighty = {fn for fn in shipped if fn in rows and max(r.median_share for r in rows[fn]) >= 0.05}
    assert weighty <= picked, f"shipped and weighty in the corpus, but not picked: {sorted(weighty - picked)}"
    assert len(picked) >= 3


def test_incomplete_profiles_are_advised_from_and_named(tmp_path):
    """A profile whose replays did not all run has no measured import for what they left out:
    the tier names it rather than weighing it as if it were whole."""
    from adcli.render import render

    doc = json.loads((FIXTURE / "stencil_roll.json").read_text())
    doc["unreplayed"], doc["unreplayed_s"] = 2, doc["totals"]["gradient_s"]
    with CorpusStore(str(tmp_path / "store")) as db:
        db.record(Program("stencil_roll.py", "script", "/p/stencil_roll.py", "/p", ""), "a" * 32,
                  {"status": "ok", "reason": "", "wall_s": 1.0, "profile": json.dumps(doc).encode(), "samples": None},
                  "fixture")
        advice = library_tier(db, True, Thresholds())
    assert advice.profiles == 1 and len(advice.incomplete) == 1
    assert "not replayed within the --replay-budget" in advice.incomplete[0][1]
    assert "1 profile(s) incomplete" in render(advice, "table")
