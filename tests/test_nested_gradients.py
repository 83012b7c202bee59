"""Gradients taken while another runs on the same thread (odeint's adjoint takes one per step of
its reverse pass): the program's gradients are the outer ones, and their times hold the nested."""

from __future__ import annotations

import contextlib
import io
import os

import numpy as np
import pytest

import adcli
from adcli.engine import hooks
from adcli.engine.hooks import Session
from adcli.profiler.api import profile_program

SCRIPTS = os.path.join(os.path.dirname(__file__), "support", "scripts")


def test_a_profile_counts_the_programs_gradients_not_the_adjoints(tmp_path):
    with contextlib.redirect_stdout(io.StringIO()):
        profile, _ = profile_program(os.path.join(SCRIPTS, "odeint_fit.py"), [], output=str(tmp_path / "p.json"),
                                     replays=False)
    assert profile.totals.gradients == 3
    assert profile.totals.forward_s > 0 and profile.totals.reverse_s > 0
    from adcli.data.store import load

    again = load(str(tmp_path / "p.json"))  # the file reads back: every total is a time
    assert again.totals.gradients == 3


class _Starts(Session):
    starts = 0

    def start(self, tape, f, args, kwargs):
        self.starts += 1
        super().start(tape, f, args, kwargs)


def test_the_session_sees_only_the_outer_gradient_and_is_back_after():
    from scipy.integrate import odeint

    session = _Starts()
    hooks.install(session)
    try:
        g = adcli.grad(lambda k: np.sum(odeint(lambda y, t, k: -k * y, [1.0], [0.0, 1.0], args=(k,))[-1]))(0.5)
        assert hooks.current() is session
    finally:
        hooks.uninstall()
    assert session.starts == 1
    assert g == pytest.approx(-np.exp(-0.5), rel=1e-5)
