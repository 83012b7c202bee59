"""Run a user's program as ``__main__`` under a profiling session (as cProfile and pyinstrument do)."""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys
import traceback
from dataclasses import dataclass

from ..errors import AdcliError
from .instrument import UserModuleFinder, installed, instrument
from .session import Session, run_with_profile_hook


@dataclass
class RunResult:
    exit_status: int = 0
    interrupted: bool = False
    error: str | None = None  # the formatted traceback of an uncaught exception
    hard_exit: bool = False  # the program called os._exit (the run ended there)


class ScriptError(AdcliError):
    """The program to profile cannot be found or read."""


def load_rules(paths) -> None:
    """Import each rules file (declaring its rules) before the program runs."""
    for n, path in enumerate(paths):
        if not os.path.isfile(path):
            raise ScriptError(f"rules file {path} does not exist")
        spec = importlib.util.spec_from_file_location(f"adcli_rules_{n}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        try:
            spec.loader.exec_module(module)
        except SyntaxError as exc:
            raise ScriptError(f"{path}:{exc.lineno}: syntax error in the rules file: {exc.msg}") from None


def _script_code(path: str):
    """Compile the script with every function a dispatch point (profiler/instrument.py)."""
    try:
        with open(path, "rb") as f:
            source = f.read()
    except OSError as exc:
        raise ScriptError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return instrument(source, path)
    except SyntaxError as exc:
        raise ScriptError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None


def _child_exit(result: RunResult, real_exit) -> None:
    if result.error:
        sys.stderr.write(result.error)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        real_exit(result.exit_status)


def run_script(session: Session, path: str, argv: list, on_hard_exit=None) -> RunResult:
    if not os.path.isfile(path):
        raise ScriptError(f"no such script: {path}")
    code = _script_code(path)
    globals_ = {"__name__": "__main__", "__file__": os.path.abspath(path), "__builtins__": __builtins__,
                "__package__": None, "__spec__": None, "__doc__": None}
    main_module = type(sys)("__main__")
    main_module.__dict__.update(globals_)
    return _run(session, lambda: exec(code, main_module.__dict__), [path, *argv],
                os.path.dirname(os.path.abspath(path)), main_module, on_hard_exit)


def find_module(name: str) -> None:
    """Raise ScriptError unless ``python -m name`` would find the module."""
    sys.path.insert(0, os.getcwd())  # where `python -m` looks first
    try:
        found = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        found = False
    finally:
        sys.path.pop(0)
    if not found:
        raise ScriptError(f"no module named {name}")


def run_module(session: Session, name: str, argv: list, on_hard_exit=None) -> RunResult:
    find_module(name)
    return _run(session, lambda: runpy.run_module(name, run_name="__main__", alter_sys=True), [name, *argv],
                os.getcwd(), None, on_hard_exit)


# Frames a profiled call adds to the program's stack (the dispatch point and the session's hook
# around each of its functions): the recursion limit is raised by this factor while it runs, so
# a recursion that fits under plain Python fits under the profiler too.
FRAMES_PER_CALL = 3


def _run(session: Session, body, argv: list, path0: str, main_module, on_hard_exit=None) -> RunResult:
    """Run ``body`` as the program. ``on_hard_exit(status)`` is called if the program calls
    ``os._exit`` (which ends the process at once: the caller saves what it has, then the exit
    goes ahead). A forked child of the program never returns into adcli: when it ends, it
    exits as Python would have."""
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    saved_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(saved_limit * FRAMES_PER_CALL)
    saved_main = sys.modules.get("__main__")
    sys.argv = list(argv)
    sys.path.insert(0, path0)
    if main_module is not None:
        sys.modules["__main__"] = main_module
    result = RunResult()
    pid = os.getpid()
    real_exit = os._exit

    def hard_exit(status=0):
        if os.getpid() == pid and on_hard_exit is not None:
            try:
                os._exit = real_exit
                on_hard_exit(status)
            except BaseException:  # noqa: BLE001 - the exit must happen whatever saving did
                pass
        real_exit(status)

    os._exit = hard_exit
    try:
        with installed(UserModuleFinder(session.is_user_path)):
            run_with_profile_hook(session, body)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            result.exit_status = 0
        elif isinstance(code, int):
            result.exit_status = code
        else:
            print(code, file=sys.stderr)
            result.exit_status = 1
    except KeyboardInterrupt:
        result.interrupted = True
        result.exit_status = 130
    except BaseException:  # noqa: BLE001 - the program's own error: shown as Python would
        result.error = traceback.format_exc()
        result.exit_status = 1
    finally:
        os._exit = real_exit
        if os.getpid() != pid:  # a forked child of the program ended: it must not return into adcli
            _child_exit(result, real_exit)
        sys.setrecursionlimit(saved_limit)
        sys.argv = saved_argv
        if sys.path and sys.path[0] == path0:
            sys.path.pop(0)
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
        elif main_module is not None:
            sys.modules.pop("__main__", None)
        del saved_path0
    return result
