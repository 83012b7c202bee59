"""Issue "A profile is data", items 12-14 (resources): reading a sample file allocates at most
what its cap allows and never blocks; the samples a run keeps have a total budget."""

from __future__ import annotations

import json
import os
import re
import tracemalloc
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner

from adcli.cli import cli
from adcli.data import store
from adcli.data.schema import ProfileError
from adcli.profiler.api import profile_program
from adcli.units import parse_bytes
from tests.support.profiles import ROOT, document, run_adcli, saved, script, stats, write


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


# --- deep, wide and oversized profiles ---------------------------------------------------------


def chain_document(depth: int, distinct: bool) -> dict:
    """An honest deep profile: a recursion ``depth`` deep of one function (``distinct``: a chain
    of ``depth`` different functions), each call nested in the one before."""
    count = depth if distinct else 1
    sigs = [stats(i + 1, f"__main__.f{i}(f64[1d])", calls=depth if not distinct else 1, time=1.0 - i * 1e-5,
                  derived=0.01, primal=0.002) for i in range(count)]
    doc = document(sigs, total=1.0)
    doc["tree"] = [{"parent": None, "sig": 0, "calls": 0}] + [
        {"parent": i, "sig": i + 1 if distinct else 1, "calls": 1, "forward_s": (1.0 - i * 1e-5) / 2,
         "reverse_s": (1.0 - i * 1e-5) / 2, "self_forward_s": 1e-6, "self_reverse_s": 1e-6} for i in range(depth)]
    return doc


@pytest.mark.parametrize("depth,distinct", [(1500, False), (5000, True)])
def test_an_honest_deep_profile_loads_suggests_reports_and_exports(tmp_path, depth, distinct):
    path = write(tmp_path / "p.json", chain_document(depth, distinct))
    assert len(store.load(path).signatures) == (depth if distinct else 1)
    runner = CliRunner()
    for args in (["show", path], ["show", path, "--format", "markdown"], ["suggest", path, "--format", "json"],
                 ["report", path, "-o", str(tmp_path / "r.html")], ["export", path, "-o", str(tmp_path / "rules.py")],
                 ["show", path, "--speedscope", str(tmp_path / "s.json")]):
        res = runner.invoke(cli, args)
        assert res.exit_code == 0, (args, res.output[-2000:])
    rules = (tmp_path / "rules.py").read_text()
    assert re.search(r"@adcli\.rules\.rule\('__main__:f\d+', 'f64\[1d\]'\)", rules), rules[:2000]


def test_a_signature_nested_500_deep_is_one_line_and_status_2(tmp_path):
    deep = "numpy.kron(" + "tuple(" * 500 + "f64" + ")" * 500 + ")"
    path = write(tmp_path / "p.json", document([stats(1, deep)]))
    for command in (["show", path], ["suggest", path], ["export", path, "-o", str(tmp_path / "r.py")],
                    ["report", path, "-o", str(tmp_path / "r.html")], ["compare", path, path]):
        res = CliRunner().invoke(cli, command)
        assert res.exit_code == 2 and "more than 100 levels deep" in res.output, (command, res.output[-500:])
        assert len(res.output.strip().splitlines()) == 1
    res = run_adcli("show", path, cwd=tmp_path)
    assert res.returncode == 2 and "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_a_sample_nested_deeper_than_the_limit_is_refused(tmp_path):
    enc = {"value": 1.0}
    for _ in range(150):
        enc = {"list": [enc]}
    path = write(tmp_path / "p.json", document([stats(1, "numpy.sum(f64[1d])", sample={"args": [enc], "kwargs": {}})]))
    res = CliRunner().invoke(cli, ["show", path, "--format", "json"])
    assert res.exit_code == 2 and "is not an encoded value" in res.output


@pytest.mark.parametrize("where", ["time", "sample", "count"])
def test_a_400_digit_integer_is_a_one_line_error(tmp_path, where):
    doc = document([stats(1, "numpy.sum(f64[1d])", sample={"args": [{"value": 7}], "kwargs": {}})])
    text = json.dumps(doc).replace('"value": 7', '"value": ' + "9" * 400) if where == "sample" else None
    if where == "time":
        text = json.dumps(doc).replace('"forward_s": 0.05,', '"forward_s": ' + "9" * 400 + ",", 1)
    if where == "count":
        text = json.dumps(doc).replace('"gradients": 1', '"gradients": ' + "9" * 400)
    (tmp_path / "p.json").write_text(text)
    for command in (["show", "p.json"], ["suggest", "p.json"], ["export", "p.json", "-o", "r.py"]):
        res = run_adcli(*command, cwd=tmp_path)
        assert res.returncode == 2 and "400 digits" in res.stderr and "Traceback" not in res.stderr, res.stderr
    from adcli.data.model import Profile

    doc["totals"]["forward_s"] = 10**400  # Python data straight to the model: still a one-line error
    with pytest.raises(ProfileError, match="totals.forward_s"):
        Profile.from_json(doc)


@pytest.mark.parametrize("shape", [(-1,), (-1, -250_000_000)])
def test_a_negative_shape_in_a_sidecar_header_is_refused_before_any_allocation(tmp_path, shape):
    # (-1,) declares -8 bytes: read(-8) would expand the whole member (100 MB from 100 kB);
    # (-1, -250000000) multiplies out to 2 GB
    path = saved(tmp_path)
    header = np.lib.format.header_data_from_array_1_0(np.ones(1))
    header["shape"] = shape
    with zipfile.ZipFile(store.sidecar(path), "a", compression=zipfile.ZIP_DEFLATED) as z:
        with z.open("s1_a1.npy", "w") as f:
            np.lib.format.write_array_header_1_0(f, header)
            for _ in range(100):
                f.write(b"\0" * 1_000_000)
    assert os.path.getsize(store.sidecar(path)) < 1_000_000
    tracemalloc.start()
    try:
        with pytest.raises(ProfileError, match="shape"):
            store.Samples(path, store.load(path)).get("s1_a1")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000


def test_a_profile_over_the_size_limit_is_refused_before_parsing(tmp_path, monkeypatch):
    doc = document([stats(1, "numpy.sum(f64[1d])")], notes=["x" * 100])
    path = write(tmp_path / "p.json", doc)
    monkeypatch.setattr(store, "MAX_PROFILE_BYTES", os.path.getsize(path) - 1)
    parsed = []
    monkeypatch.setattr(store.json, "loads", lambda *a, **k: parsed.append(1))
    with pytest.raises(ProfileError, match="MiB, the most adcli reads"):
        store.load(path)
    monkeypatch.setattr(store, "MAX_PROFILE_BYTES", 10**9)
    monkeypatch.setattr(store, "MAX_JSON_VALUES", 10)
    with pytest.raises(ProfileError, match="JSON values"):
        store.load(path)
    assert not parsed


def test_the_documented_json_limit_is_the_one_enforced(tmp_path):
    # a real 40 MB file of empty lists (1 GB once parsed without the limit): refused at once
    (tmp_path / "p.json").write_text("[" + "[]," * (40 * 2**20 // 3) + "[]]")
    res = run_adcli("show", "p.json", cwd=tmp_path)
    assert res.returncode == 2 and "32 MiB" in res.stderr
    assert "32 MiB" in open(os.path.join(ROOT, "docs", "profile-format.md"), encoding="utf-8").read()


# --- suggest scales with the number of signatures (counted, never timed) -----------------------


class CountingChildren(dict):
    """A merged tree's children mapping that counts every child handed out by iteration."""

    visits = [0]

    def items(self):
        self.visits[0] += len(self)
        return super().items()

    def values(self):
        self.visits[0] += len(self)
        return super().values()

    def __iter__(self):
        self.visits[0] += len(self)
        return super().__iter__()


def _tree_visits(n: int, monkeypatch) -> int:
    from adcli.advisor import choose, suggest
    from adcli.data.model import Profile

    sigs = [stats(i + 1, f"m.f{i}(f64[1d])", calls=1, time=0.001, derived=0.01) for i in range(n)]
    profile = Profile.from_json(document(sigs, total=n * 0.001))
    real = choose.call_tree

    def counted(profiles):
        tree, stack = real(profiles), []
        stack.append(tree)
        while stack:
            node = stack.pop()
            node.children = CountingChildren(node.children)
            stack.extend(node.children.values())
        return tree

    monkeypatch.setattr(choose, "call_tree", counted)
    CountingChildren.visits[0] = 0
    suggest([profile])
    return CountingChildren.visits[0]


def test_suggest_walks_the_tree_a_fixed_number_of_times(monkeypatch):
    small, large = _tree_visits(1000, monkeypatch), _tree_visits(8000, monkeypatch)
    assert large <= 10 * small, (small, large)  # linear: 8x the signatures, 8x the visits (quadratic: 64x)
