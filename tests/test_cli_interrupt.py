"""Ctrl-C at any moment of a command exits 130 with one line on stderr, no traceback: while the
command line's modules load (most of its first second), while click parses the options, and
while the program runs. (The interpreter's own start, before any of adcli runs, is Python's.)"""

import os
import shutil
import signal
import subprocess
import sys
import time

import click
import pytest

from adcli import cli as cli_module

SLOW = """
import time
import numpy as np
import adcli


def f(x):
    return np.sum(x * x)


for _ in range(600):
    adcli.grad(f)(np.ones(3))
    time.sleep(0.05)
"""

CONSOLE_SCRIPT = shutil.which("adcli", path=os.path.dirname(sys.executable)) or shutil.which("adcli")


def _mapped(pid: int, name: str) -> bool:
    try:
        with open(f"/proc/{pid}/maps") as f:
            return name in f.read()
    except OSError:
        return False


def _interrupt(tmp_path, when) -> subprocess.CompletedProcess:
    """Run `adcli profile` of a slow program, send SIGINT once ``when(pid)`` holds."""
    (tmp_path / "slow.py").write_text(SLOW)
    proc = subprocess.Popen([CONSOLE_SCRIPT, "profile", "-o", str(tmp_path / "p.json"), "slow.py"], cwd=str(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not when(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc to see what the process has loaded")
def test_ctrl_c_while_the_command_line_loads(tmp_path):
    assert CONSOLE_SCRIPT, "the adcli console script is installed with the package"
    # NumPy's compiled core mapped: the interpreter is up and adcli's modules are loading
    res = _interrupt(tmp_path, lambda pid: _mapped(pid, "_multiarray_umath"))
    assert res.returncode == 130, res.stderr
    assert res.stderr.strip() == "adcli: interrupted" and "Traceback" not in res.stderr
    assert not (tmp_path / "p.json").exists()


def test_ctrl_c_while_the_program_runs_keeps_a_partial_profile(tmp_path):
    res = _interrupt(tmp_path, lambda pid, start=time.monotonic(): time.monotonic() - start > 4)
    assert res.returncode == 130, res.stderr
    assert "Traceback" not in res.stderr and "(partial)" in res.stderr


def test_ctrl_c_while_click_parses_the_options_exits_130(monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(click.Group, "make_context", interrupted)  # click would say "Aborted!", status 1
    monkeypatch.setattr(sys, "argv", ["adcli", "--version"])
    with pytest.raises(SystemExit) as exit_:
        cli_module.main()
    assert exit_.value.code == 130
    assert capsys.readouterr().err.strip() == "adcli: interrupted"


def test_the_console_scripts_statuses_pass_through_main(tmp_path):
    bad = subprocess.run([CONSOLE_SCRIPT, "compare", "a.json"], capture_output=True, text=True, cwd=str(tmp_path))
    assert bad.returncode == 2 and "Missing argument" in bad.stderr  # a usage error
    missing = subprocess.run([CONSOLE_SCRIPT, "show", "nothing.json"], capture_output=True, text=True, cwd=str(tmp_path))
    assert missing.returncode == 2 and missing.stderr.startswith("adcli: error:")
    ok = subprocess.run([CONSOLE_SCRIPT, "--version"], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.startswith("adcli, version")
