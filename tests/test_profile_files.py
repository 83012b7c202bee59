"""Issue "A profile is data", items 6-11 (data loss and integrity): a finished run is never lost,
nothing is overwritten without --force, and a profile's JSON and .npz are saved as a pair."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from adcli import fileio
from adcli.data import store
from adcli.data.model import Profile
from adcli.data.records import CallTree
from adcli.data.schema import ProfileError
from adcli.fileio import OutputError
from adcli.profiler.api import profile_program
from tests.support.profiles import ROOT, document, run_adcli, saved, script, stats


# 6. an existing sidecar needs --force too
def test_an_existing_sidecar_is_not_overwritten_without_force(tmp_path):
    (tmp_path / "p.npz").write_bytes(b"precious")
    with pytest.raises(OutputError, match="--force"):
        profile_program(script("argv.py"), [], output=str(tmp_path / "p.json"), replays=False)
    assert (tmp_path / "p.npz").read_bytes() == b"precious"
    res = run_adcli("profile", "-o", "p.json", script("argv.py"), cwd=tmp_path)
    assert res.returncode == 2 and "--force" in res.stderr and "ARGV" not in res.stdout
    assert (tmp_path / "p.npz").read_bytes() == b"precious"


# 7. the output path is resolved before the program runs
def test_a_script_that_changes_folder_does_not_move_the_output(tmp_path, monkeypatch):
    away = tmp_path / "away"
    away.mkdir()
    (away / "p.json").write_text("theirs")
    monkeypatch.chdir(tmp_path)
    try:
        profile_program(script("chdir_away.py"), [str(away)], output="p.json", replays=False)
    finally:
        os.chdir(tmp_path)
    assert store.load(str(tmp_path / "p.json")).signatures
    assert (away / "p.json").read_text() == "theirs" and not (away / "p.npz").exists()


# 8. the JSON and the .npz are a pair
def test_a_sidecar_of_another_run_is_refused(tmp_path):
    a, b = saved(tmp_path, "a.json"), saved(tmp_path, "b.json")
    os.replace(store.sidecar(b), store.sidecar(a))
    with pytest.raises(ProfileError, match="another run"):
        store.load_samples(a, store.load(a))
    assert store.load_samples(b, None) == {}  # no sidecar: no samples


def test_scalars_json_cannot_hold_are_described_and_the_new_pair_replaces_the_old(tmp_path):
    old = saved(tmp_path)
    # the four gradients differ only in a closure's value: each recorded only with --every-gradient
    data, result = profile_program(script("odd_scalars.py"), [], output=old, replays=False, force=True,
                                   every_gradient=True)
    assert result.exit_status == 0
    loaded = store.load(old)
    assert loaded.pair == data.pair and store.load_samples(old, loaded)  # the new JSON with the new .npz
    described = [s.sample.kwargs or s.sample.args for s in loaded.signatures if s.signature.function == "__main__.f"]
    assert len(described) == 4 and all(any("unsupported" in a for a in args) for args in described)


def test_concurrent_saves_to_one_output_publish_whole_pairs(tmp_path, monkeypatch):
    # Run 1 stops between publishing its .npz and its JSON while run 2 saves: without the lock,
    # run 1's JSON would end up beside run 2's .npz.
    real, halfway, path = os.replace, threading.Event(), str(tmp_path / "p.json")

    def replace(a, b):
        real(a, b)
        if threading.current_thread().name == "run 1" and b.endswith(".npz"):
            halfway.set()
            time.sleep(0.3)

    monkeypatch.setattr(fileio.os, "replace", replace)

    def save(tag):
        doc = document([stats(1, "numpy.sum(f64[1d])")], command=[str(tag)])
        store.save(Profile.from_json(doc), path, {"s1_a0": np.full(3, float(tag))})

    first = threading.Thread(target=save, args=(1,), name="run 1")
    first.start()
    assert halfway.wait(10)
    second = threading.Thread(target=save, args=(2,), name="run 2")
    second.start()
    first.join()
    second.join()
    profile = store.load(path)
    assert profile.command == ["2"] and store.load_samples(path, profile)["s1_a0"][0] == 2.0


def test_concurrent_runs_to_one_output_leave_a_whole_pair(tmp_path):
    env = {**os.environ, "PYTHONPATH": ROOT}
    for _ in range(2):
        runs = [subprocess.Popen([sys.executable, "-m", "adcli", "profile", "--force", "--no-replay", "-o", "p.json",
                                  script("tagged.py"), str(tag)], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True) for tag in (1, 2)]
        for r in runs:
            assert r.wait(timeout=300) == 0, r.stderr.read()
        profile = store.load(str(tmp_path / "p.json"))
        samples = store.load_samples(str(tmp_path / "p.json"), profile)
        f = next(s for s in profile.signatures if s.signature.function == "__main__.f")
        assert samples[f.sample.args[0]["array"]][0] == float(profile.command[-1])


# 9. a deep call tree is stored flat
def test_a_deep_call_tree_is_linear_in_size_and_loads(tmp_path):
    p = Profile.from_json(document([stats(1, "__main__.f(f64[1d])")]))
    node = p.tree.children[0]
    for _ in range(5000):
        child = CallTree(sig=1, calls=1)
        node.children.append(child)
        node = child
    path = str(tmp_path / "deep.json")
    store.save(p, path, {})
    assert os.path.getsize(path) < 5000 * 400
    assert store.load(path).to_json() == p.to_json()  # (dataclass == would recurse 5000 deep)


# 10. a replay's SystemExit and a script's os._exit lose nothing
def test_os_exit_writes_a_partial_profile_and_says_so(tmp_path):
    res = run_adcli("profile", "-o", "p.json", script("hard_exit.py"), cwd=tmp_path)
    assert res.returncode == 4 and "os._exit(4)" in res.stderr
    data = json.loads((tmp_path / "p.json").read_text())
    assert data["partial"] is True and data["exit_status"] == 4


def test_a_replay_that_raises_system_exit_keeps_the_profile(tmp_path, monkeypatch):
    from adcli.profiler import replay

    def exits(*args, **kwargs):
        raise SystemExit(5)

    monkeypatch.setattr(replay, "replay", exits)
    data, result = profile_program(script("known_calls.py"), [], output=str(tmp_path / "p.json"))
    assert result.exit_status == 0 and any(s.replay and "SystemExit" in s.replay.error for s in data.signatures)
    assert store.load(str(tmp_path / "p.json")).signatures


# 11. --force keeps the existing mode
def test_force_keeps_a_private_profile_private(tmp_path):
    out = tmp_path / "p.json"
    profile_program(script("argv.py"), [], output=str(out), replays=False)
    os.chmod(out, 0o600)
    os.chmod(store.sidecar(str(out)), 0o600)
    profile_program(script("argv.py"), [], output=str(out), replays=False, force=True)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(store.sidecar(str(out))).st_mode) == 0o600
