"""Run a user's program as ``__main__`` under a profiling session (as cProfile and pyinstrument do)."""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys
import traceback
import warnings
from dataclasses import dataclass

from ..engine.where import user_frame
from ..errors import AdcliError
from ..rules.instrument import UserModuleFinder, installed, instrument
from .session import Session, run_with_profile_hook


@dataclass
class RunResult:
    exit_status: int = 0
    interrupted: bool = False
    error: str | None = None  # the formatted traceback of an uncaught exception (adcli's frames hidden)
    hard_exit: bool = False  # the program called os._exit (the run ended there)
    summary: str | None = None  # the exception's last line ("FileNotFoundError: missing.csv not found")


_ADCLI_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _hidden(frame: traceback.FrameSummary) -> bool:
    """adcli's own frames (the runner, dispatch points, the engine) and runpy's, which stand
    between the user's frames: hidden from the program's traceback, as pytest hides its own."""
    name = frame.filename
    return os.path.abspath(name).startswith(_ADCLI_DIR) or name.startswith("<frozen runpy") or \
        os.path.basename(name) == "runpy.py"


def _at_user_line(show):
    """``warnings.showwarning`` that attributes a warning raised inside adcli (NumPy's
    RuntimeWarning from a rule's arithmetic) to the user's line that led there."""

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if os.path.abspath(filename).startswith(_ADCLI_DIR):
            frame = user_frame(1)
            if frame is not None:
                filename, lineno, line = frame.f_code.co_filename, frame.f_lineno, None
        return show(message, category, filename, lineno, file, line)

    showwarning.__adcli__ = True
    return showwarning


def user_traceback(exc: BaseException) -> str:
    """The traceback Python would print for ``exc``, without adcli's frames (all of them kept if
    nothing else is left: then the error is adcli's own)."""
    top = traceback.TracebackException.from_exception(exc)
    te, seen = top, set()
    while te is not None and id(te) not in seen:  # the exception and the ones it was raised from
        seen.add(id(te))
        kept = [f for f in te.stack if not _hidden(f)]
        if kept:
            te.stack = traceback.StackSummary.from_list(kept)
        te = te.__cause__ or te.__context__
    return "".join(top.format())


class ScriptError(AdcliError):
    """The program to profile cannot be found or read."""


def on_sys_path(path: str) -> None:
    """Put the folder of the file ``path`` first on ``sys.path``, as ``python prog.py`` puts its
    script's: a program's helper modules next to it import without PYTHONPATH."""
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)


def load_rules(paths) -> None:
    """Import each rules file (declaring its rules) before the program runs, its folder on
    ``sys.path`` (the helper modules it imports)."""
    for n, path in enumerate(paths):
        if not os.path.isfile(path):
            raise ScriptError(f"rules file {path} does not exist")
        import_rules_file(path, f"adcli_rules_{n}")


def import_rules_file(path: str, name: str):
    """Import the rules file ``path`` as the module ``name``, its folder first on ``sys.path``.
    A file that raises while it loads is a ScriptError of one line naming its line and the
    exception (``rules.py:3: the rules file raised NameError: name 'np' is not defined``), not
    a traceback through adcli: the error is in the file, and the line says where."""
    on_sys_path(path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:  # the rules file's, or that of a module it imports (then that file's)
        sys.modules.pop(name, None)
        raise ScriptError(f"{exc.filename or path}:{exc.lineno}: syntax error: {exc.msg}") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the file's own error, reported in one line
        sys.modules.pop(name, None)
        where = line_in(exc, path) or path
        if isinstance(exc, SystemExit):
            raise ScriptError(f"{where}: the rules file called sys.exit({exc.code!r}) while it loaded") from None
        what = str(exc) if isinstance(exc, AdcliError) else f"the rules file raised {type(exc).__name__}: {exc}"
        raise ScriptError(f"{where}: {what}") from None
    return module


def line_in(exc: BaseException, path: str) -> str | None:
    """``file:line`` of the innermost frame of ``exc``'s traceback in the file ``path``."""
    path = os.path.abspath(path)
    frames = [fr for fr in traceback.extract_tb(exc.__traceback__) if os.path.abspath(fr.filename) == path]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else None


def _script_code(path: str):
    """Compile the script with every function a dispatch point (rules/instrument.py)."""
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
    saved_showwarning = warnings.showwarning
    warnings.showwarning = _at_user_line(saved_showwarning)
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
    except BaseException as exc:  # noqa: BLE001 - the program's own error: shown as Python would
        result.error = user_traceback(exc)
        result.summary = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[-1]
        result.exit_status = 1
    finally:
        os._exit = real_exit
        if warnings.showwarning is not saved_showwarning and getattr(warnings.showwarning, "__adcli__", False):
            warnings.showwarning = saved_showwarning
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
