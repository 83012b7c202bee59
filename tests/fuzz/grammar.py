"""The program generator: ``generate(seed) -> Program``.

A program is grown one statement at a time. After each candidate statement the whole program so
far is run with plain NumPy; the statement is kept only if that works, leaves the arguments
untouched, and every value stays finite and moderate. Statement kinds (``KINDS``, registered by
the ``kinds_*`` modules) read those NumPy values to keep away from kinks and domain edges.
"""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import scipy.integrate as si
import scipy.interpolate as sint
import scipy.linalg as sl
import scipy.optimize as so
import scipy.signal as ss
import scipy.special as sp  # a test dependency: scipy.special's native rules are fuzzed
import scipy.stats as st

from . import kinds_containers, kinds_control, kinds_elementwise, kinds_math, kinds_scipy, kinds_shape, trees  # noqa: F401
from .ctx import KINDS, MAX_SIZE, NAMESPACE, SHAPE_KINDS, Ctx, Skip
from .library_specs import _ode_decay, _ode_layers
from .program import Program, Stmt, fresh, is_float

MAX_ABS = 1e3
_REGISTERED: list = []
GENERATOR_ERRORS: dict = {}  # "kind: exception" -> count (bugs in the generator itself)
REJECTED = {"numpy-error": 0, "bad-values": 0}  # candidate statements thrown away while generating
_GLOBALS = {"np": np, "math": math, "sp": sp, "st": st, "ss": ss, "sl": sl, "si": si, "so": so, "sint": sint,
            "_ode_decay": _ode_decay, "_ode_layers": _ode_layers}
NAMESPACE.update(_GLOBALS)
SHAPES_SHARE = 0.3  # the share of "shapes" programs among a campaign's seeds (generate(seed))


def kinds(shapes: bool = False) -> list:
    """The names of all statement kinds (with those of "shapes" programs)."""
    return sorted(KINDS) + (sorted(SHAPE_KINDS) if shapes else [])


def is_shapes(seed: int) -> bool:
    """Whether ``generate(seed)`` draws a "shapes" program: containers holding traced values
    given to library rules and as differentiated arguments, ndarray subclasses, mixed joins."""
    return random.Random(f"shapes {seed}").random() < SHAPES_SHARE


def generate(seed: int, max_stmts: int = 12, shapes: bool | None = None) -> Program:
    """A valid random program for ``seed`` (the same program for the same seed); ``shapes``:
    a classic program (False), a "shapes" one (True), or as ``is_shapes(seed)`` says (None).
    A classic program is the same whatever the shapes kinds are."""
    shapes = is_shapes(seed) if shapes is None else shapes
    r = random.Random(seed if not shapes else f"shapes program {seed}")
    for attempt in range(50):
        prog = _build(r, seed, max_stmts, shapes)
        if prog is not None and runs_cleanly(prog):
            prog.notes["regenerated"] = attempt
            prog.notes["shapes"] = shapes
            return prog
    raise RuntimeError(f"no valid program for seed {seed}")


def _shape_args(r: random.Random, argnames: list, args: list):
    """A "shapes" program's arguments: some packed into a container (OrderedDict, dict and list
    subclasses, dataclasses, namedtuples, nested) or made an np.matrix or a masked array; and the
    statements that unpack them."""
    args = list(args)
    unpack: list = []  # (argument name, access suffix or conversion template)
    roll = r.random()
    if roll < 0.45:
        k = r.randrange(len(args))
        taken = [args[k]] + [a for a in args[k + 1:k + 2] if r.random() < 0.5]
        args[k:k + len(taken)] = [trees.wrap(r, taken)]
        argnames[:] = [f"x{i}" for i in range(len(args))]
        for suffix, leaf in trees.paths(args[k]):
            unpack.append((argnames[k], suffix))
    elif roll < 0.75:
        cands = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.ndim >= 1]
        if cands:
            k = r.choice(cands)
            a = args[k]
            if a.ndim == 2 and r.random() < 0.5:
                args[k] = np.matrix(a)
                conv = r.choice(["np.asarray({x} * 1.0)", "np.asarray({x} @ {x}.T)", "np.asarray({x} + 0.5)",
                                 "np.asarray(np.multiply({x}, {x}))", "np.sum({x}, axis=0).A1 * 1.0"])
            else:
                mask = np.zeros(a.shape, bool)
                mask.flat[r.randrange(a.size)] = a.size > 1
                args[k] = np.ma.array(a, mask=mask)
                conv = r.choice(["{x} * 1.0", "np.ma.filled({x} * 2.0, 0.0)", "np.ma.getdata({x}) * 1.0",
                                 "{x}.sum(axis=0) * 1.0", "np.sin({x})", "np.ma.sum({x} * {x})"])
            unpack.append((argnames[k], "=" + conv))
    return args, unpack


def _args(r: random.Random, f32: bool):
    n = r.choices([1, 2, 3], [0.45, 0.35, 0.2])[0]
    names, values = [], []
    grid = np.round(np.linspace(-1.79, 1.81, 181), 3)  # no exact 0.0: zeros make degenerate inputs
    for i in range(n):
        names.append(f"x{i}")
        if i > 0 and r.random() < 0.2:
            values.append(round(r.uniform(-1.5, 1.5), 3) or 0.5)  # a Python float argument
            continue
        nd = r.choices([0, 1, 2, 3], [0.08, 0.37, 0.4, 0.15])[0]
        shape = tuple(r.randint(1, 4) for _ in range(nd))
        size = int(np.prod(shape))
        picked = np.array(r.sample(range(len(grid)), size), dtype=int)
        a = grid[picked].reshape(shape).astype(np.float32 if f32 else np.float64)
        values.append(a)
    return names, values


def _build(r, seed, max_stmts, shapes=False):
    f32 = r.random() < 0.08
    argnames, args = _args(r, f32)
    stmts: list = []
    counter = 0
    table = dict(KINDS)
    if shapes:
        table.update(SHAPE_KINDS)
        args, unpack = _shape_args(r, argnames, args)
        for name, suffix in unpack:
            counter += 1
            rhs = suffix[1:].format(x=name) if suffix.startswith("=") else name + suffix
            stmts.append(Stmt("unpack", f"v{counter} = {rhs}"))
    env = _execute(argnames, args, stmts) if stmts else dict(zip(argnames, [fresh(a) for a in args]))
    if env is None:
        return None
    names = list(argnames) + [n for n in env if n.startswith("v") and is_float(env[n]) and not _matrix(env[n])]
    names_w = sorted(table)
    weights = [table[k][1] for k in names_w]
    for _ in range(r.randint(3, max_stmts)):
        for _trial in range(12):
            name = r.choices(names_w, weights)[0]
            ctx = Ctx(r, env, names, f32, counter, argnames)
            try:
                text = table[name][0](ctx)
            except Skip:
                continue
            except Exception as e:  # a bug in a statement kind: count it, do not stop the campaign
                key = f"{name}: {type(e).__name__}: {e}"[:160]
                GENERATOR_ERRORS[key] = GENERATOR_ERRORS.get(key, 0) + 1
                continue
            stmt = Stmt(name, text)
            new_env = _execute(argnames, args, stmts + [stmt])
            if new_env is None or not _acceptable(new_env, stmt, ctx.made, names, args, argnames):
                REJECTED["numpy-error" if new_env is None else "bad-values"] += 1
                continue
            stmts.append(stmt)
            env = new_env
            names += [n for n in ctx.made if n in env and is_float(env[n])]
            counter = ctx.counter
            break
    if not stmts:
        return None
    return Program(seed=seed, argnames=argnames, args=args, stmts=stmts, notes={"f32": f32})


def _execute(argnames, args, stmts):
    """Run the statements with NumPy and return all local variables, or None if that fails."""
    body = "\n".join("    " + ln for s in stmts for ln in s.text.splitlines())
    src = f"def _t({', '.join(argnames)}):\n{body}\n    return locals()\n"
    try:
        code = compile(src, "<generate>", "exec")
        ns = dict(_GLOBALS)
        exec(code, ns)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ns["_t"](*[fresh(a) for a in args])
    except Exception:
        return None


def _acceptable(env, stmt, made, names, args, argnames) -> bool:
    for n, a in zip(argnames, args):
        if isinstance(a, np.ndarray) and not np.array_equal(env[n], a):
            return False  # the statement wrote into an argument
    for n in set(stmt.defines) | set(made) | set(names):
        if n not in env:
            return False
        v = env[n]
        if isinstance(v, (np.ndarray, np.generic)) and v.dtype.kind == "c":
            return False
        if _matrix(v) and n not in argnames:  # np.matrix semantics (`*` is a product) would break the weighted return line
            return False
        if not is_float(v):
            continue
        a = np.asarray(v)
        if a.size == 0 or a.size > MAX_SIZE * 2 or a.ndim > 4:
            return False
        if not np.all(np.isfinite(a)) or np.abs(a).max() > MAX_ABS:
            return False
    return True


def _matrix(v) -> bool:
    return isinstance(v, np.matrix)


def within_limits(prog: Program) -> bool:
    """Whether every value the program makes stays finite and moderate, as generated ones do
    (the shrinker must not wander into huge values, where finite differences mean little)."""
    env = _execute(prog.argnames, prog.args, prog.stmts)
    if env is None:
        return False
    for v in env.values():
        if is_float(v):
            a = np.asarray(v)
            if a.size and (not np.all(np.isfinite(a)) or np.abs(a).max() > MAX_ABS):
                return False
    return True


def runs_cleanly(prog: Program) -> bool:
    """Whether the rendered program returns a finite scalar with NumPy and leaves its inputs alone."""
    try:
        f = compile_program(prog)
        args = [fresh(a) for a in prog.args]
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = f(*args)
    except Exception:
        return False
    if np.shape(out) != () or not np.isfinite(out):
        return False
    return all(np.array_equal(a, b) for a, b in zip(args, prog.args) if isinstance(b, np.ndarray))


def compile_program(prog: Program, filename: str | None = None):
    """The function ``f`` of ``prog`` (its source is registered with linecache, so adcli's error
    messages can quote the line)."""
    import linecache

    filename = filename or f"<fuzz {prog.seed}>"
    src = prog.source
    _REGISTERED.append(filename)
    while len(_REGISTERED) > 64:  # a campaign compiles many programs: keep the cache small
        linecache.cache.pop(_REGISTERED.pop(0), None)
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns: dict = {}
    exec(compile(src, filename, "exec"), ns)
    return ns["f"]
