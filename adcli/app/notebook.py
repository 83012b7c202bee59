"""Profiling from Python (a notebook, a test, a script of your own): ``adcli.profile()``.

>>> import numpy as np, adcli
>>> with adcli.profile(replays=False) as run:
...     _ = adcli.grad(lambda x: np.sum(np.sin(x) ** 2))(np.ones(3))
>>> run.profile.totals.gradients
1

``run.summary()`` and ``run.suggest()`` return the same typed results ``adcli show`` and
``adcli suggest`` render (``adcli.profile()`` is render/notebook.py's, which gives them their
display: a table by ``print``, HTML in Jupyter), ``run.save(path)`` writes the profile and its
samples as ``adcli profile`` does: the recording is the command's own (profiler.api.Recording).

Functions of your own appear as rows with nothing to decorate: for the block, every function
``__main__`` (the notebook, the script) defined or imported from your files, every method of its
classes and every closure it keeps by name is a dispatch point, and the functions' own closures
created in the block too (rules/inplace.py; undone after the block), as every function of a
script is under ``adcli profile``.
"""

from __future__ import annotations

import os
import time

from ..advisor.config import thresholds
from ..data.model import Profile
from ..errors import AdcliError
from ..profiler.api import (
    DEFAULT_REPLAYS_TOTAL,
    DEFAULT_SAMPLE_BUDGET,
    NoGradientError,
    Recording,
    check_profile_output,
    save_profile,
)
from ..rules.inplace import serve_loaded
from ..rules.instrument import default_excluded
from .advice import Advice, advise_profiles
from .profiling import ProfileView


class LiveProfile:
    """The context manager ``adcli.profile()`` records with; after the block, ``profile`` holds
    what was measured (a :class:`~adcli.data.model.Profile`)."""

    def __init__(self, *, replays: bool = True, replay_budget: float = 0.2,
                 replays_total: float | str | None = DEFAULT_REPLAYS_TOTAL, include=(), exclude=(),
                 sample_budget: int = DEFAULT_SAMPLE_BUDGET, every_gradient: bool = False) -> None:
        self.replays = replays
        self.replay_budget = replay_budget
        self.replays_total = replays_total
        self._recording_args = dict(include=tuple(include), exclude=tuple(exclude), sample_budget=sample_budget,
                                    every_gradient=every_gradient)
        self.profile: Profile | None = None
        self._samples: dict = {}

    def __enter__(self) -> "LiveProfile":
        root = os.getcwd()
        self._recording = Recording(["<python>"], root, **self._recording_args)
        self._recording.start()
        try:
            self._served = serve_loaded(lambda path: os.path.abspath(path).startswith(root + os.sep)
                                        and not default_excluded(os.path.abspath(path)) and not path.startswith("<"))
        except BaseException:
            self._recording.stop()
            raise
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        recording = self._recording
        recording.stop()
        self._served.undo()
        run_s = time.perf_counter() - self._t0
        if recording.session.gradients == 0:
            if exc_type is None:
                raise NoGradientError("no gradient was taken through adcli inside the `with adcli.profile()` block")
            return False
        failed = exc_type is not None
        self.profile, self._samples = recording.profile(1 if failed else 0, exc_type is KeyboardInterrupt)
        if self.replays and not failed:
            recording.replay(self.profile, run_s, self.replays_total, self.replay_budget)
        return False

    def _measured(self) -> Profile:
        if self.profile is None:
            raise AdcliError("nothing measured yet: use the profile as `with adcli.profile() as run:`")
        return self.profile

    def summary(self, top: int = 10, sort: str = "time") -> ProfileView:
        """What ``adcli show`` prints, for this run (from ``adcli.profile()``: ``str()`` of it is the
        table, Jupyter shows an HTML table)."""
        return ProfileView(self._measured(), top, sort)

    def suggest(self, sort: str = "saving", show_all: bool = False, tier: str | None = None, **options) -> Advice:
        """What ``adcli suggest`` advises for this run; ``options``: the thresholds (import_burden=...)."""
        return advise_profiles([self._measured()], thresholds(options, "."), ["this run"], sort=sort,
                               show_all=show_all, tier=tier)

    def save(self, path: str = "adcli-profile.json", force: bool = False) -> str:
        """Write the profile (and its sample inputs beside it), as ``adcli profile -o`` does."""
        profile = self._measured()
        check_profile_output(path, force)
        save_profile(profile, path, self._samples, force)
        return path
