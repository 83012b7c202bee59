"""Issue "A profile is data", items 6-18: files saved as a pair and never lost, bounded reads,
and programs that behave the same under `adcli profile`."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from adcli.fileio import OutputError
from adcli.profiler import store
from adcli.profiler.api import profile_program
from adcli.profiler.model import Profile, ProfileError
from tests.support.profiles import document, stats

SCRIPTS = os.path.join(os.path.dirname(__file__), "support", "scripts")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def script(name):
    return os.path.join(SCRIPTS, name)


def adcli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "adcli", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT}, timeout=300)


def saved(tmp_path, name="p.json"):
    path = str(tmp_path / name)
    store.save(Profile.from_json(document([stats(1, "numpy.sum(f64[1d])")])), path, {"s1_a0": np.ones(3)})
    return path


# 6. an existing sidecar needs --force too
def test_an_existing_sidecar_is_not_overwritten_without_force(tmp_path):
    (tmp_path / "p.npz").write_bytes(b"precious")
    with pytest.raises(OutputError, match="--force"):
        profile_program(script("argv.py"), [], output=str(tmp_path / "p.json"), replays=False)
    assert (tmp_path / "p.npz").read_bytes() == b"precious"


# 7. the output path is resolved before the program runs
def test_a_script_that_changes_folder_does_not_move_the_output(tmp_path, monkeypatch):
    away = tmp_path / "away"
    away.mkdir()
    monkeypatch.chdir(tmp_path)
    try:
        profile_program(script("chdir_away.py"), [str(away)], output="p.json", replays=False)
    finally:
        os.chdir(tmp_path)
    assert (tmp_path / "p.json").exists() and not (away / "p.json").exists()


# 8. the JSON and the .npz are a pair
def test_a_sidecar_of_another_run_is_refused(tmp_path):
    a, b = saved(tmp_path, "a.json"), saved(tmp_path, "b.json")
    os.replace(store.sidecar(b), store.sidecar(a))
    with pytest.raises(ProfileError, match="another run"):
        store.load_samples(a, store.load(a))
    assert store.load_samples(b, None) == {}  # no sidecar: no samples


def test_scalars_json_cannot_hold_are_described_not_lost(tmp_path):
    from adcli.profiler.samples import encode

    for v in (np.complex128(1j), np.longdouble(1), np.datetime64("2020-01-01"), np.void(b"ab")):
        assert "unsupported" in encode(v, "k", {}) and json.dumps(encode(v, "k", {}))


# 9. a deep call tree is stored flat
def test_a_deep_call_tree_is_linear_in_size_and_loads(tmp_path):
    from adcli.profiler.model import CallTree

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


# 10, 17. os._exit and forked children
def test_os_exit_writes_a_partial_profile_and_says_so(tmp_path):
    res = adcli("profile", "-o", "p.json", script("hard_exit.py"), cwd=tmp_path)
    assert res.returncode == 4 and "os._exit(4)" in res.stderr
    data = json.loads((tmp_path / "p.json").read_text())
    assert data["partial"] is True and data["exit_status"] == 4


def test_a_forked_child_never_returns_into_adcli(tmp_path):
    res = adcli("profile", "--no-replay", "-o", "p.json", script("forks.py"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("PARENT DONE") == 1 and res.stderr.count("profile written") == 1


def test_a_replay_that_raises_system_exit_keeps_the_profile(tmp_path, monkeypatch):
    from adcli.profiler import replay

    def exits(*args, **kwargs):
        raise SystemExit(5)

    monkeypatch.setattr(replay, "replay", exits)
    data, result = profile_program(script("known_calls.py"), [], output=str(tmp_path / "p.json"))
    assert result.exit_status == 0 and any(s.replay and "SystemExit" in s.replay.error for s in data.signatures)


# 11. --force keeps the existing mode
def test_force_keeps_a_private_profile_private(tmp_path):
    out = tmp_path / "p.json"
    profile_program(script("argv.py"), [], output=str(out), replays=False)
    os.chmod(out, 0o600)
    os.chmod(store.sidecar(str(out)), 0o600)
    profile_program(script("argv.py"), [], output=str(out), replays=False, force=True)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(store.sidecar(str(out))).st_mode) == 0o600


# 12, 14, 19. bounded, one-line reads of the sidecar
def test_a_sidecar_declaring_a_huge_array_is_refused_before_decompressing(tmp_path):
    path = saved(tmp_path)
    header = np.lib.format.header_data_from_array_1_0(np.ones(1))
    header["shape"] = (10**12,)
    with zipfile.ZipFile(store.sidecar(path), "a", compression=zipfile.ZIP_BZIP2) as z:
        with z.open("s1_a1.npy", "w") as f:
            np.lib.format.write_array_header_1_0(f, header)
            f.write(b"\0" * 10_000)
    s = store.Samples(path, store.load(path))
    np.testing.assert_array_equal(s["s1_a0"], np.ones(3))
    with pytest.raises(ProfileError, match="over the limit"):
        s.get("s1_a1")


@pytest.mark.parametrize("content", [b"PK\x03\x04 not really a zip", np.lib.format.MAGIC_PREFIX + b"\x01\x00"])
def test_a_corrupt_sidecar_is_one_error(tmp_path, content):
    path = saved(tmp_path)
    with open(store.sidecar(path), "wb") as f:
        f.write(content)
    with pytest.raises(ProfileError):
        store.Samples(path, store.load(path))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_sidecar_does_not_hang(tmp_path):
    path = saved(tmp_path)
    os.unlink(store.sidecar(path))
    os.mkfifo(store.sidecar(path))
    with pytest.raises(ProfileError, match="regular file"):
        store.Samples(path, store.load(path))


def test_huge_integers_in_the_json_are_one_error(tmp_path):
    doc = json.dumps(document([stats(1, "numpy.sum(f64[1d])")])).replace('"calls": 10', '"calls": ' + "9" * 5000, 1)
    path = tmp_path / "p.json"
    path.write_text(doc)
    with pytest.raises(ProfileError):
        store.load(str(path))


# 13. a total sample budget
def test_samples_stop_at_the_total_budget(tmp_path):
    data, _ = profile_program(script("known_calls.py"), [], output=str(tmp_path / "p.json"), replays=False,
                              sample_budget=100)
    assert all(s.sample is None for s in data.signatures)


# 15, 16. threads and deep recursion
@pytest.mark.parametrize("name", ["threads.py", "deep_recursion.py"])
def test_programs_that_run_plainly_run_under_the_profiler(tmp_path, name):
    plain = subprocess.run([sys.executable, script(name)], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": ROOT}, timeout=300)
    assert plain.returncode == 0, plain.stderr
    res = adcli("profile", "--no-replay", "-o", "p.json", script(name), cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]


# 23. output paths that cannot work fail before the run
@pytest.mark.parametrize("output", ["", "dir/", "file/x.json", "dangling.json"])
def test_impossible_outputs_fail_before_running(tmp_path, output, capsys):
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling.json")
    with pytest.raises(OutputError):
        profile_program(script("argv.py"), [], output=str(tmp_path / output) if output else "", replays=False)
    assert "ARGV" not in capsys.readouterr().out
