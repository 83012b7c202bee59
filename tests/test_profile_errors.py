"""Issue "A profile is data", items 19-24: bad input of every kind (a profile, its samples, a
script, an output path, the configuration) is one line and exit status 2, never a traceback,
and a finished run is never lost."""

from __future__ import annotations

import ast
import errno
import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from adcli.advisor import Thresholds
from adcli.advisor.config import ThresholdError, thresholds
from adcli.cli import cli
from adcli.data import store
from adcli.data.samples import decode
from adcli.data.schema import ProfileError
from adcli.fileio import OutputError
from adcli.profiler import api
from adcli.profiler.api import ProfileSavedElsewhere, profile_program
from tests.support.profiles import document, run_adcli, saved, script, stats, trial, write

COMMANDS = (["show"], ["show", "--format", "markdown"], ["show", "--format", "json"], ["suggest", "--all"],
            ["suggest", "--format", "json"], ["compare"], ["export", "-o", "rules.py", "--force"])


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


def every_command(path: str, folder) -> list:
    """Each reader on ``path``: (command, exit status, output)."""
    out = []
    for cmd in COMMANDS:
        args = [*cmd, path, path] if cmd == ["compare"] else [cmd[0], path, *cmd[1:]]
        if cmd[0] == "export":
            args = ["export", path, "-o", str(folder / "rules.py"), "--force"]
        res = invoke(*args)
        out.append((cmd[0], res.exit_code, res.output))
    return out


def one_line_error(res_output: str) -> bool:
    lines = [l for l in res_output.splitlines() if l.strip()]
    return len(lines) == 1 and lines[0].startswith("adcli: error:") and "Traceback" not in res_output


# --- 19. malformed JSON and sample files -------------------------------------------------------


def test_huge_integers_in_the_json_are_one_error(tmp_path):
    doc = json.dumps(document([stats(1, "numpy.sum(f64[1d])")])).replace('"calls": 10', '"calls": ' + "9" * 5000, 1)
    path = tmp_path / "p.json"
    path.write_text(doc)
    with pytest.raises(ProfileError):
        store.load(str(path))
    assert one_line_error(invoke("show", str(path)).output)


@pytest.mark.parametrize("content", [b"PK\x03\x04 not really a zip", np.lib.format.MAGIC_PREFIX + b"\x01\x00",
                                     b"\x00" * 100])
def test_a_corrupt_or_plain_npy_sidecar_is_one_error(tmp_path, content):
    path = saved(tmp_path)
    with open(store.sidecar(path), "wb") as f:
        f.write(content)
    with pytest.raises(ProfileError):
        store.Samples(path, store.load(path))
    res = invoke("export", path, "-o", str(tmp_path / "rules.py"))
    assert res.exit_code == 2 and one_line_error(res.output), res.output


def test_corrupt_compressed_data_is_one_error(tmp_path):
    path = saved(tmp_path)
    raw = bytearray(open(store.sidecar(path), "rb").read())
    at = raw.index(b"s1_a0.npy") + len(b"s1_a0.npy") + 8  # inside the member's deflate stream
    raw[at:at + 16] = b"\xff" * 16
    open(store.sidecar(path), "wb").write(bytes(raw))
    with pytest.raises(ProfileError):
        store.load_samples(path, store.load(path))


@pytest.mark.parametrize("sample", [
    {"args": {"a": 1}, "kwargs": {}},  # args not a list
    {"args": [], "kwargs": [["x", 1]]},  # kwargs not an object
    {"args": [{"value": 1, "dtype": "float128"}], "kwargs": {}},  # a dtype encode never writes
    {"args": [{"value": 1, "dtype": "O"}], "kwargs": {}},
    {"args": [{"array": 5}], "kwargs": {}},
    {"args": [{"list": {"a": 1}}], "kwargs": {}},
    {"args": [[1]], "kwargs": {}},
    {"args": [{"dict": {"x": {"value": [1]}}}], "kwargs": {}},
    "x",
])
def test_malformed_samples_are_refused_on_load(tmp_path, sample):
    path = write(tmp_path / "p.json", document([stats(1, "numpy.cumsum(f64[1d])", sample=sample)]))
    with pytest.raises(ProfileError, match="sample"):
        store.load(path)
    for cmd, status, output in every_command(path, tmp_path):
        assert status == 2 and one_line_error(output), (cmd, output)


@pytest.mark.parametrize("entry", [{"value": 300, "dtype": "int8"}, {"value": 1e308, "dtype": "float16"},
                                   {"value": 2**70, "dtype": "uint64"}, {"value": 1.5, "dtype": "int64"},
                                   {"value": None, "dtype": "float64"}, {"value": "x", "dtype": "float64"}])
def test_values_their_dtype_cannot_hold_are_missing_not_changed(entry):
    assert decode(entry, {}, missing="missing") == "missing"


def test_a_sample_that_overflows_leaves_export_a_todo(tmp_path):
    sample = {"args": [{"array": "s1_a0"}, {"value": 300, "dtype": "int8"}], "kwargs": {}}
    path = write(tmp_path / "p.json", document([stats(1, "__main__.f(f64[1d], i8)", sample=sample, derived=0.05,
                                                      primal=0.0001)], total=0.5))
    res = invoke("export", path, "-o", str(tmp_path / "rules.py"))
    assert res.exit_code == 0, res.output
    ast.parse((tmp_path / "rules.py").read_text())


# --- 20. what passes validation, every reader can use ------------------------------------------


def base(**kw):
    return stats(1, "numpy.cumsum(f64[1d])", **kw)


VALID_BUT_ODD = {
    "zero gradient time": document([base()], total=0.0),
    "all zero": document([base(time=0.0, derived=0.0, primal=0.0)], total=0.0),
    "zero calls": document([base(calls=0)]),
    "an import timed at zero": document([base(imports=[trial("autograd.numpy.cumsum", rule_s=0.0)])]),
    "a primal of zero": document([base(primal=0.0)]),
}
INVALID = {
    "Infinity in allocations": (document([base(allocs=(1, float("inf")))]), "allocs"),
    "a null derived_s": (None, "derived_s"),
    "a string calls": (None, "calls"),
    "a negative calls": (None, "calls"),
    "NaN time": (document([base(time=float("nan"))]), "forward_s"),
    "a time of 1e308 s": (document([base(time=1e308)], total=1.0), "forward_s"),
    "a count of 2**64": (None, "primitives"),
}


def _invalid(name):
    doc, field = INVALID[name]
    if doc is None:
        doc = document([base()])
        s = doc["signatures"][0]
        {"a null derived_s": lambda: s["replay"].update(derived_s=None), "a string calls": lambda: s.update(calls="10"),
         "a negative calls": lambda: s.update(calls=-3), "a count of 2**64": lambda: s.update(primitives=2**64)}[name]()
    return doc, field


@pytest.mark.parametrize("name", sorted(VALID_BUT_ODD))
def test_valid_but_odd_profiles_never_crash_a_reader(tmp_path, name):
    path = write(tmp_path / "p.json", VALID_BUT_ODD[name])
    for cmd, status, output in every_command(path, tmp_path):
        assert "Traceback" not in output and status in (0, 2), (cmd, status, output)
        assert status == 0 or one_line_error(output), (cmd, output)
        assert " nan" not in output.lower() and " inf" not in output.lower(), (cmd, output)


@pytest.mark.parametrize("name", sorted(INVALID))
def test_what_a_reader_cannot_use_is_refused_on_load(tmp_path, name):
    doc, field = _invalid(name)
    path = write(tmp_path / "p.json", doc)
    for cmd, status, output in every_command(path, tmp_path):
        assert status == 2 and one_line_error(output) and field in output, (cmd, output)


def test_no_advice_from_no_gradient_time(tmp_path):
    path = write(tmp_path / "p.json", VALID_BUT_ODD["zero gradient time"])
    res = invoke("suggest", path)
    assert res.exit_code == 2 and "no gradient time" in res.output


# --- 21. export writes a valid module for any signature a profile can hold --------------------


@pytest.mark.parametrize("signature", [
    "__main__.f(f64[1d], a0=f64[1d])", "__main__.f(f64[1d], class=f64[1d])", "__main__.f(f64[1d], def=f64, lambda=f64)",
    "__main__.class(f64[1d])", "__main__.None(f64[1d])", "__main__.f_rule(f64[1d])", "__main__:Model.loss(f64[1d])",
    "numpy.linalg.norm(f64[1d], ord=int)",
])
def test_export_writes_a_valid_module_for_odd_names(tmp_path, signature):
    path = write(tmp_path / "p.json", document([stats(1, signature, derived=0.05, primal=0.0001)], total=0.5))
    res = invoke("export", path, "-o", str(tmp_path / "rules.py"))
    assert res.exit_code == 0, res.output
    tree = ast.parse((tmp_path / "rules.py").read_text())
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        names = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
        assert len(names) == len(set(names)), ast.dump(fn.args)
    compile((tmp_path / "rules.py").read_text(), "rules.py", "exec")


@pytest.mark.parametrize("signature", [
    "__main__.f(f64[1d], x=f64, x=f64)", "__main__.f(f64[1d], x\x00=f64)", "__main__.f(f64[1d])\nimport os",
    "__main__.f", "__main__.f(\ud800)", "__main__.f(f64[1d], **kw)", "__main__.f(f64[1d], a0_=f64, a0=f64)",
])
def test_signatures_export_could_not_write_are_refused_on_load(tmp_path, signature):
    path = write(tmp_path / "p.json", document([stats(1, signature, derived=0.05, primal=0.0001)], total=0.5))
    res = invoke("export", path, "-o", str(tmp_path / "rules.py"))
    assert res.exit_code == 2 and one_line_error(res.output) and "signature" in res.output, res.output
    assert not (tmp_path / "rules.py").exists()


# --- 22. check --script on a script that cannot load ------------------------------------------


@pytest.mark.parametrize("text,fragment", [("def f(:\n", "cannot be compiled"), ("x = 1\0\n", "cannot be compiled"),
                                           ("raise ValueError('top')\n", "ValueError: top"),
                                           # (a bare top-level call is the script's work: not run; a
                                           # block that may define names is)
                                           ("import sys\nif len(sys.argv) < 99:\n    sys.exit(3)\n", "sys.exit(3)")])
def test_check_reports_a_script_that_cannot_load_in_one_line(tmp_path, text, fragment):
    bad = tmp_path / "bad.py"
    bad.write_bytes(text.encode())
    (tmp_path / "rules.py").write_text("import adcli.rules\n")
    res = invoke("check", str(tmp_path / "rules.py"), "--script", str(bad))
    assert res.exit_code == 2, (text, res.output)
    assert fragment in res.output and one_line_error(res.output), res.output


# --- 23. outputs that cannot work fail before the run; a finished run is never lost -----------


@pytest.mark.parametrize("output", ["", "dir/", "file/x.json", "dangling.json", "sidecar_is_a_folder.json"])
def test_impossible_outputs_fail_before_running(tmp_path, output, capsys):
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x")
    (tmp_path / "sidecar_is_a_folder.npz").mkdir()
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling.json")
    with pytest.raises(OutputError):
        profile_program(script("argv.py"), [], output=str(tmp_path / output) if output else "", replays=False)
    assert "ARGV" not in capsys.readouterr().out


def test_impossible_outputs_are_one_line_from_the_command_line(tmp_path):
    (tmp_path / "dir").mkdir()
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling.json")
    path = saved(tmp_path)
    for args in (["profile", "-o", "", script("argv.py")], ["profile", "-o", "dir/", script("argv.py")],
                 ["export", path, "-o", ""], ["export", path, "-o", "dir/"],
                 ["show", path, "--speedscope", "dangling.json"], ["show", path, "--speedscope", ""]):
        res = run_adcli(*args, cwd=tmp_path)
        assert res.returncode == 2 and one_line_error(res.stderr) and "ARGV" not in res.stdout, (args, res.stderr)
    assert not os.path.exists(tmp_path / "nowhere")


def test_a_run_that_cannot_be_saved_where_asked_is_saved_elsewhere(tmp_path, monkeypatch):
    real = store.save
    out = str(tmp_path / "p.json")

    def disk_full(profile, path, samples, force=True):
        if path == out:
            raise OutputError(f"cannot write {path}: {os.strerror(errno.ENOSPC)}")
        real(profile, path, samples, force)

    monkeypatch.setattr(api, "save", disk_full)
    with pytest.raises(ProfileSavedElsewhere) as info:
        profile_program(script("known_calls.py"), [], output=out, replays=False)
    where = info.value.where
    try:
        assert "No space left" in str(info.value) and where in str(info.value)
        assert store.load(where).signatures and store.load_samples(where, store.load(where))
        assert not os.path.exists(out)
    finally:
        for p in (where, store.sidecar(where)):
            if os.path.exists(p):
                os.unlink(p)


# --- 24. configuration ---------------------------------------------------------------------------


@pytest.mark.parametrize("text,fragment", [("[tool]\n", None), ("tool = 5\n", "[tool] must be a table"),
                                           (b"[tool.adcli]\nx = '\xff'\n", "cannot read"),
                                           ("[tool.adcli]\nhandwrite_burden = nan\n", "finite"),
                                           ("[tool.adcli]\nimport_burden = inf\n", "finite")])
def test_bad_configuration_is_one_error(tmp_path, text, fragment):
    (tmp_path / "pyproject.toml").write_bytes(text if isinstance(text, bytes) else text.encode())
    if fragment is None:
        assert thresholds({}, str(tmp_path)) == Thresholds()
        return
    with pytest.raises(ThresholdError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        thresholds({}, str(tmp_path))


@pytest.mark.parametrize("option", ["--import-burden", "--handwrite-burden", "--fallback-factor"])
def test_nan_on_the_command_line_is_refused(tmp_path, option):
    path = saved(tmp_path)
    res = invoke("suggest", path, option, "nan")
    assert res.exit_code == 2 and "finite" in res.output and one_line_error(res.output), res.output
