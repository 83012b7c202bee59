"""adcli.app's one writer of a command's text output (app/output.py): refused before any work
over an input or, without --force, a file; written atomically; a file made meanwhile is kept."""

import os

import pytest

from adcli import app
from adcli.fileio import OutputError


def test_write_output_writes_and_never_replaces_a_file_without_force(tmp_path):
    out = tmp_path / "advice.md"
    app.write_output(str(out), "first\n")
    assert out.read_text() == "first\n"
    with pytest.raises(OutputError, match="was created while adcli ran.*--force"):
        app.write_output(str(out), "second\n")
    assert out.read_text() == "first\n"
    app.write_output(str(out), "second\n", force=True)
    assert out.read_text() == "second\n"
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".adcli-")]  # no temporary file left


def test_outputs_are_refused_over_the_profiles_a_command_reads(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("adcli-profile.json", "adcli-profile.npz", "p.json", "p.npz", "page.html"):
        (tmp_path / name).write_text("x")
    for out, profiles in [("adcli-profile.npz", ()), ("p.json", ("p.json",)), ("p.npz", ("p.json",))]:
        with pytest.raises(OutputError, match="it is an input of this command"):
            app.check_profiles_output(out, profiles, force=True)
    with pytest.raises(OutputError, match="page.html exists; pass --force"):
        app.check_profiles_output("page.html", ("p.json",), force=False)
    app.check_profiles_output("page.html", ("p.json",), force=True)
    with pytest.raises(OutputError, match="over the profile itself"):
        app.check_speedscope_target("p.json", "p.json", force=True)
    with pytest.raises(OutputError, match="it is an input of this command"):
        app.check_speedscope_target("p.npz", "p.json", force=True)
