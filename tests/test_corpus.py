"""adcli corpus: programs profiled on a real Dask cluster of worker processes into a store; every
failure recorded with its reason and never stopping the run; resumable; the store written
program by program; the library tier over it, with corrupt profiles reported and skipped."""

import json
import os
import signal
import sys
import textwrap

import pytest
from click.testing import CliRunner

from adcli import app
from adcli.cli import cli
from adcli.corpus.programs import CorpusError, discover
from adcli.corpus.store import CorpusStore
from adcli.corpus.worker import classify
from adcli.render import render

OK = """
import numpy as np

import adcli


def f(x):
    return np.sum(np.kron(x, x)){extra}


if __name__ == "__main__":
    x = np.linspace(0.1, 1.0, 6)
    for _ in range(3):
        adcli.grad(f)(x)
"""
PROGRAMS = {
    "kron.py": OK.format(extra=""),
    "kron_trace.py": OK.format(extra=" + np.trace(np.outer(x, x))"),
    "hangs.py": "import time\n\nimport adcli\n\nwhile True:\n    time.sleep(0.5)\n",
    "no_gradient.py": "import adcli\n\nprint(adcli.__name__)\n",
    "crashes.py": "import adcli\n\nraise ValueError('planted')\n",
    "too_big.py": "import numpy as np\n\nimport adcli\n\nx = np.ones(400_000_000)\n",  # 3.2 GB, over its 2 GiB limit
    "test_skipped.py": "import adcli\n",  # a test file: not a program of the folder
    "helper.py": "print('does not import the engine')\n",  # no adcli import: not a program of the folder
}
EXPECTED = {"kron.py": "ok", "kron_trace.py": "ok", "hangs.py": "timeout", "no_gradient.py": "no gradient",
            "crashes.py": "crash", "too_big.py": "memory"}


def _corpus(folder):
    folder.mkdir(exist_ok=True)
    for name, text in PROGRAMS.items():
        (folder / name).write_text(textwrap.dedent(text))
    return folder


def _statuses(store):
    with CorpusStore(str(store), create=False, read_only=True) as db:
        rows = db.db.execute("SELECT program, status, reason FROM programs").fetchall()
    return {os.path.basename(p): (s, r) for p, s, r in rows}


def _run(folder, store, **kw):
    kw = {"timeout_s": 15.0, "memory_bytes": 2 << 30, "replay_budget": "1", **kw}
    return app.corpus_run([str(folder)], [], str(store), **kw)


def test_a_folder_names_its_programs_a_script_or_module_itself_and_nothing_is_a_clear_error(tmp_path):
    folder = _corpus(tmp_path / "progs")
    found = discover([str(folder)], [])
    assert sorted(os.path.basename(p.target) for p in found) == sorted(EXPECTED)
    [one] = discover([str(folder / "helper.py")], [])  # named on its own: a program whatever it imports
    assert one.kind == "script" and one.cwd == str(folder)
    [mod] = discover([], ["json.tool"])
    assert mod.kind == "module" and mod.source.endswith("tool.py")
    key = found[0].key("1", ())
    assert key == found[0].key("1", ()) and key != found[0].key("2", ()) and key != found[0].key("1", (1,))
    (tmp_path / "empty").mkdir()
    for bad, message in (([str(tmp_path / "missing.py")], "no script or folder"), ([str(tmp_path / "empty")], "no programs")):
        with pytest.raises(CorpusError, match=message):
            discover(bad, [])
    with pytest.raises(CorpusError, match="no module"):
        discover([], ["no_such_module_here"])


@pytest.mark.parametrize("returncode, stderr, status", [
    (0, "", "ok"),
    (1, "adcli: x.py took no gradient through adcli (adcli.grad / adcli.value_and_grad): nothing to profile",
     "no gradient"),
    (1, "Traceback ...\nMemoryError\nadcli: x.py raised before its first gradient (MemoryError): nothing to profile",
     "memory"),
    (-signal.SIGKILL, "", "memory"),
    (1, "adcli: error: UnsupportedError: np.frompyfunc of a traced value", "refused"),
    (1, "Traceback ...\nValueError: planted", "crash"),
    (-signal.SIGTERM, "", "crash"),
])
def test_a_finished_program_is_classified_by_its_status_and_its_last_words(returncode, stderr, status):
    got, reason = classify(returncode, stderr, memory_limited=True)
    assert got == status and (status == "ok" or reason) and not reason.startswith("adcli:")


def test_a_corpus_run_on_a_local_cluster_stores_every_program_once_and_a_rerun_picks_up_what_changed(tmp_path):
    """Every failure is recorded with its reason and the run goes on; the profiles and their rows
    are stored; a rerun skips every program stored under the same key, runs one whose source
    changed, and ``retry_failed`` runs the failures again."""
    folder, store = _corpus(tmp_path / "progs"), tmp_path / "store"
    seen = []
    result = _run(folder, store, progress=lambda done, total, counts: seen.append((done, total, sum(counts.values()))))
    assert result.summary.programs == 6 and result.summary.skipped == 0 and result.summary.workers == 2
    assert seen[-1] == (6, 6, 6) and [d for d, _, _ in seen] == list(range(1, 7))
    statuses = _statuses(store)
    assert {k: s for k, (s, _) in statuses.items()} == EXPECTED
    assert "15 s" in statuses["hangs.py"][1] and "planted" in statuses["crashes.py"][1]
    with CorpusStore(str(store), create=False, read_only=True) as db:
        keys = [k for k, s in db.stored().items() if s == "ok"]
        assert all(os.path.getsize(db.profile_path(k)) > 0 for k in keys)
        sigs = db.db.execute("SELECT signature, programs FROM (SELECT signature, count(*) AS programs "
                             "FROM signatures WHERE kind = 'numpy' GROUP BY signature)").fetchall()
    assert ("numpy.kron(f64[1d], f64[1d])", 2) in sigs

    again = _run(folder, store)
    assert again.summary.skipped == 6 and again.summary.counts == {}
    (folder / "no_gradient.py").write_text(PROGRAMS["no_gradient.py"] + "print('changed')\n")
    changed = _run(folder, store)
    assert changed.summary.skipped == 5 and changed.summary.counts == {"no gradient": 1}
    (folder / "hangs.py").unlink()  # no longer named: left in the store as it was
    retried = _run(folder, store, retry_failed=True)
    assert retried.summary.skipped == 2 and retried.summary.counts == {"no gradient": 1, "crash": 1, "memory": 1}
    with CorpusStore(str(store), create=False, read_only=True) as db:  # one version of each program, none twice
        assert db.db.execute("SELECT count(*), count(DISTINCT program) FROM programs").fetchone() == (6, 6)
        assert len(os.listdir(os.path.join(str(store), "profiles"))) == 4  # two ok programs: .json and .npz


def test_a_program_is_stored_whole_or_not_at_all(tmp_path, monkeypatch):
    """A failure while its rows are written (a killed run) leaves no row of it: it is run again."""
    folder, store = _corpus(tmp_path / "progs"), tmp_path / "store"
    (folder / "hangs.py").unlink()
    real = CorpusStore.record

    def failing(self, program, key, outcome, version):
        if program.name.endswith("kron_trace.py"):
            self.db = _Killed(self.db)  # killed between its program row and its signature rows
        return real(self, program, key, outcome, version)

    monkeypatch.setattr(CorpusStore, "record", failing)
    with pytest.raises(RuntimeError, match="killed"):
        _run(folder, store)
    monkeypatch.undo()
    assert "kron_trace.py" not in _statuses(store)
    rerun = _run(folder, store)
    assert "kron_trace.py" in _statuses(store) and rerun.summary.counts.get("ok", 0) >= 1


class _Killed:
    """A connection whose many-row insert fails, everything else passed through."""

    def __init__(self, db):
        self._db = db

    def executemany(self, *args, **kwargs):
        raise RuntimeError("killed while writing its rows")

    def __getattr__(self, name):
        return getattr(self._db, name)


def test_a_worker_killed_mid_run_loses_no_program_and_stores_none_twice(tmp_path):
    """On a cluster of its own (``scheduler``): one worker process killed while it runs a program;
    the scheduler runs that program again on another worker; every program is stored once."""
    from distributed import Client, LocalCluster

    folder = tmp_path / "slow"
    folder.mkdir()
    for k in range(4):
        (folder / f"slow{k}.py").write_text(OK.format(extra="") + "\n    import time\n    time.sleep(2)\n")
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, memory_limit=0)
    client = Client(cluster)
    try:
        pids = client.run(os.getpid)
        killed = []

        def progress(done, total, counts):
            if not killed:  # the other worker is busy with its second program by now
                victim = next(iter(pids.values()))
                os.kill(victim, signal.SIGKILL)
                killed.append(victim)

        result = app.corpus_run([str(folder)], [], str(tmp_path / "store"), scheduler=cluster.scheduler_address,
                                replay_budget="1", timeout_s=60.0, progress=progress)
    finally:
        client.close()
        cluster.close()
    assert killed and result.summary.counts == {"ok": 4}, result.summary
    assert sorted(_statuses(tmp_path / "store")) == [f"slow{k}.py" for k in range(4)]


def test_corpus_suggest_is_the_library_tier_and_a_corrupt_profile_is_reported_and_skipped(tmp_path):
    folder, store = _corpus(tmp_path / "progs"), tmp_path / "store"
    for name in ("hangs.py", "too_big.py"):
        (folder / name).unlink()
    _run(folder, store)
    runner = CliRunner()
    res = runner.invoke(cli, ["corpus", "suggest", "--store", str(store), "--format", "json"])
    assert res.exit_code == 0, res.output
    advice = json.loads(res.output)
    assert advice["programs"] == 4 and advice["profiles"] == 2 and not advice["corrupt"]
    [kron] = [r for r in advice["rows"] if r["signature"] == "numpy.kron(f64[1d], f64[1d])"]
    assert kron["programs"] == 2 and 0 < kron["median_share"] <= kron["max_share"] <= 1
    assert kron["action"] in ("import", "hand-write", "keep-derived") and kron["reason"]
    md = runner.invoke(cli, ["corpus", "suggest", "--store", str(store), "--format", "markdown"]).output
    assert "| `numpy.kron(f64[1d], f64[1d])` | 2 |" in md
    picked = [r for r in advice["rows"] if r["action"] != "keep-derived"]
    out = tmp_path / "shipped.py"
    res = runner.invoke(cli, ["corpus", "export", "--store", str(store), "-o", str(out)])
    assert res.exit_code == 0, res.output
    if picked:  # the module names each rule the advice picks, with its test
        text = out.read_text()
        for r in picked:
            assert f"{r['action']}: {r['signature']}" in text
        again = runner.invoke(cli, ["corpus", "export", "--store", str(store), "-o", str(out)])
        assert again.exit_code == 2 and "--force" in again.output  # never over a file without --force
    else:
        assert "nothing written" in res.output and not out.exists()

    with CorpusStore(str(store), create=False, read_only=True) as db:
        victim = next(k for k, s in db.stored().items() if s == "ok")
        path = db.profile_path(victim)
    with open(path, "w") as f:
        f.write('{"schema": "adcli-profile", "version": 2, "signatures": [\x1b[31m')
    res = runner.invoke(cli, ["corpus", "suggest", "--store", str(store)])
    assert res.exit_code == 0 and "1 stored profiles skipped (not valid)" in res.output
    assert "\x1b" not in res.output and "1 profiles read" in res.output


def test_bad_stores_and_targets_are_one_line_errors(tmp_path):
    runner = CliRunner()
    res = runner.invoke(cli, ["corpus", "suggest", "--store", str(tmp_path / "none")])
    assert res.exit_code == 2 and res.output.count("\n") == 1 and "no corpus store" in res.output
    res = runner.invoke(cli, ["corpus", "run", str(tmp_path / "missing.py"), "--store", str(tmp_path / "s")])
    assert res.exit_code == 2 and "no script or folder" in res.output
    (tmp_path / "file").write_text("x")
    res = runner.invoke(cli, ["corpus", "run", str(tmp_path), "--store", str(tmp_path / "file")])
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output


def test_ctrl_c_stops_the_run_keeps_what_is_stored_and_leaves_no_program_running(tmp_path):
    import subprocess
    import time

    folder = tmp_path / "progs"
    folder.mkdir()
    (folder / "kron.py").write_text(OK.format(extra=""))
    marker = tmp_path / "still-running"
    (folder / "hangs.py").write_text(f"import time\n\nimport adcli\n\nwhile True:\n    open({str(marker)!r}, 'w').close()\n"
                                     "    time.sleep(0.2)\n")
    store = tmp_path / "store"
    proc = subprocess.Popen([sys.executable, "-m", "adcli", "corpus", "run", str(folder), "--store", str(store),
                             "--replay-budget", "1", "--timeout", "120"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (list((store / "profiles").glob("*.json")) if store.exists() else []):
        time.sleep(0.2)
    time.sleep(1.0)  # its rows too
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "interrupted" in out and "ok 1" in out
    time.sleep(1.0)
    marker.unlink()
    time.sleep(1.0)
    assert not marker.exists()  # the hanging program was killed with its worker
    res = CliRunner().invoke(cli, ["corpus", "run", str(folder / "kron.py"), "--store", str(store), "--replay-budget", "1"])
    assert res.exit_code == 0 and "1 stored before, skipped" in res.output, res.output


def test_a_program_is_run_again_when_a_file_it_read_or_its_rules_module_changes(tmp_path):
    """Its inputs (a module it imports, a data file it loads) are stored with it; a rerun skips
    it while they are as they were (a file touched but not changed too), runs it again when one
    changes, and when the rules module it was profiled with changes."""
    folder = tmp_path / "progs"
    folder.mkdir()
    (folder / "shapes.py").write_text("N = 6\n")  # imports no adcli: not a program, an input
    (folder / "scale.txt").write_text("1.0\n")
    (folder / "kron.py").write_text(OK.format(extra="").replace(
        "x = np.linspace(0.1, 1.0, 6)", "from shapes import N\n    x = np.linspace(0.1, 1.0, N) * np.loadtxt('scale.txt')"))
    rules = tmp_path / "rules.py"
    rules.write_text("import adcli.rules  # declares nothing yet\n")
    store = tmp_path / "store"
    first = _run(folder, store, rules=(str(rules),))
    assert first.summary.counts == {"ok": 1}
    with CorpusStore(str(store), create=False, read_only=True) as db:
        [rows] = db.inputs().values()
    read = {os.path.basename(path) for path, *_ in rows}
    assert {"kron.py", "shapes.py", "scale.txt", "rules.py"} <= read
    assert not any("site-packages" in path or path.endswith(".pyc") for path, *_ in rows)
    assert _run(folder, store, rules=(str(rules),)).summary.skipped == 1
    os.utime(folder / "scale.txt", ns=(1, 1))  # touched, the same content
    assert _run(folder, store, rules=(str(rules),)).summary.skipped == 1
    (folder / "shapes.py").write_text("N = 7\n")
    changed = _run(folder, store, rules=(str(rules),))
    assert (changed.summary.skipped, changed.summary.changed, changed.summary.counts) == (0, 1, {"ok": 1})
    assert "run again" in render(changed, "table")
    rules.write_text("import adcli.rules  # declares nothing, but another module\n")
    assert _run(folder, store, rules=(str(rules),)).summary.counts == {"ok": 1}
    with pytest.raises(CorpusError, match="no rules module"):
        _run(folder, store, rules=(str(tmp_path / "missing.py"),))


def test_stored_inputs_are_compared_by_size_and_time_then_content_and_only_regular_files_are_read(tmp_path):
    """A crafted store naming a FIFO or a device is not read (it would block or never end): such
    an input counts as changed, as does a missing one."""
    from adcli.corpus.inputs import Inputs, fingerprint

    data = tmp_path / "data.txt"
    data.write_text("abc")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    [row] = fingerprint([str(data), str(fifo), str(tmp_path / "missing"), "/dev/zero"])
    assert row[0] == str(data) and row[1] == 3 and len(row[3]) == 64
    look = Inputs()
    assert look.changed([row]) is None
    os.utime(data, ns=(5, 5))
    assert Inputs().changed([row]) is None  # another time, the same content
    data.write_text("abd")
    os.utime(data, ns=(row[2], row[2]))
    assert Inputs().changed([row]) is None  # same size and time: taken as unchanged, as git's index does
    data.write_text("abcd")
    assert Inputs().changed([row]) == str(data)
    for path in (str(fifo), "/dev/zero", str(tmp_path / "missing")):
        assert Inputs().changed([(path, 0, 0, "0" * 64)]) == path


SUITE = """
import numpy as np

import adcli


def test_takes_a_gradient():
    g = adcli.grad(lambda x: np.sum(np.kron(x, x)))(np.linspace(0.1, 1.0, 5))
    assert g.shape == (5,)


def test_takes_none():
    assert 1 + 1 == 2


def test_fails_after_its_gradient():
    adcli.grad(lambda x: np.sum(x * x))(np.ones(3))
    assert False, "planted"
"""


def test_a_projects_tests_are_programs_one_per_test(tmp_path, monkeypatch):
    """--tests: each test pytest collects is a program, run under the profiler on its own; one
    that takes no gradient is recorded as such, one that fails after its gradient keeps its profile."""
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "test_model.py").write_text(SUITE)
    monkeypatch.chdir(tmp_path)
    found = discover([], [], ["suite"])
    assert [p.target for p in found] == [f"suite/test_model.py::{n}" for n in
                                        ("test_takes_a_gradient", "test_takes_none", "test_fails_after_its_gradient")]
    result = app.corpus_run([], [], str(tmp_path / "store"), tests=("suite",), replay_budget="1", timeout_s=60.0)
    assert result.summary.counts == {"ok": 1, "no gradient": 1, "crash": 1}, result.summary
    statuses = _statuses(tmp_path / "store")
    assert "profiled up to there" in statuses["test_model.py::test_fails_after_its_gradient"][1]
    with pytest.raises(CorpusError, match="no test file or folder"):
        discover([], [], ["missing_tests"])


def test_a_crafted_index_cannot_name_a_file_outside_the_store(tmp_path):
    """The store is data: a program row whose key is a path is reported as not valid, and
    storing another version of that program deletes nothing outside the store."""
    store = tmp_path / "store"
    outside = tmp_path / "precious.json"
    outside.write_text("{}")
    with CorpusStore(str(store)) as db:
        db.db.execute("INSERT INTO programs VALUES ('../../precious', 'prog.py', 'script', 'ok', '', 1.0, 1.0, 0, "
                      "NULL, '0', NULL)")
        good, bad = db.load_profiles()
        assert not good and bad and "not a key" in bad[0][1]
        from adcli.corpus.programs import Program
        db.record(Program("prog.py", "script", str(tmp_path / "prog.py"), str(tmp_path), str(tmp_path / "prog.py")),
                  "0" * 32, {"status": "no gradient", "reason": "", "wall_s": 0.1, "profile": None, "samples": None}, "0")
    assert outside.exists()
