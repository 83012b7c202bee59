"""The replays' budget: proportional to the program's run, spent on the most valuable
signatures first (issue "Fastest eager AD", item 5)."""

import os

import pytest

from adcli.profiler import replay
from adcli.profiler.api import (
    AUTO,
    MEASURE_FLOOR_S,
    MEASURES_PER_SIGNATURE,
    REPLAY_CAP_S,
    REPLAY_FLOOR_S,
    REPLAY_SHARE,
    measure_budget,
    profile_program,
    replay_allowance,
)

SCRIPTS = os.path.join(os.path.dirname(__file__), "support", "scripts")

pytestmark = pytest.mark.real_replay_budget  # the budget's own rules (tests/conftest.py)


def test_auto_is_the_programs_run_time_within_a_floor_and_a_cap():
    assert replay_allowance(AUTO, 0.05) == REPLAY_FLOOR_S  # a short program: enough for a few timed rounds
    mid = (REPLAY_FLOOR_S + REPLAY_CAP_S) / 2 / REPLAY_SHARE
    assert replay_allowance(AUTO, mid) == pytest.approx(REPLAY_SHARE * mid)
    assert replay_allowance(AUTO, 1e6) == REPLAY_CAP_S
    assert replay_allowance(7.5, 1e6) == 7.5 and replay_allowance(None, 1.0) is None  # given: as it is


def test_each_measurement_shrinks_so_that_the_chosen_signatures_fit():
    assert measure_budget(0.2, None, 10) == 0.2
    assert measure_budget(0.2, 120.0, 10) == 0.2  # fits as it is
    fits = 3.0 / (10 * MEASURES_PER_SIGNATURE)
    assert measure_budget(0.2, 3.0, 10) == pytest.approx(fits)
    assert measure_budget(0.2, 0.001, 10) == MEASURE_FLOOR_S  # never under the floor
    assert measure_budget(0.005, 0.001, 10) == 0.005  # nor over what was asked


def test_derived_signatures_are_replayed_first_then_by_time(tmp_path):
    out = str(tmp_path / "p.json")
    profile, _ = profile_program(os.path.join(SCRIPTS, "with_rule.py"), [], output=out, replays=False,
                                 rules=(os.path.join(SCRIPTS, "with_rule_rules.py"),))
    from adcli.rules import unregister

    unregister("__main__:energy")
    chosen = replay.choose(profile)
    kinds = [s.served_by == "derived" for s in chosen]
    assert kinds == sorted(kinds, reverse=True) and True in kinds and False in kinds
    derived = [s.gradient_s for s in chosen if s.served_by == "derived"]
    assert derived == sorted(derived, reverse=True)


def test_what_ifs_in_the_program_stop_at_the_deadline(tmp_path):
    out = str(tmp_path / "p.json")
    profile, _ = profile_program(os.path.join(SCRIPTS, "known_calls.py"), [], output=out, replay_budget=0.01)
    measured = [s for s in profile.signatures if s.replay is not None and s.replay.program_s is not None]
    assert measured  # with no deadline, the derived signatures get their what-ifs
    for s in profile.signatures:
        if s.replay is not None:
            s.replay.program_s = None
    replay.in_program(profile, {}, 0.01, deadline=0.0)  # already passed: nothing is measured
    assert all(s.replay is None or s.replay.program_s is None for s in profile.signatures)
    assert any("replay budget ran out" in n for n in profile.notes)


@pytest.mark.parametrize("given, error", [("0", "not a positive number of seconds"), ("-2", "not a positive number"),
                                          ("inf", "not a positive number"), ("soon", "not a number of seconds or 'auto'")])
def test_the_option_takes_seconds_or_auto(given, error):
    from click.testing import CliRunner

    from adcli.cli import cli

    res = CliRunner().invoke(cli, ["profile", "--replay-budget", given, os.path.join(SCRIPTS, "known_calls.py")])
    assert res.exit_code == 2 and error in res.output
