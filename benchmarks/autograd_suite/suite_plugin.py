"""pytest plugin for the autograd-suite run (loaded with ``-p suite_plugin`` in the subprocess).

For every test it writes one JSON line to ``$ADCLI_SUITE_OUT``: outcome, the exception that
ended it (type, its base classes, first line of the message), the skip reason, the duration,
and the shim's events and counters for that test (when the shim is the ``autograd`` in use).
Collection errors are written as records of kind ``collect``. ``$ADCLI_SUITE_TIMEOUT`` seconds
(0: none) bound each test's call phase with SIGALRM.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import pytest

_OUT = os.environ.get("ADCLI_SUITE_OUT", "suite-results.jsonl")
_TIMEOUT = float(os.environ.get("ADCLI_SUITE_TIMEOUT", "0") or 0)
_reports: dict[str, dict] = {}


class SuiteTimeout(Exception):
    """The test ran longer than the harness's per-test limit."""


def _bridge():
    return sys.modules.get("autograd._adcli")


def _write(record: dict) -> None:
    with open(_OUT, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, default=repr) + "\n")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    bridge = _bridge()
    if bridge is not None:
        bridge.reset()
    _reports[item.nodeid] = {"nodeid": item.nodeid, "outcome": "passed", "start": time.perf_counter()}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if _TIMEOUT <= 0 or not hasattr(signal, "setitimer"):  # no SIGALRM timers (Windows): no limit
        yield
        return

    def expire(signum, frame):
        raise SuiteTimeout(f"test exceeded the harness's limit of {_TIMEOUT:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, _TIMEOUT)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    rec = _reports.setdefault(item.nodeid, {"nodeid": item.nodeid, "outcome": "passed", "start": time.perf_counter()})
    if rep.skipped and rec["outcome"] == "passed":
        rec["outcome"] = "skipped"
        longrepr = rep.longrepr
        rec["skip_reason"] = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    elif rep.failed and rec["outcome"] in ("passed", "skipped"):
        rec["outcome"] = "failed" if call.when == "call" else "error"
        rec["when"] = call.when
        exc = call.excinfo.value if call.excinfo is not None else None
        if exc is not None:
            rec["exc_type"] = type(exc).__name__
            rec["exc_bases"] = [c.__name__ for c in type(exc).__mro__]
            rec["message"] = _first_line(exc)
            rec["category"] = getattr(exc, "category", None)
        else:
            rec["message"] = str(rep.longrepr).splitlines()[-1] if rep.longrepr else ""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    yield
    rec = _reports.pop(item.nodeid, None)
    if rec is None:
        return
    rec["duration"] = round(time.perf_counter() - rec.pop("start"), 3)
    bridge = _bridge()
    if bridge is not None:
        rec["events"] = list(bridge.EVENTS)
        rec["stats"] = dict(bridge.STATS)
        bridge.reset()
    _write(rec)


def _dist_version(name: str) -> str:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return "?"


def pytest_sessionstart(session):
    info = {"kind": "session", "python": sys.version.split()[0]}
    for name in ("numpy", "scipy", "adcli", "autograd"):
        try:
            module = __import__(name)
        except Exception as exc:  # reported, not fatal: the tests will show it
            info[name] = f"not importable: {exc}"
            continue
        info[name] = getattr(module, "__version__", None) or _dist_version(name)
        info[name + "_file"] = getattr(module, "__file__", "?")
    _write(info)


def pytest_collectreport(report):
    if report.failed:
        text = str(report.longrepr).strip().splitlines()
        _write({"kind": "collect", "nodeid": report.nodeid, "outcome": "error", "message": text[-1] if text else ""})
