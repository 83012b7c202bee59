"""adcli.profile(): profiling from Python, with the CLI's typed results and rich display."""


import numpy as np
import pytest

import adcli
from adcli.app.advice import Advice
from adcli.app.profiling import ProfileView
from adcli.data import store
from adcli.profiler.api import NoGradientError
from adcli.render import render
from adcli.rules import dispatch
from tests.support.fresh import fresh_python


@dispatch
def loop_loss(x):
    total = 0.0
    for v in x:
        total = total + np.sin(v) ** 2
    return total


def test_profile_block_summary_suggest_and_save(tmp_path):
    with adcli.profile(replays_total=30) as run:
        for _ in range(3):
            adcli.grad(loop_loss)(np.linspace(0.0, 1.0, 40))
    assert run.profile.totals.gradients == 3 and run.profile.replays == "done"
    assert run.profile.replay_s > 0  # the recording is `adcli profile`'s (profiler.api.Recording), replays timed
    view = run.summary()
    assert isinstance(view, ProfileView) and "loop_loss(f64[1d])" in str(view)
    assert str(view) == render(view, "table") and render(view, "markdown").startswith("**Gradient time:**")
    html = view._repr_html_()
    assert html.startswith("<p><b>Gradient time:</b>") and "<table>" in html and "loop_loss(f64[1d])</code>" in html
    advice = run.suggest()
    assert isinstance(advice, Advice)
    [s] = [s for s in advice.suggestions if "loop_loss" in str(s.signature)]
    assert s.action == "hand-write"  # a scalar loop: most of its cost is the engine's
    assert "hand-write" in str(advice) and "<table>" in advice._repr_html_()
    path = run.save(str(tmp_path / "p.json"))
    assert store.load(path).totals.gradients == 3
    with pytest.raises(adcli.AdcliError, match="pass --force"):
        run.save(path)
    (tmp_path / "q.npz").write_text("theirs")  # the profile's sample file is checked too, as by `adcli profile -o`
    with pytest.raises(adcli.AdcliError, match=r"q\.npz exists; pass --force to overwrite it \(the sample file of .*q\.json\)"):
        run.save(str(tmp_path / "q.json"))
    assert (tmp_path / "q.npz").read_text() == "theirs" and not (tmp_path / "q.json").exists()


def test_rich_display_escapes_what_it_shows():
    from adcli.render.html import _inline

    assert _inline("`<script>` **a&b**") == "<code>&lt;script&gt;</code> <b>a&amp;b</b>"


def test_no_gradient_nesting_and_errors_in_the_block():
    with pytest.raises(NoGradientError, match="no gradient was taken"):
        with adcli.profile():
            pass
    with adcli.profile(replays=False):
        with pytest.raises(adcli.AdcliError, match="do not nest"):
            with adcli.profile():
                pass
        adcli.grad(lambda x: np.sum(x * x))(np.ones(2))
    with pytest.raises(ValueError, match="boom"):
        with adcli.profile() as run:
            adcli.grad(lambda x: np.sum(x * x))(np.ones(2))
            raise ValueError("boom")
    assert run.profile.exit_status == 1 and not run.profile.replayed  # no replays after a failure
    assert "the program failed" in " ".join(run.profile.problems())


def test_import_adcli_does_not_load_the_profiler():
    code = "import sys, adcli; print('adcli.profiler' in sys.modules); adcli.profile; print('adcli.profiler' in sys.modules)"
    assert fresh_python(code).split() == ["False", "True"]
