"""The oracle: run one program with plain NumPy and under ``adcli.value_and_grad`` and classify it.

Checks, in order (the first failure decides the category):

1. NumPy runs and returns a finite scalar (else ``numpy-error``);
2. adcli runs (an AdcliError is ``refused``; any other exception, or a RuleError, where a built-in
   rule broke its contract, is a ``crash``), leaves the inputs
   alone, and its value equals NumPy's bit for bit (``wrong-value``);
3. every gradient has its argument's type, shape and dtype, and matches central finite
   differences along random directions (``wrong-gradient``); differences that do not converge
   across step sizes mean a kink was hit (``nonsmooth``: skipped, not a failure). A float32
   program is compared with differences of its float64 twin (also ``nonsmooth`` when the twin
   computes something else, and when the float32 program overflows on the way and its gradient
   is not finite: float32 arithmetic then gives inf * 0 where the twin's maths is finite);
4. a second run gives bit-identical results (``nondeterministic``);
5. every non-empty proper subset of the float arguments gives the same value and gradients
   (a refusal there is ``subset-refusal``, expected and counted);
6. inputs in other memory layouts (Fortran order, negative strides, strided views) give NumPy's
   value on those inputs and the same gradients (``layout-mismatch``; a refusal is ``layout-refusal``).
"""

from __future__ import annotations

import itertools
import os
import re
import traceback
import warnings
from dataclasses import dataclass

import numpy as np

import adcli
from adcli.errors import RuleError

from . import trees
from .grammar import compile_program
from .program import LAYOUTS, Program, Stmt, changes_layout, fresh, subclass, with_layout

FAILURES = ("crash", "wrong-value", "wrong-gradient", "layout-mismatch", "nondeterministic")
CATEGORIES = ("ok", "refused", "nonsmooth", "subset-refusal", "layout-refusal", "numpy-error") + FAILURES
STEPS = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7)
_ADCLI_DIR = os.path.dirname(os.path.abspath(adcli.__file__)) + os.sep
_FUZZ_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


@dataclass
class Outcome:
    category: str
    check: str = ""  # which check decided: base, value, structure, fd, repeat, subset, layout
    detail: str = ""  # refusals and crashes: exception class and normalised message
    expected: str = ""
    observed: str = ""
    argnums: tuple | None = None  # the argnums of the failing call
    layout: str | None = None  # the input layout of the failing call

    @property
    def failed(self) -> bool:
        return self.category in FAILURES

    @property
    def key(self) -> str:
        return f"{self.category}|{self.check}|{self.detail}"


class _Fail(Exception):
    def __init__(self, outcome: Outcome):
        self.outcome = outcome


@dataclass
class _Call:
    value: object = None
    grads: tuple = ()
    error: BaseException | None = None
    modified: bool = False


def normalise(msg: str) -> str:
    """A message with locations and numbers taken out, for grouping: the text before ' at ', and
    for a write into a plain array the reason after the location (engine.plain_writes)."""
    head = msg.split(" at ", 1)[0].split("\n", 1)[0]
    if head == "writing a traced value into a plain array" and "`): " in msg:
        reason = msg.split("`): ", 1)[1].split("\n", 1)[0]
        head += " - " + re.split(r"[,:(;]", reason, maxsplit=1)[0][:48].strip()
    return re.sub(r"\d+", "N", head)[:100]


def error_detail(e: BaseException) -> str:
    """Exception class, where in adcli it was raised (crashes only), and the normalised message."""
    if _refusal(e):
        return f"{type(e).__name__}: {normalise(str(e))}"
    frames = traceback.extract_tb(e.__traceback__)
    mine = [fr for fr in frames if os.path.abspath(fr.filename).startswith(_ADCLI_DIR)]
    top = mine[-1] if mine else (frames[-1] if frames else None)
    where = f" in {os.path.basename(top.filename)}:{top.name}" if top else ""
    return f"{type(e).__name__}{where}: {normalise(str(e))}"


def _quiet(fn, *args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def _moved(b, d, h):
    if isinstance(b, np.ndarray):
        b += (h * d).astype(b.dtype)
        return b
    return b + h * float(d)


def _point(args, layout, dirs=None, h=0.0):
    """Fresh arguments in ``layout``, moved by ``h * dirs`` (in place, so the layout stays; a
    container argument's direction is a list, one per leaf)."""
    out = []
    for i, a in enumerate(args):
        b = with_layout(a, layout)
        d = None if dirs is None else dirs[i]
        if d is not None and h:
            if trees.is_tree(b):
                b = trees.rebuild(b, [_moved(v, dv, h) for v, dv in zip(trees.leaves(b), d)])
            else:
                b = _moved(b, d, h)
        out.append(b)
    return out


def _flat(args) -> list:
    """Every argument's leaves, in order (an argument that is no container is its own leaf)."""
    return [v for a in args for v in trees.leaves(a)]


def _adcli(f, args, argnums, layout) -> _Call:
    passed = _point(args, layout)
    before = [fresh(a) for a in passed]
    try:
        value, grads = _quiet(adcli.value_and_grad(f, argnums), *passed)
    except Exception as e:
        return _Call(error=e)
    modified = any(isinstance(b, np.ndarray) and not np.array_equal(a, b) for a, b in zip(_flat(passed), _flat(before)))
    return _Call(value=value, grads=tuple(grads), modified=modified)


def _f32(prog: Program) -> bool:
    return any(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in _flat(prog.args))


def _value_ok(v, ref, f32) -> bool:
    """adcli's value is NumPy's, bit for bit (a rule that sums in another order, or computes a
    float32 operation in another precision, is a wrong value, however close)."""
    if np.shape(v) != ():
        return False
    return bool(float(v) == float(ref) or (np.isnan(float(v)) and np.isnan(float(ref))))


def _value_close(v, ref) -> bool:
    """NumPy's own values of one function on two layouts of its inputs: the same function when
    they agree to rounding (NumPy may sum a strided input in another order)."""
    return bool(abs(float(v) - float(ref)) <= 1e-10 * max(1.0, abs(float(ref))))


def _structure(args, argnums, grads, finite: bool = True):
    """None, or what is wrong with the gradients' types, shapes and dtypes (and, with
    ``finite``, their values: inf or nan)."""
    for k, g in zip(argnums, grads):
        a = args[k]
        if trees.is_tree(a):
            if trees.structure(g) != trees.structure(a):
                return (f"gradient of argument {k} is {g!r}, the argument a {type(a).__name__} "
                        f"of structure {trees.structure(a)!r}")
            bad = _structure(trees.leaves(a), range(len(trees.leaves(a))), trees.leaves(g), finite)
            if bad:
                return f"argument {k}'s leaves: {bad}"
            continue
        if subclass(a):  # np.matrix, a masked array: a plain array of its shape and dtype, or its own type
            if type(g) not in (np.ndarray, type(a)) or g.shape != a.shape or g.dtype != a.dtype:
                return (f"gradient of argument {k} is {type(g).__name__} {np.shape(g)} {getattr(g, 'dtype', '')}, "
                        f"the argument {type(a).__name__} {a.shape} {a.dtype}")
            if finite and not np.all(np.isfinite(np.ma.getdata(g))):
                return f"gradient of argument {k} is {g!r}: not finite"
            continue
        if type(a) is float:
            if type(g) is not float:
                return f"gradient of argument {k} is {type(g).__name__}, the argument a float"
        elif type(g) is not np.ndarray or g.shape != a.shape or g.dtype != a.dtype:
            return (f"gradient of argument {k} is {type(g).__name__} {np.shape(g)} {getattr(g, 'dtype', '')}, "
                    f"the argument ndarray {a.shape} {a.dtype}")
        if finite and not np.all(np.isfinite(g)):
            return f"gradient of argument {k} is {g!r}: not finite"
    return None


def _F(f, point) -> float:
    try:
        return float(_quiet(f, *point))
    except Exception:
        return float("nan")


def fd_target(prog: Program, f, ref):
    """What finite differences evaluate: the program itself, or for a float32 program its float64
    twin (arguments cast, every float32 in the text made float64), whose derivative the float32
    gradient must match to float32 accuracy. None when the twin computes something else (NumPy's
    view-or-copy answers can depend on the dtype: x.astype(np.float32, copy=False))."""
    if not _f32(prog):
        return f, prog.args
    twin = prog.with_(args=[trees.tmap(lambda v: v.astype(np.float64) if isinstance(v, np.ndarray) else v, a)
                            for a in prog.args],
                      stmts=[Stmt(s.kind, s.text.replace("float32", "float64")) for s in prog.stmts])
    f64 = compile_program(twin, f"<fuzz {prog.seed} float64 twin>")
    if not abs(_F(f64, _point(twin.args, None)) - float(ref)) <= 1e-4 * max(1.0, abs(float(ref))):
        return None
    return f64, twin.args


def fd_check(target, argnums, grads, layout, rng, ref, f32, directions=3):
    """Compare directional derivatives with central differences of ``target`` (fd_target): None
    (agree), "nonsmooth" (the estimates do not converge), or (expected, observed, note).

    The estimates at neighbouring steps must agree; the pair trusted is the one whose
    disagreement plus rounding noise (about eps * |f| / step) is smallest."""
    if target is None:
        return "nonsmooth"  # no faithful function to take finite differences of
    f, args = target
    rtol, atol = (3e-3, 1e-5) if f32 else (1e-6, 1e-9)
    steps, eps = STEPS, 1e-13  # eps: the rounding error of one evaluation, relative to |f|
    nonsmooth = False
    for _ in range(directions):
        dirs = [_direction(rng, a) if i in argnums else None for i, a in enumerate(args)]
        terms = [np.asarray(gl, np.float64) * dl for k, g in zip(argnums, grads)
                 for gl, dl in zip(_leaf_values(g), dirs[k] if trees.is_tree(args[k]) else [dirs[k]])]
        pred = float(sum(np.sum(t) for t in terms))
        scale = float(sum(np.sum(np.abs(t)) for t in terms))
        est = []
        for h in steps:
            plus = _F(f, _point(args, layout, dirs, h))
            minus = _F(f, _point(args, layout, dirs, -h))
            est.append((plus - minus) / (2 * h))
        gaps = [abs(a - b) if np.isfinite(a - b) else np.inf for a, b in zip(est, est[1:])]
        noise = [eps * (abs(float(ref)) + 1.0) / h for h in steps[1:]]
        k = int(np.argmin([g + n for g, n in zip(gaps, noise)]))
        mag = scale + abs(est[k]) + abs(pred)
        if not gaps[k] <= 1e-6 * (mag + 1.0) + 2 * noise[k]:
            nonsmooth = True
            continue
        err = min(abs(pred - est[k]), abs(pred - est[k + 1]))
        if err > max(4 * gaps[k], 4 * noise[k], rtol * mag + atol):
            if not f32 and _extended_agrees(f, args, layout, dirs, pred):
                nonsmooth = True  # too fast for float64's steps (sin of a huge value), resolved in extended precision
                continue
            where = f" along a random direction (finite differences at steps {steps[k]:g} and {steps[k + 1]:g})"
            return (repr(est[k]) + where, repr(pred), "directional derivative")
    return "nonsmooth" if nonsmooth else None


def _extended_agrees(f, args, layout, dirs, pred: float) -> bool:
    """Whether central differences in ``np.longdouble`` (x86-64's 80-bit floats: three more
    digits) at small steps agree with the derivative ``pred`` where float64's could not: a
    function that varies faster than float64's steps resolve (sin of a value grown to 1e5
    over a loop) is not a finding. False where the program does not compute in longdouble
    (a LAPACK call, a cast), or where longdouble is float64."""
    if np.finfo(np.longdouble).eps >= np.finfo(np.float64).eps:
        return False

    def wide(v):
        if isinstance(v, np.ndarray) and v.dtype == np.float64:
            return v.astype(np.longdouble)
        return np.longdouble(v) if type(v) is float else v
    wargs = [trees.tmap(wide, a) for a in args]
    est = []
    for h in 10.0 ** -np.arange(9, 18):
        h = np.longdouble(h)
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                plus, minus = f(*_point(wargs, layout, dirs, h)), f(*_point(wargs, layout, dirs, -h))
        except Exception:
            return False
        if np.asarray(plus).dtype != np.longdouble or np.asarray(minus).dtype != np.longdouble:
            return False
        est.append(float((np.longdouble(plus) - np.longdouble(minus)) / (2 * h)))

    # the neighbouring pair that agrees best (within 1%), and the derivative within 4x their gap
    # (as fd_check trusts float64's pairs) plus 0.1% of it: extended precision's own limit at
    # such steps
    pairs = [(abs(a - b) / max(abs(a), abs(b)), a, b) for a, b in zip(est, est[1:]) if np.isfinite(a - b) and a != b]
    if not pairs:
        return False
    rel, a, b = min(pairs)
    gap = abs(a - b)
    return rel <= 1e-2 and min(abs(pred - a), abs(pred - b)) <= 4 * gap + 1e-3 * abs(pred)


def _direction(rng, a):
    """A random direction for argument ``a``: one array per leaf for a container."""
    if trees.is_tree(a):
        return [rng.standard_normal(np.shape(v)) for v in trees.leaves(a)]
    return rng.standard_normal(np.shape(a))


def _leaf_values(g) -> list:
    """A gradient's leaves as plain arrays (a masked array's data)."""
    return [np.ma.getdata(v) for v in trees.leaves(g)]


def _overflows(f, args, layout) -> bool:
    """Whether the (float32) program overflows somewhere on the way to its finite value."""
    try:
        with np.errstate(over="raise"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f(*_point(args, layout))
    except FloatingPointError:
        return True
    except Exception:
        return False
    return False


def run(prog: Program, directions: int = 3, metamorphic: bool = True) -> Outcome:
    """Classify one program (see the module docstring)."""
    try:
        f = compile_program(prog)
    except Exception as e:
        return Outcome("numpy-error", "compile", error_detail(e))
    try:
        return _run(f, prog, directions, metamorphic and prog.argnums is None and prog.layout is None)
    except _Fail as fail:
        return fail.outcome


def _run(f, prog, directions, metamorphic) -> Outcome:
    layout = prog.layout
    argnums = prog.argnums if prog.argnums is not None else prog.float_argnums
    f32 = _f32(prog)
    try:
        ref = _quiet(f, *_point(prog.args, layout))
    except Exception as e:
        return Outcome("numpy-error", "numpy", error_detail(e))
    if np.shape(ref) != () or not np.isfinite(ref) or not argnums:
        return Outcome("numpy-error", "numpy", "not a finite scalar")
    at = {"argnums": argnums, "layout": layout}
    base = _adcli(f, prog.args, argnums, layout)
    _judge_call(base, ref, prog.args, argnums, f32, "base", at, refused="refused")
    grads = base.grads
    bad = _structure(prog.args, argnums, grads)
    if bad and f32 and _structure(prog.args, argnums, grads, finite=False) is None and _overflows(f, prog.args, layout):
        # only the values are not finite: inf * 0 in float32 arithmetic, not a rule's slip
        return Outcome("nonsmooth", "float32 overflow")
    if bad:
        raise _Fail(Outcome("wrong-gradient", "structure", "", "", bad, **at))
    rng = np.random.default_rng(prog.seed)
    target = fd_target(prog, f, ref)
    fd = fd_check(target, argnums, grads, layout, rng, ref, f32, directions)
    if isinstance(fd, tuple):
        raise _Fail(Outcome("wrong-gradient", "fd", fd[2], fd[0], fd[1], **at))
    again = _adcli(f, prog.args, argnums, layout)
    if again.error is not None or not _identical((base.value,) + grads, (again.value,) + again.grads):
        obs = error_detail(again.error) if again.error else f"value {again.value!r}, gradients {again.grads!r}"
        raise _Fail(Outcome("nondeterministic", "repeat", "", f"value {base.value!r}, gradients {grads!r}", obs, **at))
    notes = ["nonsmooth"] if fd == "nonsmooth" else []
    if metamorphic:
        notes += _subsets(f, prog, ref, argnums, grads, f32)
        notes += _layouts(f, prog, ref, argnums, grads, f32, rng, directions, target)
    for cat in ("nonsmooth", "subset-refusal", "layout-refusal"):
        for n in notes:
            if isinstance(n, Outcome) and n.category == cat:
                return n
            if n == cat:
                return Outcome(cat, "fd")
    return Outcome("ok")


def _judge_call(call, ref, args, argnums, f32, check, at, refused):
    """Raise _Fail for a refusal (as ``refused``), a crash, modified inputs or a wrong value."""
    if call.error is not None:
        e = call.error
        cat = refused if _refusal(e) else "crash"
        raise _Fail(Outcome(cat, check, error_detail(e), "", _traceback(e), **at))
    if call.modified:
        raise _Fail(Outcome("wrong-value", check, "the inputs were modified", "inputs unchanged", "inputs changed", **at))
    if not _value_ok(call.value, ref, f32):
        cat = "layout-mismatch" if check == "layout" else "wrong-value"
        raise _Fail(Outcome(cat, check, "value", repr(ref), repr(call.value), **at))


def _refusal(e: BaseException) -> bool:
    """An adcli error is an acceptable answer, except a RuleError: a built-in rule broke its
    own contract (a cotangent of the wrong shape), which is a bug like any other crash."""
    return isinstance(e, adcli.AdcliError) and not isinstance(e, RuleError)


def _traceback(e: BaseException) -> str:
    """The traceback from adcli's entry point on (the oracle's own frames left out)."""
    tb = e.__traceback__
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_FUZZ_DIR):
        tb = tb.tb_next
    lines = "".join(traceback.format_exception(type(e), e, tb)).strip().splitlines()
    return "\n".join(lines[:1] + lines[1:][-16:])


def _identical(a, b) -> bool:
    if any(trees.is_tree(x) for x in a) or any(trees.is_tree(y) for y in b):
        if [trees.structure(x) for x in a] != [trees.structure(y) for y in b]:
            return False
        a, b = _flat(a), _flat(b)
    return len(a) == len(b) and all(
        type(x) is type(y) and np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True) for x, y in zip(a, b))


def _grads_close(g, h, f32) -> bool:
    if trees.is_tree(g) or trees.is_tree(h):
        return trees.structure(g) == trees.structure(h) and all(
            _grads_close(x, y, f32) for x, y in zip(trees.leaves(g), trees.leaves(h)))
    g, h = np.asarray(np.ma.getdata(g), np.float64), np.asarray(np.ma.getdata(h), np.float64)
    if g.shape != h.shape:
        return False
    rtol = 1e-5 if f32 else 1e-9
    return bool(np.allclose(g, h, rtol=rtol, atol=rtol * (1.0 + float(np.max(np.abs(h), initial=0.0)))))


def _subsets(f, prog, ref, argnums, grads, f32) -> list:
    notes = []
    full = dict(zip(argnums, grads))
    for n in range(1, len(argnums)):
        for sub in itertools.combinations(argnums, n):
            at = {"argnums": sub, "layout": None}
            call = _adcli(f, prog.args, sub, None)
            try:
                _judge_call(call, ref, prog.args, sub, f32, "subset", at, refused="subset-refusal")
            except _Fail as fail:
                if fail.outcome.category != "subset-refusal":
                    raise
                notes.append(fail.outcome)
                continue
            bad = _structure(prog.args, sub, call.grads)
            for k, g in zip(sub, call.grads):
                if bad or not _grads_close(g, full[k], f32):
                    raise _Fail(Outcome("wrong-gradient", "subset", f"argument {k}", f"{full[k]!r} (all arguments)",
                                        bad or repr(g), **at))
    return notes


def _layouts(f, prog, ref, argnums, grads, f32, rng, directions, target) -> list:
    notes = []
    for layout in LAYOUTS:
        if not changes_layout(prog.args, layout):
            continue
        at = {"argnums": argnums if argnums != prog.float_argnums else None, "layout": layout}
        try:
            ref_l = _quiet(f, *_point(prog.args, layout))
        except Exception:
            continue
        if not np.all(np.isfinite(ref_l)):
            # NumPy's own semantics differ with this layout (a reshape that copies instead of
            # viewing) and the domain guards were made for C order: nothing to compare
            notes.append("nonsmooth")
            continue
        call = _adcli(f, prog.args, argnums, layout)
        try:
            _judge_call(call, ref_l, prog.args, argnums, f32, "layout", at, refused="layout-refusal")
        except _Fail as fail:
            if fail.outcome.category != "layout-refusal":
                raise
            notes.append(fail.outcome)
            continue
        same = _value_close(ref_l, ref)
        bad = _structure(prog.args, argnums, call.grads)
        if bad and not (bad.endswith("not finite") and not same):
            raise _Fail(Outcome("layout-mismatch", "layout", "gradient type", "", bad, **at))
        if bad:  # NumPy's semantics differ with this layout, and the kink guards were for C order
            notes.append("nonsmooth")
        elif same:  # the same function: the same gradient
            for k, g, g0 in zip(argnums, call.grads, grads):
                if not _grads_close(g, g0, f32):
                    raise _Fail(Outcome("layout-mismatch", "layout", "gradient", f"{g0!r} (C order)", repr(g), **at))
        else:  # NumPy's own semantics differ with the layout (views vs copies): check it afresh
            fd = fd_check(target, argnums, call.grads, layout, rng, ref_l, f32, directions)
            if fd == "nonsmooth":
                notes.append(fd)
            elif isinstance(fd, tuple):
                raise _Fail(Outcome("layout-mismatch", "layout", "gradient vs finite differences", fd[0], fd[1], **at))
    return notes
