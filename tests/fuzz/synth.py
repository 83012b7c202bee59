"""The differential property test of ``adcli.synth``: programs in the synthesizer's subset, their
synthesized gradient = the engine's derived gradient = finite differences.

Two populations of programs:

* ``fuzz``: the fuzzer's own programs (``grammar.generate(seed)``), whose return line is made one
  the subset takes (``np.sum(leaf * _W0) + ...``: the same weights as ``_w``, as module constants).
  Most use constructs outside the subset and are refused; when one is, the statements before the
  refused one (its *prefix*) are checked too, so the fuzzer's statements in the subset are tested;
* ``subset``: programs drawn inside the subset (``subset_case(seed)``): straight-line code, ``for``
  over ``range``, ``while`` with a counter, ``if``/``else`` on comparisons of values, ``+ - * / **``
  on scalars and arrays with broadcasting, NumPy ufuncs on guarded operands, ``np.sum(a)``,
  ``x[i]``, augmented assignments, tuple unpacking, names overwritten in loops. Every value the
  program makes is known while it is drawn, so comparisons (and ``maximum``, ``abs``) are kept
  away from their ties and every value stays finite and moderate.

``check(case)`` synthesizes ``f``: a SynthesisError is ``refused`` (its construct kept); otherwise
the rule's ``fwd`` must give ``f``'s value, leave the inputs alone, and its pullback (cotangent 1.0)
cotangents of the arguments' types and shapes, again on a second run, equal to
``adcli.value_and_grad``'s and to central finite differences along random directions
(``wrong`` when not; an exception anywhere in the generated rule is a ``crash``).

    python -m tests.fuzz.synth --seeds 3000 --jobs 2      # both populations; counts, refusals, findings
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import dataclasses
import linecache
import math
import random
import re
import signal
import sys
import time
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np

import adcli
from adcli.errors import GradInputError, RuleError, SynthesisError
from adcli.synth import synthesize

from . import grammar, trees
from .oracle import fd_check
from .program import Program, differentiable, fresh, literal, subclass

POPULATIONS = ("subset", "fuzz")
CATEGORIES = ("ok", "nonsmooth", "refused", "invalid", "wrong", "crash")
FAILURES = ("wrong", "crash")
RTOL = 1e-9  # synthesized vs derived gradient (float64): the same VJPs, summed in another order at most
RTOL_F32 = 1e-4
MAX_ABS = 1e3  # every value a subset program makes stays within this
PROGRAM_TIMEOUT = 60  # seconds for drawing and checking one program in a sample
MARGIN = 0.1  # how far a compared value (and maximum's, abs's operands) stays from its tie
_REGISTERED: list = []


@dataclass
class Case:
    """A program to check: ``source``, a module defining ``f`` (and the constants it reads), and
    the arguments of the call."""

    population: str
    seed: int
    source: str
    args: list
    stmts: list | None = None  # a fuzz program's statements: refusals map to a prefix of them
    prog: Program | None = None

    @property
    def filename(self) -> str:
        return f"<synth-{self.population}-{self.seed}>"


@dataclass
class Outcome:
    population: str
    seed: int
    category: str = "ok"
    check: str = ""  # wrong: value, inputs, structure, repeat, engine, fd; crash: synthesize, load, fwd, pullback, ...
    construct: str = ""  # refused: the construct (names and numbers normalised)
    message: str = ""  # refused: SynthesisError's message; wrong and crash: what went wrong
    expected: str = ""
    observed: str = ""
    source: str = ""
    args: str = ""
    notes: list = field(default_factory=list)
    prefix: Outcome | None = None  # a refused fuzz program: the outcome of its statements before the refused one
    case: Case | None = field(default=None, repr=False)  # what was checked (for shrinking)

    @property
    def accepted(self) -> bool:
        return self.category not in ("refused", "invalid")

    @property
    def failed(self) -> bool:
        return self.category in FAILURES

    @property
    def key(self) -> str:
        """What a smaller program must keep to fail the same way (a crash: its exception's class)."""
        return f"{self.category}|{self.check}" + (f"|{self.message.split(':')[0]}" if self.category == "crash" else "")

    def body(self) -> str:
        """The program without the fuzzer's prelude: the constants it defines and ``f``."""
        lines = self.source.splitlines()
        start = next((i for i, ln in enumerate(lines) if ln.startswith("_W")), None)
        if start is None:
            start = next(i for i, ln in enumerate(lines) if ln.startswith("def f("))
        return "\n".join(lines[start:])

    def repro(self) -> str:
        """A standalone script: the program, its arguments, and what was expected and observed."""
        head = "" if self.population == "subset" else "# (the fuzzer's prelude: tests/fuzz/program.py PRELUDE)\n"
        said = [self.message] + ([] if self.category == "crash" else [f"expected: {self.expected}"]) + \
            [f"observed: {self.observed}"]
        notes = "\n".join("# " + ln for text in said for ln in text.splitlines())
        return (f"# {self.population} seed {self.seed}: {self.category} ({self.check})\n{head}"
                f"import numpy as np\n\n{self.body()}\n\nargs = ({self.args},)\n{notes}\n")


# --- checking one program -------------------------------------------------------------------


def check_synthesis(seed: int, population: str = "fuzz", prefix: bool = True) -> Outcome:
    """Generate the program of ``seed`` in ``population`` and check its synthesized rule."""
    if population == "subset":
        return check(subset_case(seed))
    if population != "fuzz":
        raise ValueError(population)
    case = fuzz_case(seed)
    o = check(case)
    if prefix and o.category == "refused":
        o.prefix = _check_prefix(case, o)
    return o


def check(case: Case) -> Outcome:
    """Synthesize ``case``'s f and classify its rule (the module docstring): ok, nonsmooth (finite
    differences did not converge: not compared), refused, invalid (f itself fails), wrong, crash."""
    out = Outcome(case.population, case.seed, source=case.source, args=args_text(case.args), case=case)
    try:
        f = compile_source(case.source, case.filename)
        ref = _quiet(f, *_fresh(case.args))
    except Exception as e:
        return _set(out, "invalid", "numpy", message=_error(e))
    if np.shape(ref) != () or not np.isfinite(ref):
        return _set(out, "invalid", "numpy", message=f"not a finite scalar: {ref!r}")
    argnums = tuple(i for i, a in enumerate(case.args) if differentiable(a))
    # one seed in four: differentiated in all but its last differentiable argument (the profiler's
    # what-if and export synthesize for the arguments the run traced), whose cotangent is None
    wrt = argnums[:-1] if case.seed % 4 == 2 and len(argnums) > 1 else None
    try:
        # for the signature (as the profiler and export synthesize), and for any arguments on odd seeds
        s = synthesize(f, tuple(_fresh(case.args)) if case.seed % 2 == 0 else None, wrt=wrt)
    except SynthesisError as e:
        return _set(out, "refused", "", construct=construct(str(e)), message=str(e))
    except Exception as e:
        return _crash(out, "synthesize", e)
    try:
        fwd = s.load()
    except Exception as e:
        return _crash(out, "load", e, s.source)
    if wrt is not None:
        argnums = wrt
    f32 = any(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in _leaves(case.args))
    grads, refusal = None, None
    if argnums:
        try:
            _, grads = _quiet(adcli.value_and_grad(f, argnums), *_fresh(case.args))
        except Exception as e:
            if not _refusal(e):
                return _crash(out, "engine", e)
            refusal = e
            out.notes.append(f"the engine refuses f: {_error(e)}")
            if isinstance(e, GradInputError) and any(subclass(a) for a in _leaves(case.args)):
                # a masked array or a matrix: no rule is served these (the engine takes plain arrays)
                return _set(out, "refused", "engine", construct="arguments the engine does not take: "
                            + construct(str(e)), message=_error(e))
    passed = _fresh(case.args)
    try:
        ans, pullback = _quiet(fwd, *passed)
    except Exception as e:
        return _late(out, "fwd", e, s.source, refusal)
    if _modified(passed, case.args):
        return _set(out, "wrong", "inputs", message="fwd modified its inputs", expected=out.args,
                    observed=args_text(passed))
    if not _same_value(ans, ref):
        return _set(out, "wrong", "value", message="fwd's value is not f's", expected=_show(ref), observed=_show(ans))
    try:
        cot = _quiet(pullback, 1.0)
    except Exception as e:
        return _late(out, "pullback", e, s.source, refusal)
    if _modified(passed, case.args):
        return _set(out, "wrong", "inputs", message="the pullback modified the inputs", expected=out.args,
                    observed=args_text(passed))
    bad = _structure(case.args, cot, wrt)
    if bad:
        return _set(out, "wrong", "structure", message=bad, observed=repr(cot)[:800])
    try:
        again = _quiet(pullback, 1.0)
    except Exception as e:
        return _late(out, "pullback", e, s.source, refusal)
    if not _identical(cot, again):
        return _set(out, "wrong", "repeat", message="a second run of the pullback differs", expected=repr(cot)[:800],
                    observed=repr(again)[:800])
    if not argnums:
        return out
    for k, g in zip(argnums, grads or ()):
        if not _close(cot[k], g, case.args[k], RTOL_F32 if f32 else RTOL):
            return _set(out, "wrong", "engine", message=f"argument {k}: the synthesized cotangent is not the engine's",
                        expected=repr(g)[:800], observed=repr(cot[k])[:800])
    target = _fd_target(case, ref, f)
    ordered = [_leaves_like(cot[k], case.args[k]) if trees.is_tree(case.args[k]) else cot[k] for k in argnums]
    fd = fd_check(target, argnums, ordered, None, np.random.default_rng(case.seed), ref, f32)
    if isinstance(fd, tuple):
        return _set(out, "wrong", "fd", message=f"{fd[2]} against finite differences", expected=fd[0], observed=fd[1])
    if fd == "nonsmooth":
        out.category = "nonsmooth"
    return out


def _set(out: Outcome, category: str, check: str, **fields) -> Outcome:
    return replace(out, category=category, check=check, **fields)


def _crash(out: Outcome, phase: str, e: BaseException, rule: str = "") -> Outcome:
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__)).strip().splitlines()
    observed = "\n".join(tb[:1] + tb[1:][-12:])
    return _set(out, "crash", phase, message=_error(e), observed=observed, expected=rule)


def _late(out: Outcome, phase: str, e: BaseException, rule: str, refusal) -> Outcome:
    """An exception of the rule at run time: a refusal when it is adcli's (not a RuleError) and
    the engine refuses f too (the rule inherits the engine's answer), or it is the rule's refusal
    of a masked array or np.matrix argument; a crash otherwise."""
    # the rule refuses an ndarray subclass among its arguments (runtime.plain) wherever it is,
    # stricter than the engine (which refuses one only beside a traced value): a refusal too
    stricter = _refusal(e) and "follows plain ndarray semantics only" in str(e)
    if _refusal(e) and (refusal is not None or stricter):
        return _set(out, "refused", phase, construct="at run time: " + construct(str(e)), message=_error(e),
                    notes=out.notes + [f"the {phase} raised {_error(e)}"])
    return _crash(out, phase, e, rule)


def _refusal(e: BaseException) -> bool:
    return isinstance(e, adcli.AdcliError) and not isinstance(e, RuleError)


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e)[:300]}"


def construct(message: str) -> str:
    """A refusal's construct, for grouping: the message without function name and location,
    variables and numbers normalised."""
    what = message.split(": ", 1)[1] if message.startswith("cannot synthesize") else message
    what = re.split(r", which |: only ", what.rsplit(" at ", 1)[0])[0]
    what = re.sub(r"\b[vx]\d+\b", "v", what)
    what = re.sub(r"\b([a-z]+)_\d+\b", r"\1", what)
    return re.sub(r"\b\d+(\.\d+)?\b", "N", what)[:110]


def compile_source(source: str, filename: str):
    """``f`` of a module text, its source registered with linecache (inspect.getsource works)."""
    _REGISTERED.append(filename)
    while len(_REGISTERED) > 64:
        linecache.cache.pop(_REGISTERED.pop(0), None)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    ns: dict = {}
    exec(compile(source, filename, "exec"), ns)  # noqa: S102 - a generated program
    return ns["f"]


def _quiet(fn, *args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def _fresh(args) -> list:
    return [fresh(a) for a in args]


def _leaves(args) -> list:
    return [v for a in args for v in trees.leaves(a)]


def _modified(passed, args) -> bool:
    return any(isinstance(b, np.ndarray) and not np.array_equal(a, b, equal_nan=b.dtype.kind in "fc")
               for a, b in zip(_leaves(passed), _leaves(args)))


def _same_value(ans, ref) -> bool:
    """fwd runs f's statements: the same number, bit for bit, of the same dtype."""
    if np.shape(ans) != () or np.result_type(ans) != np.result_type(ref):
        return False
    return bool(float(ans) == float(ref))


def _show(v) -> str:
    return f"{v!r} ({type(v).__name__}, {np.result_type(v)})"


def _structure(args, cot, wrt=None) -> str | None:
    """None, or how the cotangents break a rule's contract (adcli/rules/declare.py): one per
    argument, None for one holding no float (or not in ``wrt``); an array's shape and float dtype
    (a scalar for a 0-d array), a scalar for a scalar; a dict with the keys of a dict, a list or
    tuple as long as a list or tuple."""
    if not isinstance(cot, (tuple, list)) or len(cot) != len(args):
        n = len(cot) if hasattr(cot, "__len__") else "?"
        return f"the pullback returned {type(cot).__name__} of {n} values for {len(args)} arguments"
    for k, (a, c) in enumerate(zip(args, cot)):
        if wrt is not None and k not in wrt:
            if c is not None:
                return f"cotangent {k} is {type(c).__name__} for an argument not differentiated: None expected"
            continue
        bad = _cotangent_problem(a, c, f"cotangent {k}")
        if bad:
            return bad
    return None


def _cotangent_problem(a, c, where: str) -> str | None:
    if not differentiable(a):
        return None if c is None else f"{where} is {type(c).__name__}, the argument {type(a).__name__}: None expected"
    if trees.is_tree(a):
        try:
            cl = _leaves_like(c, a)
        except (TypeError, KeyError, IndexError) as e:
            return f"{where} is {type(c).__name__}, the argument a {type(a).__name__}: {e}"
        for (path, leaf), cv in zip(trees.paths(a), cl):
            bad = _cotangent_problem(leaf, cv, where + path)
            if bad:
                return bad
        return None
    if isinstance(a, np.ndarray):
        if not isinstance(c, (np.ndarray, np.generic, float, int)) or np.shape(c) != a.shape:
            return f"{where} is {type(c).__name__} {np.shape(c)}, the argument ndarray {a.shape} {a.dtype}"
        dt = getattr(c, "dtype", None)
        if dt is not None and dt != a.dtype:
            return f"{where} is {type(c).__name__} of dtype {dt}, the argument ndarray {a.shape} {a.dtype}"
        return None
    if not isinstance(c, (float, np.floating)) or np.shape(c) != ():
        return f"{where} is {type(c).__name__} {np.shape(c)}, the argument {type(a).__name__}"
    return None


def _leaves_like(c, a) -> list:
    """The leaves of the cotangent ``c`` in the order of its container argument ``a``'s: a dict's
    by key, a list's or tuple's by position, a dataclass's by field (its own type or a dict)."""
    if not trees.is_tree(a):
        return [c]
    if isinstance(a, dict) or dataclasses.is_dataclass(a):
        keys = list(a) if isinstance(a, dict) else [fl.name for fl in dataclasses.fields(a)]
        if dataclasses.is_dataclass(c) and type(c) is type(a):
            c = {key: getattr(c, key) for key in keys}
        if not isinstance(c, dict) or set(c) != set(keys):
            raise TypeError(f"the keys {sorted(map(repr, keys))} expected")
        items = [(c[key], a[key] if isinstance(a, dict) else getattr(a, key)) for key in keys]
    else:
        if not isinstance(c, (list, tuple)) or len(c) != len(a):
            raise TypeError(f"a list or tuple of {len(a)} expected")
        items = list(zip(c, a))
    return [leaf for cv, av in items for leaf in _leaves_like(cv, av)]


def _identical(a, b) -> bool:
    la, lb = _flat(a), _flat(b)
    return len(la) == len(lb) and all(
        (x is None and y is None) or (x is not None and y is not None and type(x) is type(y)
                                      and np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True))
        for x, y in zip(la, lb))


def _flat(c) -> list:
    if isinstance(c, dict):
        return [leaf for k in sorted(c, key=repr) for leaf in _flat(c[k])]
    if isinstance(c, (list, tuple)):
        return [leaf for v in c for leaf in _flat(v)]
    return [c]


def _close(c, g, a, rtol) -> bool:
    """The synthesized cotangent ``c`` equals the engine's gradient ``g`` of the argument ``a``."""
    try:
        cl, gl = _leaves_like(c, a), _leaves_like(g, a)
    except (TypeError, KeyError, IndexError):
        return False
    for x, y in zip(cl, gl):
        x, y = np.asarray(np.ma.getdata(x), np.float64), np.asarray(np.ma.getdata(y), np.float64)
        if x.shape != y.shape:
            return False
        if not np.allclose(x, y, rtol=rtol, atol=rtol * (1.0 + float(np.max(np.abs(y), initial=0.0)))):
            return False
    return True


def _fd_target(case: Case, ref, f):
    """What finite differences evaluate: f, or for a float32 program its float64 twin (None when
    the twin computes something else), as oracle.fd_target."""
    if not any(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in _leaves(case.args)):
        return f, case.args
    args = [trees.tmap(lambda v: v.astype(np.float64) if isinstance(v, np.ndarray) else v, a) for a in case.args]
    twin = compile_source(case.source.replace("float32", "float64"), case.filename + " float64 twin")
    try:
        value = float(_quiet(twin, *_fresh(args)))
    except Exception:
        return None
    if not abs(value - float(ref)) <= 1e-4 * max(1.0, abs(float(ref))):
        return None
    return twin, args


def args_text(args) -> str:
    return ", ".join(repr(a) if isinstance(a, (int, bool)) and not isinstance(a, float) else literal(a) for a in args)


# --- the fuzzer's programs ------------------------------------------------------------------


def fuzz_case(seed: int, prog: Program | None = None) -> Case:
    """The fuzzer's program of ``seed`` (or ``prog``), its return line in the subset: the weighted
    sum of its leaves with ``_w``'s weights, computed once as module constants ``_W0, ...``."""
    with warnings.catch_warnings():  # the generator's np.matrix arguments and masked elements
        warnings.simplefilter("ignore")
        prog = prog if prog is not None else grammar.generate(seed)
        env = grammar._execute(prog.argnames, prog.args, prog.stmts) or {}
    leaves = prog.leaves()
    # a plain array or number times its weights is what _w gives (not so a matrix, a container)
    plain = all(n in env and (type(env[n]) in (np.ndarray, float, int, bool) or isinstance(env[n], np.generic))
                for n in leaves)
    source = prog.source
    if plain and leaves:
        consts = "\n".join(f"_W{k} = _w(np.zeros({np.shape(env[n])!r}), {k})" for k, n in enumerate(leaves))
        ret = " + ".join(f"np.sum({n} * _W{k})" for k, n in enumerate(leaves))
        head, sep, tail = prog.with_(ret=ret).source.rpartition("\n\ndef f(")
        source = f"{head}\n\n{consts}\n{sep}{tail}"
    return Case("fuzz", seed, source, list(prog.args), list(prog.stmts), prog)


def _check_prefix(case: Case, o: Outcome) -> Outcome | None:
    """The statements before the one a refusal names, as a program of their own (until one is
    accepted or nothing is left)."""
    for _ in range(4):
        j = _refused_statement(case, o.message)
        if not j:
            return None
        case = replace(fuzz_case(case.seed, case.prog.with_(stmts=case.stmts[:j])), population="fuzz-prefix")
        o = check(case)
        if o.category != "refused":
            return o
    return None


def _refused_statement(case: Case, message: str) -> int | None:
    """The index of the statement holding the line a refusal names."""
    m = re.search(r":(\d+)$", message)
    if not m or case.stmts is None:
        return None
    line = int(m.group(1))
    lines = case.source.splitlines()
    first = max(i for i, ln in enumerate(lines) if ln.startswith("def f(")) + 2  # the body's first line (1-based)
    for j, s in enumerate(case.stmts):
        n = len(s.text.splitlines())
        if first <= line < first + n:
            return j
        first += n
    return None


# --- programs inside the subset ---------------------------------------------------------------


class _Skip(Exception):
    """This statement kind does not apply here."""


class _Scope:
    """What a statement being drawn may read: float names and their shapes, int names (counters,
    loop variables, int arguments) and the loop variables' lowest and highest values."""

    def __init__(self, floats: dict, ints: list, idx: dict):
        self.floats = dict(floats)
        self.ints = list(ints)
        self.idx = dict(idx)

    def copy(self) -> "_Scope":
        return _Scope(self.floats, self.ints, self.idx)


def _bshape(*shapes):
    try:
        out = np.broadcast_shapes(*shapes)
    except ValueError:
        return None
    return out if len(out) <= 2 and math.prod(out) <= 30 else None


def _fits(target):
    """Shapes that broadcast *to* ``target`` (an in-place update's right-hand side)."""
    return lambda s: _bshape(s, target) == tuple(target)


def _any(_s) -> bool:
    return True


_ANY_UFUNCS = ["sin", "cos", "tanh", "arctan", "arcsinh", "square", "negative", "deg2rad"]
_BOUNDED_UFUNCS = ["exp", "expm1", "sinh", "cosh", "exp2"]
_POSITIVE_UFUNCS = ["log", "sqrt", "log1p", "log2", "log10", "reciprocal", "cbrt"]
_UNIT_UFUNCS = ["arcsin", "arccos", "arctanh", "tan"]


class _Drawer:
    """Draws one program inside the subset, statement block by statement block, each kept only
    if the program so far runs (no floating-point error), leaves its inputs alone, keeps every
    value finite and within MAX_ABS, and keeps every compared value MARGIN from its tie."""

    def __init__(self, seed: int):
        self.seed = seed
        self.r = random.Random(f"synth subset {seed}")
        self.count = 0

    # --- arguments and the program ---

    def arguments(self):
        r = self.r
        self.m, self.n = r.randint(2, 4), r.randint(2, 5)
        shapes = [(self.n,), (self.m, self.n), (), (1, self.n), (self.m, 1)]
        k = r.choices([1, 2, 3], [0.35, 0.4, 0.25])[0]
        args = [self.value(r.choices(shapes, [4, 3, 2, 0.5, 0.5])[0]) for _ in range(k)]
        if r.random() < 0.25:  # an int argument: a loop bound and a number, no cotangent
            args.insert(r.randrange(len(args) + 1), r.randint(2, 4))
        self.argnames = [f"x{i}" for i in range(len(args))]
        self.args = args

    def value(self, shape):
        def one():
            v = 0.0
            while abs(v) < 0.05:
                v = round(self.r.uniform(-1.5, 1.5), 3)
            return v
        if shape == ():
            return one()
        return np.array([one() for _ in range(math.prod(shape))]).reshape(shape)

    def module(self, body: list, ret: str | None = None, consts: str = "") -> str:
        lines = ["    " + ln for ln in body] + [f"    return {ret or 'locals()'}"]
        return f"import numpy as np\n\n{consts}\n\ndef f({', '.join(self.argnames)}):\n" + "\n".join(lines) + "\n"

    def draw(self) -> Case:
        for _ in range(40):
            case = self.attempt()
            if case is not None:
                return case
        raise RuntimeError(f"no subset program for seed {self.seed}")

    def attempt(self) -> Case | None:
        """Arguments, then 2 to 7 statement blocks (each the first of 10 tries that runs cleanly)."""
        self.arguments()
        self.count = 0
        self.no_inplace: set = set(self.argnames)
        body: list = []
        env = self.run(body)[0]
        for _ in range(self.r.randint(2, 7)):
            for _trial in range(10):
                self.placeholder = False
                try:
                    lines = self.statement(self.scope(env), 0)
                except _Skip:
                    continue
                got = self.accept(body + lines)
                if got is not None:
                    body, env = got
                    break
        floats = [n for n in env if _float_value(env[n])]
        if not body or not floats:
            return None
        return self.finish(body, env, floats)

    def finish(self, body, env, floats) -> Case | None:
        """The return line (a scalar name, or weighted sums of recent names), checked once more;
        None when the value is not moderate or differs with ``y op= e`` read as ``y = y op e``."""
        r = self.r
        mine = [n for n in floats if n not in self.argnames] or floats
        scalars = [n for n in mine if np.shape(env[n]) == ()]
        if scalars and r.random() < 0.3:
            ret, consts = r.choice(scalars[-2:]), ""
        else:
            picked = sorted(set(r.sample(mine[-3:], min(len(mine[-3:]), r.randint(1, 3)))), key=mine.index)
            if r.random() < 0.2:
                picked.append(r.choice(floats))
            terms, consts = [], []
            for k, n in enumerate(dict.fromkeys(picked)):
                shape = np.shape(env[n])
                consts.append(f"_W{k} = np.cos(np.arange({math.prod(shape)}) * 0.7 + {k}).reshape({shape!r})")
                terms.append(f"np.sum({n} * _W{k})")
            ret, consts = " + ".join(terms), "\n".join(consts)
        source = self.module(body, ret, consts)
        source = ast.unparse(ast.parse(source)) + "\n"
        try:
            out, probe = _run(source, self.args)
            rebound, _ = _run(ast.unparse(_Rebinder().visit(ast.parse(source))), self.args)
        except Exception:
            return None
        if np.shape(out) != () or not np.isfinite(out) or abs(float(out)) > 10 * MAX_ABS or not probe.ok():
            return None
        if float(rebound) != float(out):  # an in-place update seen through another name (alias)
            return None
        return Case("subset", self.seed, source, self.args)

    def run(self, body, threshold=float("nan")):
        return _run(self.module(body), self.args, threshold)

    def accept(self, body):
        """The body with its threshold placeholder (if any) resolved, and the values it makes; or None."""
        text = "\n".join(body)
        thresholds = [None]
        if re.search(r"\b_T\b", text):
            try:
                _, probe = self.run(body)
            except Exception:
                return None
            thresholds = _thresholds(self.r, probe.lhs)
        for t in thresholds:
            lines = body if t is None else [re.sub(r"\b_T\b", repr(t), ln) for ln in body]
            try:
                env, probe = self.run(lines)
            except Exception:
                continue
            if probe.ok() and all(_moderate(v) for v in env.values()):
                return lines, env
        return None

    def scope(self, env) -> _Scope:
        floats = {n: np.shape(v) for n, v in env.items() if _float_value(v)}
        ints = [n for n, v in env.items() if type(v) is int]
        return _Scope(floats, ints, {})

    def name(self, stem="v") -> str:
        self.count += 1
        return f"{stem}{self.count}"

    # --- statements ---

    def statement(self, sc: _Scope, depth: int) -> list:
        r = self.r
        local = [n for n in sc.floats if n not in self.argnames]
        table = {"new": 4, "overwrite": 3 if local else 0.5, "aug": 3, "tuple": 1.5, "for": 2.5 if depth < 2 else 0,
                 "while": 1.2 if depth < 2 else 0, "if": 2 if depth < 3 else 0, "accumulate": 1.2 if depth < 2 else 0,
                 "pass": 0.1}
        kind = r.choices(list(table), list(table.values()))[0]
        return getattr(self, "s_" + kind)(sc, depth)

    def block(self, sc: _Scope, depth: int, lo: int = 1, hi: int = 3) -> list:
        lines: list = []
        for _ in range(self.r.randint(lo, hi)):
            for _trial in range(6):
                try:
                    lines += self.statement(sc, depth)
                    break
                except _Skip:
                    continue
        if not lines:
            raise _Skip
        return lines

    def s_pass(self, sc, depth):
        return ["pass"]

    def s_new(self, sc, depth):
        text, shape = self.expr(sc, self.r.randint(1, 3))
        v = self.name()
        sc.floats[v] = shape
        self.alias(v, text)
        return [f"{v} = {text}"]

    def alias(self, target: str, text: str) -> None:
        """``target = text`` may make two names share one array (a name, an element of a 2-d
        array): neither is then updated in place. (The synthesizer rewrites ``y += e`` as
        ``y = y + e``, which differs from Python when another name shares y's array: a known
        finding, kept out of the drawn programs.)"""
        if re.fullmatch(r"[\w.]+(\[[^\]]*\])?", text):
            self.no_inplace |= {target, text.split("[")[0]}

    def target(self, sc, inplace=False) -> str:
        local = [n for n in sc.floats if n not in self.argnames]
        cands = local if local and self.r.random() < 0.9 else list(sc.floats)
        if inplace:  # an array updated in place must be no other name's (nor an argument's) array
            cands = [n for n in cands if sc.floats[n] == () or n not in self.no_inplace]
        if not cands:
            raise _Skip
        return self.r.choice(cands[-4:] if self.r.random() < 0.6 else cands)

    def s_overwrite(self, sc, depth):
        r = self.r
        t = self.target(sc)
        shape = sc.floats[t]
        e, _ = self.expr(sc, r.randint(0, 2), _fits(shape))
        c = round(r.uniform(0.3, 0.9), 2)
        rhs = r.choice([f"{t} * {c} + {e}", f"np.tanh({t}) + {e}", f"np.sin({t} * {e})",
                        f"{t} / {self.positive(sc, 1, _fits(shape))}",
                        f"{c} * {t} - {e} * {t}", f"{e} - {t} * {c}"])
        if t in self.argnames:
            self.no_inplace.add(t)  # the argument's own array until now: keep it that way
        return [f"{t} = {rhs}"]

    def s_aug(self, sc, depth):
        r = self.r
        t = self.target(sc, inplace=True)
        shape = sc.floats[t]
        fits = _fits(shape) if shape != () or depth else _any
        op = r.choices(["+=", "-=", "*=", "/="], [3, 2, 2, 1])[0]
        if op == "/=":
            e, es = self.positive(sc, 1, fits), None
        elif op == "*=":
            e = f"(0.6 + 0.3 * np.tanh({self.expr(sc, r.randint(0, 2), fits)[0]}))"
        else:
            e, es = self.expr(sc, r.randint(0, 2), fits)
            sc.floats[t] = _bshape(shape, es) or shape
        return [f"{t} {op} {e}"]

    def s_tuple(self, sc, depth):
        r = self.r
        names = list(sc.floats)
        local = [n for n in names if n not in self.argnames]
        roll = r.random()
        if roll < 0.35 and len(local) >= 2:  # a swap, one side changed
            a, b = r.sample(local, 2)
            if sc.floats[a] != sc.floats[b]:
                raise _Skip
            e, _ = self.expr(sc, 1, _fits(sc.floats[a]))
            self.no_inplace |= {a, b}
            return [r.choice([f"{a}, {b} = {b}, {a}", f"{a}, {b} = {b}, {a} * {e}", f"{a}, {b} = {b} + {e}, {a}"])]
        e1, s1 = self.expr(sc, r.randint(0, 2))
        e2, s2 = self.expr(sc, r.randint(0, 2))
        olds = [n for n in local if n not in self.no_inplace]
        t1 = r.choice(olds) if olds and r.random() < 0.4 else self.name()
        t2 = self.name()
        self.alias(t1, e1)
        self.alias(t2, e2)
        sc.floats[t1], sc.floats[t2] = s1, s2
        return [f"{t1}, {t2} = {e1}, {e2}"]

    def loop_range(self, sc):
        """``(range text, lowest, highest)`` of a for loop (at least one iteration)."""
        r = self.r
        arrays = [n for n, s in sc.floats.items() if len(s) >= 1]
        opts = [("const", 2)]
        if arrays:
            opts += [("len", 4), ("from1", 1), ("reversed", 1), ("step", 0.7)]
        ints = [n for n in self.argnames if n in sc.ints]
        if ints:
            opts.append(("int", 2))
        kind = r.choices([o for o, _ in opts], [w for _, w in opts])[0]
        if kind == "const":
            k = r.randint(1, 4)
            return f"range({k})", 0, k - 1
        if kind == "int":
            n = r.choice(ints)
            return f"range({n})", 0, self.args[self.argnames.index(n)] - 1
        a = r.choice(arrays)
        n = sc.floats[a][0]
        if kind == "len":
            return f"range(len({a}))", 0, n - 1
        if kind == "from1":
            return f"range(1, len({a}))", 1, n - 1
        if kind == "reversed":
            return f"range(len({a}) - 1, -1, -1)", 0, n - 1
        return f"range(0, len({a}), 2)", 0, n - 1 - (n - 1) % 2

    def s_for(self, sc, depth):
        rng, lo, hi = self.loop_range(sc)
        i = self.name("i")
        inner = sc.copy()
        inner.ints.append(i)
        inner.idx[i] = (lo, hi)
        body = self.block(inner, depth + 1)
        sc.floats.update(inner.floats)  # the loop runs at least once
        return [f"for {i} in {rng}:"] + ["    " + ln for ln in body]

    def s_while(self, sc, depth):
        r = self.r
        k = self.name("k")
        bound = r.randint(1, 4)
        test = f"{k} < {bound}"
        certain = True
        if not self.placeholder and r.random() < 0.4:
            self.placeholder, certain = True, False
            test += f" and {self.scalar(sc)} {r.choice(['<', '>'])} _T"
        inner = sc.copy()
        inner.ints.append(k)
        inner.idx[k] = (0, bound - 1)
        body = self.block(inner, depth + 1)
        if certain:
            sc.floats.update(inner.floats)
        step = r.choice([f"{k} += 1", f"{k} = {k} + 1"])
        return [f"{k} = 0", f"while {test}:"] + ["    " + ln for ln in body + [step]]

    def s_if(self, sc, depth):
        test = self.test(sc)
        yes, no = sc.copy(), sc.copy()
        lines = [f"if {test}:"] + ["    " + ln for ln in self.block(yes, depth + 1, 1, 2)]
        if self.r.random() < 0.6:
            lines += ["else:"] + ["    " + ln for ln in self.block(no, depth + 1, 1, 2)]
        for n, s in yes.floats.items():
            if no.floats.get(n) == s:
                sc.floats[n] = s
        return lines

    def s_accumulate(self, sc, depth):
        r = self.r
        arrays = [n for n, s in sc.floats.items() if len(s) >= 1]
        if not arrays:
            raise _Skip
        a = r.choice(arrays)
        s, i = self.name("s"), self.name("i")
        inner = sc.copy()
        inner.ints.append(i)
        inner.idx[i] = (0, sc.floats[a][0] - 1)
        elem = f"{a}[{i}]"
        inner.floats[elem] = sc.floats[a][1:]
        g, shape = self.expr(inner, r.randint(1, 2))
        del inner.floats[elem]
        g = g if elem in g else f"{self.ufunc_of(elem)} * {g}"
        shape = _bshape(shape, sc.floats[a][1:])
        upd = r.choice([f"{s} += {g}", f"{s} = {s} + {g}", f"{s} = {s} * 0.8 + {g}"])
        sc.floats[s] = shape
        return [f"{s} = 0.0", f"for {i} in range(len({a})):", f"    {upd}"]

    def ufunc_of(self, x):
        return f"np.{self.r.choice(_ANY_UFUNCS)}({x})"

    # --- tests and expressions ---

    def scalar(self, sc) -> str:
        r = self.r
        opts = [f"np.sum({n})" for n, s in sc.floats.items() if s != ()]
        opts += [n for n, s in sc.floats.items() if s == ()]
        opts += [f"{n}[{i}]" for n, s in sc.floats.items() if len(s) == 1
                 for i, (lo, hi) in sc.idx.items() if s[0] > hi]
        if not opts or r.random() < 0.2:
            return f"np.sum({self.expr(sc, 1)[0]})"
        return r.choice(opts)

    def test(self, sc) -> str:
        r = self.r
        parts = []
        if sc.idx and r.random() < 0.5:
            i, (lo, hi) = r.choice(list(sc.idx.items()))
            parts.append(r.choice([f"{i} % 2 == 0", f"{i} > {lo}", f"{i} < {hi}", f"{i} == {hi}", f"not {i} == {lo}"]))
        ints = [n for n in self.argnames if n in sc.ints]
        if ints and r.random() < 0.15:
            parts.append(f"{r.choice(ints)} > 2")
        if not self.placeholder and (not parts or r.random() < 0.4):
            self.placeholder = True
            parts.append(f"{self.scalar(sc)} {r.choice(['<', '>', '<=', '>='])} _T")
        if not parts:
            raise _Skip
        if len(parts) == 2:
            return f"{parts[0]} {r.choice(['and', 'or'])} {parts[1]}"
        return parts[0] if r.random() < 0.85 else f"not {parts[0]}"

    def atom(self, sc, fits) -> tuple:
        r = self.r
        opts = []
        names = [n for n, s in sc.floats.items() if fits(s)]
        if names:
            recent = names[-4:]
            opts += [("name", 5)]
        elems = [(f"{n}[{i}]", s[1:]) for n, s in sc.floats.items() if len(s) >= 1 and fits(s[1:])
                 for i, (lo, hi) in sc.idx.items() if s[0] > hi]
        elems += [(f"{n}[{r.choice(['0', '-1', '1'] if s[0] > 1 else ['0', '-1'])}]", s[1:])
                  for n, s in sc.floats.items() if len(s) >= 1 and fits(s[1:])]
        if elems:
            opts.append(("elem", 3))
        sums = [n for n, s in sc.floats.items() if s != ()]
        if sums:
            opts.append(("sum", 1))
        opts += [("const", 1.5), ("int", 0.7 if sc.ints else 0), ("len", 0.02 if sums else 0), ("pi", 0.1)]
        kind = r.choices([o for o, _ in opts], [w for _, w in opts])[0]
        if kind == "name":
            n = r.choice(recent if r.random() < 0.6 else names)
            return n, sc.floats[n]
        if kind == "elem":
            return r.choice(elems)
        if kind == "sum":
            return f"np.sum({r.choice(sums)})", ()
        if kind == "int":
            return f"({r.choice(sc.ints)} + {round(r.uniform(0.5, 1.5), 2)})", ()
        if kind == "len":
            return f"len({r.choice([n for n in sums if sc.floats[n]])})", ()
        if kind == "pi":
            return "np.pi", ()
        return repr(r.choice([-1, 1]) * round(r.uniform(0.2, 2.0), 2)), ()

    def expr(self, sc, depth, fits=_any) -> tuple:
        """``(text, shape)`` of an expression whose atoms' shapes satisfy ``fits``."""
        r = self.r
        if depth <= 0 or r.random() < 0.2:
            return self.atom(sc, fits)
        kind = r.choices(["bin", "div", "pow", "neg", "ufunc", "bounded", "positive", "unit", "sum", "maxmin", "abs",
                          "binufunc"], [7, 2, 2, 1, 4, 2, 2, 1, 1, 0.8, 0.5, 1.5])[0]
        if kind == "sum":
            return f"np.sum({self.expr(sc, depth - 1, fits)[0]})", ()
        a, sa = self.expr(sc, depth - 1, fits)
        if kind == "bin":
            b, sb = self.expr(sc, depth - 1, fits)
            s = _bshape(sa, sb)
            if s is None:
                return a, sa
            return f"({a} {r.choice('+-*')} {b})", s
        if kind == "div":
            b, sb = self.positive(sc, depth - 1, fits, shape=True)
            s = _bshape(sa, sb)
            return (f"({a} / {b})", s) if s is not None else (a, sa)
        if kind == "pow":
            roll = r.random()
            if roll < 0.5:
                return f"({a}) ** {r.choice([2, 3, 2.0])}", sa
            p, sp = self.positive(sc, depth - 1, fits, shape=True, base=a, base_shape=sa)
            if roll < 0.8:
                return f"{p} ** {r.choice([0.5, 1.5, -0.5, -1.0])}", sp
            e = f"(0.5 * np.sin({a}))"
            b, sb = self.positive(sc, depth - 1, fits, shape=True)
            s = _bshape(sb, sa)
            return (f"{b} ** {e}", s) if s is not None else (a, sa)
        if kind == "neg":
            return f"(-{a})", sa
        if kind == "ufunc":
            return f"np.{r.choice(_ANY_UFUNCS)}({a})", sa
        if kind == "bounded":
            return f"np.{r.choice(_BOUNDED_UFUNCS)}({self.bound(a)})", sa
        if kind == "positive":
            p, sp = self.positive(sc, depth - 1, fits, shape=True, base=a, base_shape=sa)
            return f"np.{r.choice(_POSITIVE_UFUNCS)}({p})", sp
        if kind == "unit":
            return f"np.{r.choice(_UNIT_UFUNCS)}(0.8 * np.tanh({a}))", sa
        if kind == "abs":
            return f"np.{r.choice(['abs', 'absolute', 'fabs'])}({a})", sa
        b, sb = self.expr(sc, depth - 1, fits)
        s = _bshape(sa, sb)
        if s is None:
            return a, sa
        if kind == "maxmin":
            return f"np.{r.choice(['maximum', 'minimum', 'fmax', 'fmin'])}({a}, {b})", s
        fn = r.choice(["add", "subtract", "multiply", "logaddexp", "hypot", "arctan2", "divide", "power"])
        if fn in ("add", "subtract", "multiply", "logaddexp"):
            return f"np.{fn}({a}, {b})", s
        p = self.positive(sc, depth - 1, fits, base=b)
        if fn == "power":
            return f"np.power({p}, np.tanh({a}))", s
        return f"np.{fn}({a}, {p})", s

    def bound(self, a) -> str:
        return self.r.choice([f"np.sin({a})", f"np.tanh({a})", f"0.5 * np.cos({a})", f"-({a}) * ({a}) * 0.1"])

    def positive(self, sc, depth, fits, shape=False, base=None, base_shape=None):
        """An expression whose values are all >= 0.5 (of ``base``, or a new one)."""
        r = self.r
        if base is None:
            base, base_shape = self.expr(sc, max(depth, 0), fits)
        c = round(r.uniform(0.5, 1.5), 2)
        text = r.choice([f"({base} * {base} + {c})", f"np.exp(np.tanh({base}))", f"(1.0 + np.square({base}))",
                         f"np.sqrt({base} ** 2 + {c})", f"np.cosh(np.sin({base}))", f"({c} + np.sin({base}) ** 2)"])
        return (text, base_shape) if shape else text


def _float_value(v) -> bool:
    return (isinstance(v, np.ndarray) and v.dtype.kind == "f") or type(v) is float or isinstance(v, np.floating)


def _moderate(v) -> bool:
    if not _float_value(v):
        return True
    a = np.asarray(v)
    return bool(np.all(np.isfinite(a)) and np.max(np.abs(a), initial=0.0) <= MAX_ABS)


def _thresholds(r: random.Random, values: list) -> list:
    """Thresholds to try for a comparison that saw ``values``: midpoints of the gaps at least
    2 * MARGIN wide between them (both branches taken), then beyond them all."""
    vals = sorted(set(round(float(v), 6) for v in values))
    if not vals:
        return [round(r.uniform(-1.0, 1.0), 3)]
    mids = [round((a + b) / 2, 3) for a, b in zip(vals, vals[1:]) if b - a >= 2 * MARGIN + 0.02]
    r.shuffle(mids)
    return mids[:3] + [round(vals[-1] + r.uniform(0.3, 1.0), 3), round(vals[0] - r.uniform(0.3, 1.0), 3)]


class _Probe:
    """Called around every comparison's left operand (and maximum's, abs's first one) by the
    probed program: the smallest distance from a tie, and the values compared with the threshold
    placeholder ``_T`` (NaN while it is unknown)."""

    def __init__(self):
        self.gap = math.inf
        self.lhs: list = []

    def __call__(self, left, right):
        lv, rv = np.asarray(left), np.asarray(right)
        if lv.dtype.kind in "iub" and rv.dtype.kind in "iub":
            return left
        if np.any(np.isnan(rv)):
            self.lhs.extend(np.ravel(lv).tolist())
        else:
            self.gap = min(self.gap, float(np.min(np.abs(lv.astype(float) - rv.astype(float)), initial=math.inf)))
        return left

    def ok(self) -> bool:
        return self.gap >= MARGIN


class _Prober(ast.NodeTransformer):
    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1:
            node.left = ast.Call(ast.Name("_cmp", ast.Load()), [node.left, copy.deepcopy(node.comparators[0])], [])
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        name = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        if name in ("maximum", "minimum", "fmax", "fmin") and len(node.args) == 2:
            node.args[0] = ast.Call(ast.Name("_cmp", ast.Load()), [node.args[0], copy.deepcopy(node.args[1])], [])
        elif name in ("abs", "absolute", "fabs") and len(node.args) == 1:
            node.args[0] = ast.Call(ast.Name("_cmp", ast.Load()), [node.args[0], ast.Constant(0.0)], [])
        return node


class _Rebinder(ast.NodeTransformer):
    """``y op= e`` as ``y = y op e``: the synthesizer's reading of an augmented assignment."""

    def visit_AugAssign(self, node):
        if not isinstance(node.target, ast.Name):
            return node
        value = ast.BinOp(ast.Name(node.target.id, ast.Load()), node.op, node.value)
        return ast.fix_missing_locations(ast.copy_location(ast.Assign([ast.Name(node.target.id, ast.Store())], value),
                                                           node))


def _run(source: str, args: list, threshold: float = float("nan")):
    """Run a drawn program with its comparisons probed; floating-point errors raise."""
    tree = ast.fix_missing_locations(_Prober().visit(ast.parse(source)))
    probe = _Probe()
    ns = {"_cmp": probe, "_T": threshold}
    exec(compile(tree, "<synth subset draw>", "exec"), ns)  # noqa: S102 - a generated program
    passed = _fresh(args)
    with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = ns["f"](*passed)
    if _modified(passed, args):
        raise ValueError("the program writes into its arguments")
    return out, probe


def subset_case(seed: int) -> Case:
    """A program inside the synthesizer's subset (the same one for the same seed)."""
    return _Drawer(seed).draw()


# --- samples and the command line -------------------------------------------------------------


def _one(job) -> Outcome:
    population, seed = job
    try:
        with _time_limit(PROGRAM_TIMEOUT):
            return check_synthesis(seed, population)
    except TimeoutError as e:  # a hang in the rule or the engine
        return Outcome(population, seed, "crash", "timeout", message=_error(e))
    except Exception as e:  # a bug in this module or the generator: reported, not fatal
        return Outcome(population, seed, "invalid", "generator", message=_error(e))


def sample(population: str, seeds, jobs: int = 1) -> list:
    jobs_ = [(population, s) for s in seeds]
    if jobs <= 1:
        return [_one(j) for j in jobs_]
    import multiprocessing as mp

    with mp.get_context("fork").Pool(jobs) as pool:
        return list(pool.imap(_one, jobs_, chunksize=16))


_FEATURES = {
    "for": lambda n: isinstance(n, ast.For), "while": lambda n: isinstance(n, ast.While),
    "if": lambda n: isinstance(n, ast.If), "else": lambda n: isinstance(n, ast.If) and bool(n.orelse),
    "nested loop": lambda n: isinstance(n, (ast.For, ast.While)) and any(
        isinstance(m, (ast.For, ast.While)) for b in n.body for m in ast.walk(b)),
    "augmented": lambda n: isinstance(n, ast.AugAssign), "tuple unpacking": lambda n: isinstance(n, ast.Assign)
    and isinstance(n.targets[0], ast.Tuple), "x[i]": lambda n: isinstance(n, ast.Subscript),
    "np.sum": lambda n: isinstance(n, ast.Attribute) and n.attr == "sum", "**": lambda n: isinstance(n, ast.BinOp)
    and isinstance(n.op, ast.Pow), "/": lambda n: isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div),
    "and/or/not": lambda n: isinstance(n, ast.BoolOp) or isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not),
}


def features(source: str) -> set:
    """The constructs ``f`` uses (of _FEATURES), and how its loops bind names: "overwritten in a
    loop" when a loop body assigns a name bound before the loop."""
    tree = ast.parse(source)
    fdef = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "f"][-1]
    nodes = list(ast.walk(fdef))
    out = {k for k, test in _FEATURES.items() if any(test(n) for n in nodes)}
    bound = {a.arg for a in fdef.args.args}
    for s in fdef.body:
        if isinstance(s, (ast.For, ast.While)):
            inner = {n.id for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            if inner & bound:
                out.add("overwritten in a loop")
        bound |= {t.id for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) for t in [n]}
    return out


def findings(outcomes: list) -> list:
    """The failed outcomes, with the failed prefixes of refused fuzz programs."""
    return [x for o in outcomes for x in (o, o.prefix) if x is not None and x.failed]


def summary(outcomes: list, top: int = 10) -> str:
    counts = Counter(o.category for o in outcomes)
    n = max(len(outcomes), 1)
    accepted = sum(o.accepted for o in outcomes)
    pop = outcomes[0].population if outcomes else "?"
    lines = [f"{pop}: {len(outcomes)} programs, accepted {accepted} ({100 * accepted / n:.1f}%): "
             + ", ".join(f"{c} {counts[c]}" for c in CATEGORIES if counts.get(c))]
    prefixes = [o.prefix for o in outcomes if o.prefix is not None]
    if prefixes:
        pc = Counter(p.category for p in prefixes)
        lines.append(f"  prefixes of refused programs checked: {len(prefixes)}: "
                     + ", ".join(f"{c} {pc[c]}" for c in CATEGORIES if pc.get(c)))
    if pop == "subset":
        feats = Counter(ft for o in outcomes if o.accepted for ft in features(o.source))
        lines.append("  accepted programs using: " + ", ".join(f"{k} {feats[k]}" for k in list(_FEATURES)
                                                              + ["overwritten in a loop"]))
    refusals = Counter(o.construct for o in outcomes if o.category == "refused")
    if refusals:
        lines.append(f"  refusals by construct (top {top} of {len(refusals)}):")
        lines += [f"    {k:6d} {100 * k / n:5.1f}%  {c}" for c, k in refusals.most_common(top)]
    bad = findings(outcomes)
    invalid = [o for o in outcomes if o.category == "invalid"]
    for o in invalid[:3]:
        lines.append(f"  invalid: seed {o.seed}: {o.check}: {o.message}")
    lines.append(f"  findings: {len(bad)}" + (" (by failure and message; seeds)" if bad else ""))
    groups: dict = {}
    for o in bad:
        message = construct(re.sub(r"'[A-Za-z_]+\d+'", "'<name>'", o.message))
        groups.setdefault(f"{o.category} ({o.check}): {message[:90]}", []).append(o)
    for k, os_ in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        seeds = ", ".join(f"{o.seed}{'p' if o.population.endswith('prefix') else ''}" for o in os_[:6])
        lines.append(f"    {len(os_):6d}  {k}  [{seeds}{', ...' if len(os_) > 6 else ''}]")
    return "\n".join(lines)


def shrink(outcome: Outcome, seconds: float = 30.0) -> Outcome:
    """A smaller program failing the same way: terms of the returned sum and statements of ``f``
    removed (a loop or an if replaced by its body) one at a time while the failure stays."""
    deadline = time.monotonic() + seconds
    case = replace(outcome.case, stmts=None, prog=None)
    best, progress = outcome, True
    while progress and time.monotonic() < deadline:
        progress = False
        tree = ast.parse(best.source)
        spots = [(b, k) for b, body in enumerate(_bodies(tree)) for k in range(len(body))
                 if not isinstance(body[k], ast.Return)]
        edits = [("return", None, k) for k in range(_terms(tree))] + \
            [(b, how, k) for b, k in reversed(spots) for how in ("drop", "unwrap")]
        for b, how, k in edits:
            smaller = copy.deepcopy(tree)
            if b == "return":
                _drop_term(smaller, k)
            else:
                body = _bodies(smaller)[b]
                s = body[k]
                if how == "unwrap" and not isinstance(s, (ast.For, ast.While, ast.If)):
                    continue
                body[k:k + 1] = [] if how == "drop" else s.body + getattr(s, "orelse", [])  # a loop or if: its body
                if not body:
                    body.append(ast.Pass())
            try:
                with _time_limit(10):  # a while loop without its counter's step does not end
                    o = check(replace(case, source=ast.unparse(smaller) + "\n"))
            except TimeoutError:
                continue
            if o.key == outcome.key:
                best, progress = o, True
                break
            if time.monotonic() > deadline:
                break
    return best


def _return_sum(tree):
    fdef = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "f"][-1]
    return fdef.body[-1]


def _flat_terms(node) -> list:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _flat_terms(node.left) + [node.right]
    return [node]


def _terms(tree) -> int:
    """How many terms the return's sum has (1 when it is no sum: nothing to drop)."""
    n = len(_flat_terms(_return_sum(tree).value))
    return n if n > 1 else 0


def _drop_term(tree, k: int) -> None:
    ret = _return_sum(tree)
    terms = _flat_terms(ret.value)
    del terms[k]
    value = terms[0]
    for t in terms[1:]:
        value = ast.BinOp(value, ast.Add(), t)
    ret.value = value


def _bodies(tree) -> list:
    """The statement lists of ``f`` (its body, loops' and branches' bodies), in a fixed order."""
    fdef = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "f"][-1]
    out = []
    for child in ast.walk(fdef):
        for attr in ("body", "orelse"):
            b = getattr(child, attr, None)
            if isinstance(b, list) and b and isinstance(b[0], ast.stmt):
                out.append(b)
    return out


@contextlib.contextmanager
def _time_limit(seconds: int):
    """TimeoutError after ``seconds`` (where signal.alarm exists; no limit elsewhere)."""
    if not hasattr(signal, "alarm"):
        yield
        return

    def _timeout(signum, frame):
        raise TimeoutError(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, _timeout)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz.synth", description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=300, help="programs per population")
    ap.add_argument("--start", type=int, default=0, help="first seed")
    ap.add_argument("--population", choices=POPULATIONS + ("both",), default="both")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--shrink", type=float, default=20.0, help="seconds to shrink each finding (0: do not)")
    a = ap.parse_args(argv)
    pops = POPULATIONS if a.population == "both" else (a.population,)
    failed = False
    for pop in pops:
        t0 = time.monotonic()
        outcomes = sample(pop, range(a.start, a.start + a.seeds), a.jobs)
        print(summary(outcomes) + f"\n  ({time.monotonic() - t0:.0f} s)")
        bad = findings(outcomes)
        for o in bad[:10]:
            small = shrink(o, a.shrink) if a.shrink > 0 else o
            print("\n" + small.repro())
        failed |= bool(bad)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
