"""One program of a corpus, profiled in a process of its own: ``python -m adcli profile`` with
a time limit (the process group killed when it runs out) and a memory limit (``RLIMIT_AS``), BLAS
on one thread. What comes back is plain data: the outcome's status, the profile's bytes and its
samples', never an object of the program's.

Statuses: ``ok``; ``timeout``; ``memory`` (a MemoryError, or killed by a signal once the limit
was set); ``no gradient`` (it took none through adcli); ``refused`` (adcli refused something it
did, with its error); ``crash`` (anything else: its last line of error output is the reason).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from .inputs import fingerprint, read_manifest
from .programs import Program

try:
    import resource  # POSIX: the memory limit
except ImportError:  # pragma: no cover - Windows: programs run without one
    resource = None

STATUSES = ("ok", "timeout", "memory", "no gradient", "refused", "crash")
_REFUSALS = ("UnsupportedError", "TracingError", "NoRuleError", "GradInputError", "RuleError")
_REASON_CHARS = 300
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 600.0
    memory_bytes: int | None = 4 << 30
    sample_bytes: int = 10 << 20  # the samples kept with each profile (replays need them)
    replay_budget: str = "auto"
    rules: tuple = ()  # rules modules each program is profiled with (absolute paths)


def run_program(program: Program, limits: Limits) -> dict:
    """Profile ``program``; ``{"status", "reason", "wall_s", "profile", "samples", "host",
    "inputs"}`` (``profile`` and ``samples``: the files' bytes, or None; ``inputs``: the files it
    read, inputs.fingerprint's rows, or None when unknown)."""
    with tempfile.TemporaryDirectory(prefix="adcli-corpus-") as tmp:
        out, manifest = os.path.join(tmp, "profile.json"), os.path.join(tmp, "inputs.json")
        cmd = [sys.executable, "-m", "adcli.cli_probe", manifest, "-q", "--no-color", "profile", "-o", out,
               "--sample-budget", str(limits.sample_bytes), "--replay-budget", str(limits.replay_budget)]
        for path in limits.rules:
            cmd += ["--rules", path]
        if program.kind == "test":  # one test, under the profiler
            cmd += ["-m", "pytest", "-q", "-p", "no:cacheprovider", program.target]
        else:
            cmd += ["-m", program.target] if program.kind == "module" else [program.target]
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", NO_COLOR="1")
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=program.cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, start_new_session=True,
                                preexec_fn=_child_setup(limits.memory_bytes))
        try:
            _, err = proc.communicate(timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            _kill(proc)
            return _outcome("timeout", f"still running after {limits.timeout_s:g} s (killed)", start)
        finally:
            if proc.poll() is None:  # interrupted while waiting: no orphan left running
                _kill(proc)
        text = err.decode("utf-8", "replace")
        status, reason = classify(proc.returncode, text, limits.memory_bytes is not None)
        profile = _read(out) if status == "ok" or os.path.exists(out) else None
        samples = _read(out[:-len(".json")] + ".npz") if profile is not None else None
        if status != "ok" and profile is not None:  # it took gradients, then failed: profiled as far as it ran
            reason = f"{reason} (after its gradients: profiled up to there)"
        outcome = _outcome(status, reason, start, profile, samples)
        paths = read_manifest(manifest)
        outcome["inputs"] = fingerprint(paths) if paths is not None else None
        return outcome


def classify(returncode: int, stderr: str, memory_limited: bool) -> tuple[str, str]:
    """(status, reason) of a finished ``adcli profile`` process from its exit status and error output."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    last = lines[-1].removeprefix("adcli: ").removeprefix("error: ")[:_REASON_CHARS] if lines else ""
    if returncode == 0:
        return "ok", ""
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode).name
        except ValueError:  # a number no signal of this system has
            sig = f"signal {-returncode}"
        if memory_limited and -returncode in (signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT):
            return "memory", f"killed by {sig} (over its memory limit?)"
        return "crash", f"killed by {sig}"
    if "MemoryError" in stderr:
        return "memory", last or "MemoryError"
    if "took no gradient" in stderr:
        return "no gradient", last
    if any(name in last for name in _REFUSALS):
        return "refused", last
    return "crash", last or f"exit status {returncode}"


def _outcome(status, reason, start, profile=None, samples=None) -> dict:
    return {"status": status, "reason": reason, "wall_s": time.perf_counter() - start, "profile": profile,
            "samples": samples, "host": socket.gethostname(), "inputs": None}


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _child_setup(limit: int | None):
    """What the program's process does before it runs anything (Linux): take its memory limit,
    and ask the kernel to kill it when its worker dies (a worker killed, a cluster closed by
    Ctrl-C: no program left running on its own; it runs in a session of its own, which a
    terminal's Ctrl-C does not reach)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None).prctl
    except (OSError, AttributeError):
        prctl = None

    def apply() -> None:
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if limit is not None and resource is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the program and anything it started
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
