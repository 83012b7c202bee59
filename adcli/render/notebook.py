"""``adcli.profile()``: the app's recording of a block of code (app/notebook.py), whose results
display themselves: ``str()`` of one is its terminal table, and Jupyter shows its markdown as an
HTML table (render/html.py), both through ``render``, as the CLI renders them.

The app's result types are left as they are (the app knows no renderer): the displayed results
extend them here, so that they are still a ``ProfileView`` and an ``Advice``, with the same fields
and formats.
"""

from __future__ import annotations

import functools
from dataclasses import fields

from ..app.advice import Advice
from ..app.notebook import LiveProfile
from ..app.profiling import ProfileView
from . import render
from .html import markdown_html


class Displayed:
    """A result that displays itself in the formats of the app's result type it extends."""

    def __str__(self) -> str:
        return render(self, "table")

    def _repr_html_(self) -> str:
        return markdown_html(render(self, "markdown"))


class DisplayedView(Displayed, ProfileView):
    """A ProfileView that displays itself."""


class DisplayedAdvice(Displayed, Advice):
    """Advice that displays itself."""


def _displayed(result, displayed_type: type):
    """``result`` as ``displayed_type``, which extends its type: the same field values."""
    return displayed_type(**{f.name: getattr(result, f.name) for f in fields(result)})


class NotebookProfile(LiveProfile):
    """What ``adcli.profile()`` returns: the app's recording, whose ``summary()`` and
    ``suggest()`` display themselves."""

    @functools.wraps(LiveProfile.summary)
    def summary(self, *args, **kwargs) -> ProfileView:
        return _displayed(super().summary(*args, **kwargs), DisplayedView)

    @functools.wraps(LiveProfile.suggest)
    def suggest(self, *args, **kwargs) -> Advice:
        return _displayed(super().suggest(*args, **kwargs), DisplayedAdvice)


def profile(**options) -> NotebookProfile:
    """``with adcli.profile() as run:`` profiles every gradient taken in the block
    (app/notebook.py; ``options``: those of LiveProfile)."""
    return NotebookProfile(**options)
