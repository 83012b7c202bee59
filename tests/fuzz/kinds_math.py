"""Statement kinds: reductions, contractions (matmul, einsum, ...), linear algebra, and the NumPy
functions adcli derives from their bodies."""

from __future__ import annotations

import numpy as np

from .ctx import MAX_SIZE, Skip, kind, unique_extreme


def _axis(c, nd: int, tuples=True):
    """An axis argument for an array of rank ``nd``: None, int, negative int or tuple."""
    if nd == 0:
        return None
    roll = c.r.random()
    if roll < 0.25:
        return None
    if roll < 0.55 or not tuples or nd < 2:
        return c.r.randrange(nd)
    if roll < 0.75:
        return -c.r.randint(1, nd)
    return tuple(sorted(c.r.sample(range(nd), c.r.randint(1, nd))))


def _kw(axis, keepdims):
    out = "" if axis is None else f", axis={axis!r}"
    return out + (", keepdims=True" if keepdims else "")


@kind("reduce", 4)
def _reduce(c):
    v = c.pick_nd(0, 4)
    a = c.val(v)
    axis = _axis(c, a.ndim)
    keep = c.r.random() < 0.3
    fn = c.choice(["sum", "sum", "mean", "prod", "max", "min", "var", "std"])
    if fn in ("max", "min"):
        ax = axis if not isinstance(axis, tuple) else None
        if not unique_extreme(a, ax):
            raise Skip
        axis = ax
    if fn == "prod" and np.abs(a).max() > 3:
        raise Skip
    if fn in ("var", "std") and (np.var(a, axis=axis) < 0.01).any():
        raise Skip
    if c.r.random() < 0.4:
        return f"{c.new()} = {v}.{fn}({_kw(axis, keep)[2:]})"
    return f"{c.new()} = np.{fn}({v}{_kw(axis, keep)})"


@kind("cumulative", 1.5)
def _cumulative(c):
    v = c.pick_nd(1, 3, lambda a: np.abs(a).max() < 3)
    nd = c.val(v).ndim
    fn = c.choice(["cumsum", "cumprod"])
    axis = c.choice([None, c.r.randrange(-nd, nd)]) if nd > 1 else c.choice([None, 0, -1])
    form = c.choice([f"np.{fn}({v}{'' if axis is None else f', axis={axis}'})",
                     f"{v}.{fn}({'' if axis is None else f'axis={axis}'})"])
    return f"{c.new()} = {form}"


@kind("ufunc-reduce")
def _ufunc_reduce(c):
    v = c.pick_nd(1, 3, lambda a: np.abs(a).max() < 3)
    nd = c.val(v).ndim
    ax = c.r.randrange(-nd, nd)
    return f"{c.new()} = " + c.choice([f"np.add.reduce({v})", f"np.add.reduce({v}, axis={ax})",
                                       f"np.multiply.reduce({v}, axis={ax})", f"np.add.accumulate({v}, axis={ax})"])


@kind("average")
def _average(c):
    v = c.pick_nd(1, 3)
    a = c.val(v)
    ax = c.r.randrange(a.ndim)
    w = c.lit((a.shape[ax],), 0.5, 2.0)
    return f"{c.new()} = " + c.choice([f"np.average({v})", f"np.average({v}, axis={ax}, weights={w})",
                                       f"np.average({v}, weights={c.lit(a.shape, 0.5, 2.0)})"])


@kind("norm")
def _norm(c):
    v = c.pick_nd(1, 3, lambda a: np.abs(a).min() > 0.05)
    nd = c.val(v).ndim
    opts = [f"np.linalg.norm({v})", f"np.linalg.norm({v}, axis={c.r.randrange(nd)})"]
    if nd == 1:
        opts.append(f"np.linalg.norm({v}, 1)")
    if nd == 2:
        opts.append(f"np.linalg.norm({v}, 'fro')")
    return f"{c.new()} = {c.choice(opts)}"


# --- contractions ---
def _pairs(c, test):
    """Pairs of variables (names) for which ``test(a, b)`` gives a small result."""
    names = c.floats(lambda a: a.ndim >= 1)
    out = []
    for x in names:
        for y in names:
            try:
                with np.errstate(all="ignore"):
                    r = test(np.asarray(c.val(x)), np.asarray(c.val(y)))
            except Exception:
                continue
            if np.size(r) <= MAX_SIZE and np.ndim(r) <= 4:
                out.append((x, y))
    if not out:
        raise Skip
    return c.choice(out[-12:])


def _lit_partner(c, a, left=True):
    """A literal operand that contracts with variable ``a`` (a @ lit if left)."""
    shape = c.val(a).shape
    k = shape[-1] if left else (shape[-2] if len(shape) >= 2 else shape[0])
    m = c.r.randint(1, 3)
    s = c.choice([(k,), (k, m)]) if left else c.choice([(k,), (m, k)])
    return c.lit(s)


@kind("matmul", 3)
def _matmul(c):
    if c.r.random() < 0.6:
        a, b = _pairs(c, np.matmul)
    else:
        a = c.pick_nd(1, 3)
        b = _lit_partner(c, a)
        if c.r.random() < 0.3:
            return f"{c.new()} = {_lit_partner(c, a, left=False)} @ {a}"
    return f"{c.new()} = " + c.choice([f"{a} @ {b}", f"np.matmul({a}, {b})"])


@kind("dot")
def _dot(c):
    a, b = _pairs(c, np.dot)
    return f"{c.new()} = " + c.choice([f"np.dot({a}, {b})", f"{a}.dot({b})"])


@kind("inner-outer")
def _inner_outer(c):
    fn = c.choice(["inner", "outer", "vdot"])
    test = {"inner": np.inner, "outer": np.outer, "vdot": lambda a, b: np.vdot(a, b)}[fn]
    a, b = _pairs(c, test)
    return f"{c.new()} = np.{fn}({a}, {b})"


@kind("tensordot")
def _tensordot(c):
    n = c.r.randint(0, 2)
    a, b = _pairs(c, lambda x, y: np.tensordot(x, y, n))
    return f"{c.new()} = np.tensordot({a}, {b}, {n})"


@kind("tensordot-axes")
def _tensordot_axes(c):
    def test(x, y):
        return np.tensordot(x, y, ([0], [-1]))

    a, b = _pairs(c, test)
    return f"{c.new()} = np.tensordot({a}, {b}, axes=([0], [-1]))"


@kind("multi-dot")
def _multi_dot(c):
    a = c.pick_nd(2, 2)
    n, k = c.val(a).shape
    return f"{c.new()} = np.linalg.multi_dot([{c.lit((c.r.randint(1, 3), n))}, {a}, {c.lit((k, 2))}])"


def _kron_small(x, y):
    """np.kron of operands of equal rank (what adcli derives) with a small result, else an error."""
    if x.ndim != y.ndim or x.size * y.size > 32:
        raise ValueError("not a kron adcli derives, or too big")
    return np.kron(x, y)


@kind("kron")
def _kron(c):
    a, b = _pairs(c, _kron_small)
    return f"{c.new()} = np.kron({a}, {b})"


@kind("einsum", 5)
def _einsum(c):
    k = c.choice([1, 2, 2, 3])
    ops = [c.pick_nd(1, 3, lambda a: a.size <= 16) for _ in range(k)]
    sizes, specs, ell = {}, [], c.r.random() < 0.15
    letters = "abcdefg"
    for op in ops:
        shape = c.val(op).shape
        spec = ""
        lead = c.r.randint(0, len(shape)) if ell else 0
        for n in shape[lead:]:
            reuse = [L for L in sizes if (sizes[L] == n or n == 1 or sizes[L] == 1) and (L not in spec or sizes[L] == n)]
            if reuse and c.r.random() < 0.55:
                L = c.choice(reuse)
            else:
                L = letters[len(sizes)] if len(sizes) < len(letters) else c.choice(list(sizes))
            sizes[L] = max(sizes.get(L, 1), n)
            spec += L
        specs.append(("..." if ell else "") + spec)
    used = list(dict.fromkeys("".join(s.replace(".", "") for s in specs)))
    if c.r.random() < 0.2:
        sub = ",".join(specs)  # implicit output
    else:
        out = c.r.sample(used, c.r.randint(0, len(used)))
        sub = ",".join(specs) + "->" + ("..." if ell else "") + "".join(out)
    ops = [c.lit(c.val(o).shape) if i and c.r.random() < 0.15 else o for i, o in enumerate(ops)]
    return f"{c.new()} = np.einsum('{sub}', {', '.join(ops)})"


# --- linear algebra on well-conditioned matrices built from traced values ---
def _spd(c, A):
    """Two lines: A = an SPD matrix built from a traced 2-d variable; returns (lines, n)."""
    m = c.pick_nd(2, 2, lambda a: a.shape[0] <= 4)
    n = c.val(m).shape[0]
    return f"{A} = np.tanh({m}) @ np.tanh({m}).T + {float(n + 1)!r} * np.eye({n})", n


@kind("linalg-spd", 3)
def _linalg_spd(c):
    A = c.new()
    line, n = _spd(c, A)
    out = c.new()
    b = c.choice([c.lit((n,)), c.lit((n, 2))] + c.floats(lambda a: a.ndim in (1, 2) and a.shape[0] == n))
    op = c.choice([f"np.linalg.solve({A}, {b})", f"np.linalg.inv({A})", f"np.linalg.det({A})",
                   f"np.linalg.slogdet({A})[1]", f"np.linalg.slogdet({A}).logabsdet", f"np.linalg.cholesky({A})",
                   f"np.linalg.inv({A}) @ {b}", f"np.trace({A})", f"np.linalg.matrix_power({A} * 0.3, {c.r.randint(0, 3)})",
                   f"np.linalg.qr({A})[1]", f"np.linalg.pinv({A})"])
    if "qr" in op:  # R's signs follow LAPACK's reflectors, which jump where a column is already reduced
        a = c.ev(line.split(" = ", 1)[1])
        if min((np.linalg.norm(a[j + 1:, j]) for j in range(n - 1)), default=1.0) < 0.1:
            raise Skip
    return f"{line}\n{out} = {op}"


@kind("linalg-eigh", 1.5)
def _linalg_eigh(c):
    A = c.new()
    line, n = _spd(c, A)
    line += f" + np.diag(np.arange({n}) * 2.5)"
    w = np.linalg.eigvalsh(c.ev(line.split(" = ", 1)[1]))
    if n > 1 and np.min(np.diff(w)) < 0.2:
        raise Skip
    op = c.choice([f"np.linalg.eigvalsh({A})", f"np.linalg.eigh({A})[0]", f"np.linalg.eigh({A}).eigenvalues",
                   f"np.linalg.eigh({A})[1] ** 2"])
    return f"{line}\n{c.new()} = {op}"


@kind("linalg-svd", 1.5)
def _linalg_svd(c):
    m = c.pick_nd(2, 2)
    s = np.linalg.svd(c.val(m), compute_uv=False)
    if s.min() < 0.2 or (len(s) > 1 and np.min(-np.diff(s)) < 0.2):
        raise Skip
    op = c.choice([f"np.linalg.svd({m}, compute_uv=False)", f"np.linalg.svd({m}, full_matrices=False)[1]",
                   f"np.linalg.svd({m}, full_matrices=False)[0] ** 2", f"np.linalg.norm({m}, 2)",
                   f"np.linalg.pinv({m})", f"np.linalg.norm({m}, 'nuc')"])
    return f"{c.new()} = {op}"


# --- functions adcli derives from their NumPy bodies ---
@kind("triangle")
def _triangle(c):
    v = c.pick_nd(2, 3)
    return f"{c.new()} = np.{c.choice(['triu', 'tril'])}({v}{c.choice(['', ', 1', ', -1'])})"


@kind("roll")
def _roll(c):
    v = c.pick_nd(1, 3)
    nd = c.val(v).ndim
    shift = c.choice(["1", "-2", "5", "0"])
    if nd >= 2 and c.r.random() < 0.3:
        return f"{c.new()} = np.roll({v}, (1, -1), axis=(0, {nd - 1}))"
    axis = c.choice(["", f", axis={c.r.randrange(-nd, nd)}", f", {c.r.randrange(nd)}"])
    return f"{c.new()} = np.roll({v}, {shift}{axis})"


@kind("diag-1d")
def _diag_1d(c):
    v = c.pick_nd(1, 1)
    return f"{c.new()} = np.diag({v}{c.choice(['', ', 1', ', -1'])})"


@kind("trace")
def _trace(c):
    v = c.pick_nd(2, 3)
    return f"{c.new()} = " + c.choice([f"np.trace({v})", f"{v}.trace()", f"np.trace({v}, 1)"])


@kind("polyval")
def _polyval(c):
    v = c.pick_nd(0, 2)
    p = c.choice(["[1.5, -0.5, 0.25]", "[0.5, 2.0]", "np.array([0.3, -1.0, 0.5, 1.0])"])
    return f"{c.new()} = np.polyval({p}, {c.bounded(v, 2.0)})"


@kind("cov")
def _cov(c):
    v = c.pick_nd(1, 2, lambda a: a.shape[-1] >= 2 and np.var(a) > 0.01)
    return f"{c.new()} = " + c.choice([f"np.cov({v})", f"np.cov({v}, bias=True)", f"np.cov({v}.T)"
                                       if c.val(v).ndim == 2 and c.val(v).shape[0] >= 2 else f"np.cov({v})"])


@kind("diff")
def _diff(c):
    v = c.pick_nd(1, 3, lambda a: a.shape[-1] >= 2)
    nd = c.val(v).ndim
    return f"{c.new()} = " + c.choice([f"np.diff({v})", f"np.diff({v}, axis={c.r.randrange(nd)})",
                                       f"np.diff({v}, n=2)" if c.val(v).shape[-1] >= 3 else f"np.diff({v})"])


@kind("ediff1d", 1.5)
def _ediff1d(c):
    v = c.pick_nd(1, 3)
    s = c.scalar()
    extra = c.choice(["", ", to_end=[1.0, 2.0]", ", to_begin=-1.5", ", to_begin=[0.5], to_end=3.0",
                      f", to_end={s}", f", to_begin={s}"])
    return f"{c.new()} = np.ediff1d({v}{extra})"


@kind("trapezoid")
def _trapezoid(c):
    v = c.pick_nd(1, 3)
    nd = c.val(v).ndim
    return f"{c.new()} = " + c.choice([f"np.trapezoid({v})", f"np.trapezoid({v}, dx=0.5)",
                                       f"np.trapezoid({v}, axis={c.r.randrange(nd)})"])


@kind("full-traced", 0.5)
def _full_traced(c):
    v = c.pick_nd(0, 3)
    s = c.scalar()
    return f"{c.new()} = " + c.choice([f"np.full_like({v}, {s})", f"np.full({c.val(v).shape!r}, {s})",
                                       f"np.full(({c.r.randint(1, 3)},), {s})"])


# --- functions newly served for ported programs (engine/rules/derived.py) ---
@kind("pad", 0.7)
def _pad(c):
    v = c.pick_nd(1, 3)
    nd = c.val(v).ndim
    width = c.choice(["1", "(0, 2)", repr(tuple((c.r.randint(0, 2), c.r.randint(0, 2)) for _ in range(nd)))])
    value = c.choice(["", ", constant_values=1.5", ", constant_values=-0.5"])
    return f"{c.new()} = np.pad({v}, {width}{value})"


@kind("select", 0.7)
def _select(c):
    v = c.pick_nd(0, 3)
    t = c.threshold(v)
    return f"{c.new()} = np.select([{v} > {t}, {v} < {t} - 0.5], [{v} * 2.0, {v} ** 2], default={v} - 1.0)"


@kind("cross", 0.5)
def _cross(c):
    v = c.pick_nd(1, 3, lambda a: a.shape[-1] == 3)
    return f"{c.new()} = np.cross({v}, np.roll({v}, 1, axis=-1) + 0.5)"


@kind("split", 0.7)
def _split(c):
    v = c.pick_nd(1, 3, lambda a: a.shape[0] >= 2)
    fn = c.choice(["np.array_split({v}, 3)", "np.split({v}, [1])", "np.array_split({v}, 2, axis=0)"])
    return f"{c.new()} = np.concatenate({fn.format(v=v)}[::-1], axis=0)"
