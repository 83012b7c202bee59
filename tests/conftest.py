"""Shared test set-up: tables render at the off-terminal default width unless a test asks for
another (adcli honours COLUMNS, which a developer's shell may export); the replays of an
in-process profile run are never cut short by a busy machine (see _replays_complete); property
tests draw the same examples on every run."""

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run: a CI run never fails on an example no other
# run drew (a tie at a nonsmooth point, found once in 3000 runs, is a flake, not a finding). The
# differential fuzzer (tests/fuzz) is where random exploration goes on.
settings.register_profile("adcli", derandomize=True)
settings.load_profile("adcli")


@pytest.fixture(autouse=True)
def _default_width(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture(autouse=True)
def _replays_complete(request, monkeypatch):
    """``--replay-budget auto`` gives a short program's replays at least 10 s, which a quiet
    machine needs 4-8 s of; a machine loaded by other jobs can take longer, and the profile is
    then INCOMPLETE and its advice another. Tests that assert advice must not depend on the
    machine's load: their replays get up to the cap (a quiet run still takes its 4-8 s). The
    budget's own tests (marked ``real_replay_budget``) keep the floor."""
    if request.node.get_closest_marker("real_replay_budget") is None:
        from adcli.profiler import api

        monkeypatch.setattr(api, "REPLAY_FLOOR_S", api.REPLAY_CAP_S)
