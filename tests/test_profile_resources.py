"""Issue "A profile is data", items 12-14 (resources): reading a sample file allocates at most
what its cap allows and never blocks; the samples a run keeps have a total budget."""

from __future__ import annotations

import os
import tracemalloc
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner

from adcli.cli import cli
from adcli.profiler import store
from adcli.profiler.api import profile_program
from adcli.profiler.model import ProfileError
from adcli.units import parse_bytes
from tests.support.profiles import document, run_adcli, saved, script, stats, write


def bomb(path: str, elements: int, compression=zipfile.ZIP_DEFLATED) -> None:
    """Add to ``path``'s sidecar an array member whose header declares ``elements`` float64s and
    whose data is up to 100 MB of zero bytes, compressed (a few kB)."""
    header = np.lib.format.header_data_from_array_1_0(np.ones(1))
    header["shape"] = (elements,)
    with zipfile.ZipFile(store.sidecar(path), "a", compression=compression) as z:
        with z.open("s1_a1.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(f, header)
            chunk = b"\0" * 1_000_000
            for _ in range(min(elements * 8, 10**8) // len(chunk)):
                f.write(chunk)


# 12. sizes are capped before decompressing; only referenced samples are read
@pytest.mark.parametrize("compression,why", [(zipfile.ZIP_DEFLATED, "over the limit"),
                                             (zipfile.ZIP_BZIP2, "compressed in a way"),
                                             (zipfile.ZIP_LZMA, "compressed in a way")])
def test_a_sidecar_bomb_is_refused_before_decompressing(tmp_path, compression, why):
    path = saved(tmp_path)
    bomb(path, 10**12, compression=compression)
    assert os.path.getsize(store.sidecar(path)) < 2_000_000
    tracemalloc.start()
    try:
        s = store.Samples(path, store.load(path))
        np.testing.assert_array_equal(s["s1_a0"], np.ones(3))  # the other members are still readable
        with pytest.raises(ProfileError, match=why):
            s.get("s1_a1")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000  # zipfile expands a whole bzip2 member on its first read: 200 MB here


def test_a_header_that_understates_its_data_reads_only_what_it_declares(tmp_path):
    path = saved(tmp_path)
    bomb(path, 3, compression=zipfile.ZIP_DEFLATED)
    with zipfile.ZipFile(store.sidecar(path), "a", compression=zipfile.ZIP_DEFLATED) as z:
        with z.open("s1_a2.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(f, np.lib.format.header_data_from_array_1_0(np.ones(3)))
            for _ in range(100):
                f.write(b"\0" * 1_000_000)
    tracemalloc.start()
    try:
        np.testing.assert_array_equal(store.Samples(path, store.load(path))["s1_a2"], np.zeros(3))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000


def test_all_reads_together_stay_within_the_cap(tmp_path):
    path = saved(tmp_path)
    bomb(path, 200_000)  # 1.6 MB, under a 2 MB cap on its own; s1_a0 was read first
    s = store.Samples(path, store.load(path), limit=1_600_010)
    s.get("s1_a0")
    with pytest.raises(ProfileError, match="over the limit"):
        s.get("s1_a1")


def test_export_reads_only_the_samples_it_writes(tmp_path, monkeypatch):
    sigs = [stats(1, "numpy.cumsum(f64[1d])", sample={"args": [{"array": "s1_a0"}], "kwargs": {}}),
            stats(2, "numpy.diff(f64[1d])", derived=0.0001, primal=0.0001,  # nothing to gain: not exported
                  sample={"args": [{"array": "s2_a0"}], "kwargs": {}})]
    path = write(tmp_path / "p.json", document(sigs, total=0.2))
    with zipfile.ZipFile(store.sidecar(path), "w") as z:
        with z.open("s1_a0.npy", "w") as f:
            np.lib.format.write_array(f, np.ones(4))
        z.writestr("s2_a0.npy", b"not an array at all")
    read = []
    real = store.Samples._array
    monkeypatch.setattr(store.Samples, "_array", lambda self, key: read.append(key) or real(self, key))
    res = CliRunner().invoke(cli, ["export", path, "-o", str(tmp_path / "rules.py")])
    assert res.exit_code == 0, res.output
    assert read == ["s1_a0"]


# 13. a total sample budget, documented and configurable
def test_samples_stop_at_the_total_budget(tmp_path):
    data, _ = profile_program(script("known_calls.py"), [], output=str(tmp_path / "p.json"), replays=False,
                              sample_budget=100)
    assert all(s.sample is None for s in data.signatures)
    data, _ = profile_program(script("known_calls.py"), [], output=str(tmp_path / "q.json"), replays=False, force=True)
    assert any(s.sample is not None for s in data.signatures)


def test_the_sample_budget_is_an_option_and_replays_say_why_they_are_missing(tmp_path):
    res = run_adcli("profile", "--sample-budget", "0", "-o", "p.json", script("known_calls.py"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    p = store.load(str(tmp_path / "p.json"))
    assert not os.path.exists(tmp_path / "p.npz") or store.load_samples(str(tmp_path / "p.json"), p) == {}
    assert all("budget" in s.replay.error for s in p.signatures if s.replay is not None)
    res = run_adcli("suggest", "--all", "p.json", cwd=tmp_path)
    assert "sample budget" in res.stdout
    res = run_adcli("profile", "--sample-budget", "lots", "-o", "q.json", script("known_calls.py"), cwd=tmp_path)
    assert res.returncode == 2 and "is not a size" in res.stderr and not (tmp_path / "q.json").exists()


@pytest.mark.parametrize("text,size", [("100MB", 10**8), ("1.5 GB", 15 * 10**8), ("512kB", 512_000), ("2GiB", 2 * 2**30),
                                       ("0", 0), ("17", 17), ("3 KiB", 3072)])
def test_sizes_are_read_as_printed(text, size):
    assert parse_bytes(text) == size


@pytest.mark.parametrize("text", ["", "x", "-1MB", "1e3", "nan", "1 PB", "9" * 400])
def test_sizes_that_are_not_sizes_are_refused(text):
    with pytest.raises(ValueError):
        parse_bytes(text)


# 14. a sidecar that is not a regular file never blocks
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_sidecar_does_not_hang(tmp_path):
    path = saved(tmp_path)
    os.unlink(store.sidecar(path))
    os.mkfifo(store.sidecar(path))
    with pytest.raises(ProfileError, match="regular file"):
        store.Samples(path, store.load(path))
    res = run_adcli("export", path, "-o", "rules.py", cwd=tmp_path, timeout=60)
    assert res.returncode == 2 and "regular file" in res.stderr


def test_a_fifo_profile_does_not_hang(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this system")
    os.mkfifo(tmp_path / "p.json")
    with pytest.raises(ProfileError, match="regular file"):
        store.load(str(tmp_path / "p.json"))
