"""Issue "A profile is data", items 15-18: programs behave under `adcli profile` as they do
plainly (threads, deep recursion, forks), and an interrupted profile says so in its exit status."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from adcli.cli import cli
from tests.support.profiles import ROOT, run_adcli, script


def plainly(name):
    return subprocess.run([sys.executable, script(name)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT}, timeout=300)


# 15. threads: 4 threads x 50 gradients; 16. a traced recursion 600 deep
@pytest.mark.parametrize("name", ["threads.py", "deep_recursion.py"])
def test_programs_that_run_plainly_run_under_the_profiler(tmp_path, name):
    plain = plainly(name)
    assert plain.returncode == 0, plain.stderr
    res = run_adcli("profile", "--no-replay", "-o", "p.json", script(name), cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.splitlines()[0] == plain.stdout.splitlines()[0]  # the program's own output
    data = json.loads((tmp_path / "p.json").read_text())
    assert data["totals"]["gradients"] == (200 if name == "threads.py" else 1) and not data["partial"]


# 17. a forked child that exits never returns into adcli
def test_a_forked_child_never_returns_into_adcli(tmp_path):
    res = run_adcli("profile", "--no-replay", "-o", "p.json", script("forks.py"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("PARENT DONE") == 1 and res.stderr.count("profile written") == 1
    assert json.loads((tmp_path / "p.json").read_text())["exit_status"] == 0


# 18. Ctrl-C during the replays: a partial profile, and status 130
def test_an_interrupt_during_the_replays_exits_130(tmp_path, monkeypatch):
    from adcli.profiler import replay

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(replay, "replay", interrupted)
    out = str(tmp_path / "p.json")
    res = CliRunner().invoke(cli, ["profile", "-o", out, script("known_calls.py")])
    assert res.exit_code == 130, res.output
    data = json.loads(open(out).read())
    assert data["partial"] is True and data["exit_status"] == 130


# gradient sampling under threads: four threads' gradients of one function, scaled exactly
@pytest.mark.parametrize("every", [False, True])
def test_threads_gradients_sampled_or_all_count_every_call(tmp_path, every):
    flags = ["--every-gradient"] if every else []
    res = run_adcli("profile", "--no-replay", *flags, "-o", "p.json", script("threads.py"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    data = json.loads((tmp_path / "p.json").read_text())
    totals = data["totals"]
    assert totals["gradients"] == 200
    assert (totals["profiled_gradients"] == 200) if every else (1 <= totals["profiled_gradients"] < 200)
    calls = {s["signature"]: s["calls"] for s in data["signatures"]}
    # 200 gradients of loss: inner once, and np.sum twice (once in each)
    assert calls["__main__.loss(f64[1d])"] == calls["__main__.inner(f64[1d])"] == 200
    assert calls["numpy.sum(f64[1d])"] == 400
    assert ("recorded in full" in res.stdout) is not every
