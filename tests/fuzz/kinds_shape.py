"""Statement kinds: indexing, views (reshape, transpose, diagonal, ...) and joins."""

from __future__ import annotations

import numpy as np

from .ctx import Skip, kind


# --- index expressions ---
def basic_part(c, n: int) -> str:
    """One basic index component for an axis of length ``n``."""
    roll = c.r.random()
    if roll < 0.2:
        return str(c.r.randrange(n))
    if roll < 0.3:
        return str(-c.r.randint(1, n))
    if roll < 0.5:
        a = c.r.randrange(n)
        return f"{a}:{c.r.randint(a + 1, n)}"
    if roll < 0.6:
        return c.choice(["::2", "1::2", "::3"]) if n > 1 else ":"
    if roll < 0.75:
        return c.choice(["::-1", "::-2", "-1::-1", f"{n - 1}:0:-1" if n > 1 else "::-1"])
    return ":"


def advanced_part(c, n: int, unique: bool) -> str:
    if c.r.random() < 0.35:
        return c.mask((n,))
    k = c.r.randint(1, max(1, min(4, n + 1)))
    if unique:
        idx = c.r.sample(range(n), min(k, n))
    else:
        idx = [c.r.randrange(n) for _ in range(k)]
    idx = [i - n if c.r.random() < 0.2 else i for i in idx]
    return repr(idx) if c.r.random() < 0.5 else f"np.array({idx!r})"


def index(c, shape, advanced=0.3, unique=False) -> str:
    """A valid index expression (inside the brackets) for an array of ``shape``."""
    nd = len(shape)
    if nd == 0:
        return c.choice(["()", "...", "None"])
    if 0 in shape:
        raise Skip
    if advanced and c.r.random() < advanced / 3:
        return c.mask(shape)  # a full-shape boolean mask
    k = c.r.randint(1, nd)
    parts = [basic_part(c, n) for n in shape[:k]]
    if advanced and c.r.random() < advanced:
        i = c.r.randrange(k)
        parts[i] = advanced_part(c, shape[i], unique)
    if c.r.random() < 0.2 and k < nd:
        parts = ["..."] + [basic_part(c, n) for n in shape[nd - k:]]
    if c.r.random() < 0.15:
        parts.insert(c.r.randint(0, len(parts)), "None")
    return ", ".join(parts)


@kind("getitem", 4)
def _getitem(c):
    v = c.pick_nd(1, 4)
    return f"{c.new()} = {v}[{index(c, c.val(v).shape)}]"


@kind("getitem-scalar", 1.5)
def _getitem_scalar(c):
    v = c.pick_nd(1, 4)
    shape = c.val(v).shape
    return f"{c.new()} = {v}[{', '.join(str(c.r.randrange(n) - (n if c.r.random() < 0.3 else 0)) for n in shape)}]"


@kind("getitem-bool-values")
def _getitem_bool_values(c):
    v = c.pick_nd(1, 3)
    t = c.threshold(v)
    return f"{c.new()} = {v}[{v} > {t}]"


@kind("getitem-2d-intarray", 0.5)
def _getitem_2d(c):
    v = c.pick_nd(1, 3)
    n = c.val(v).shape[0]
    idx = [[c.r.randrange(n) for _ in range(2)] for _ in range(2)]
    return f"{c.new()} = {v}[np.array({idx!r})]"


@kind("getitem-pair-arrays", 0.5)
def _getitem_pair(c):
    v = c.pick_nd(2, 3)
    n, m = c.val(v).shape[:2]
    k = c.r.randint(1, 3)
    rows, cols = [c.r.randrange(n) for _ in range(k)], [c.r.randrange(m) for _ in range(k)]
    return f"{c.new()} = {v}[{rows!r}, {cols!r}]"


@kind("take")
def _take(c):
    v = c.pick_nd(1, 3)
    a = c.val(v)
    axis = c.r.randrange(a.ndim)
    idx = [c.r.randrange(a.shape[axis]) for _ in range(c.r.randint(1, 4))]
    return f"{c.new()} = " + c.choice([f"np.take({v}, {idx!r}, axis={axis})", f"{v}.take({idx!r}, axis={axis})",
                                       f"np.take({v}, {idx!r})"])


@kind("repeat-flat")
def _repeat_flat(c):
    v = c.pick_nd(1, 3)
    return f"{c.new()} = " + c.choice([f"{v}.repeat({c.r.randint(1, 3)})", f"np.repeat({v}, 2)",
                                       f"{v}.T.repeat(2)"])


@kind("repeat-axis")
def _repeat_axis(c):
    v = c.pick_nd(1, 3)
    a = c.val(v)
    axis = c.r.randrange(-a.ndim, a.ndim)
    reps = c.r.randint(1, 3) if c.r.random() < 0.6 else [c.r.randint(0, 2) for _ in range(a.shape[axis])]
    return f"{c.new()} = np.repeat({v}, {reps!r}, axis={axis})"


# --- views and reshapes ---
def _factor(size: int, r) -> tuple:
    dims = []
    while size > 1 and len(dims) < 3:
        d = r.choice([k for k in range(1, size + 1) if size % k == 0])
        dims.append(d)
        size //= d
    dims.append(size)
    if r.random() < 0.3:
        dims[r.randrange(len(dims))] = -1
    return tuple(dims)


def view_of(c, y, shape) -> str | None:
    """A NumPy view of variable ``y`` (of ``shape``), or None when none applies."""
    nd = len(shape)
    opts = [f"{y}.reshape({_factor(int(np.prod(shape)), c.r)!r})", f"{y}.ravel()", f"np.ravel({y})",
            f"{y}.astype(np.{'float32' if c.f32 else 'float64'}, copy=False)", f"{y}.real",
            f"np.expand_dims({y}, 0)", f"{y}[None]", f"np.broadcast_to({y}, (2,) + {y}.shape)"]
    if nd >= 1:
        opts += [f"{y}[{index(c, shape, advanced=0)}]", f"{y}[::-1]", f"{y}.T", f"np.atleast_2d({y})"]
    if nd >= 2:
        opts += [f"{y}.T", f"{y}.transpose()", f"np.swapaxes({y}, 0, -1)", f"np.moveaxis({y}, 0, -1)",
                 f"{y}.diagonal()", f"np.diagonal({y})", f"np.diagonal({y}, 1)", f"{y}.swapaxes(0, 1)"]
    if nd == 2:
        opts += [f"np.diag({y})", f"np.einsum('ij->ji', {y})", f"np.transpose({y}, (1, 0))"]
        if shape[0] == shape[1]:
            opts += [f"np.einsum('ii->i', {y})"] * 2
    if 1 in shape:
        opts += [f"np.squeeze({y})", f"{y}.squeeze()"]
    return c.choice(opts)


@kind("view", 4)
def _view(c):
    v = c.pick_nd(0, 4)
    return f"{c.new()} = {view_of(c, v, c.val(v).shape)}"


@kind("flatten")
def _flatten(c):
    v = c.pick_nd(1, 4)
    return f"{c.new()} = " + c.choice([f"{v}.flatten()", f"{v}.T.flatten()", f"np.copy({v}).ravel()"])


@kind("transpose-axes")
def _transpose_axes(c):
    v = c.pick_nd(2, 4)
    perm = list(range(c.val(v).ndim))
    c.r.shuffle(perm)
    return f"{c.new()} = " + c.choice([f"np.transpose({v}, {tuple(perm)!r})", f"{v}.transpose({tuple(perm)!r})",
                                       f"{v}.transpose(*{tuple(perm)!r})"])


@kind("moveaxis")
def _moveaxis(c):
    v = c.pick_nd(2, 4)
    nd = c.val(v).ndim
    return f"{c.new()} = np.moveaxis({v}, {c.r.randrange(nd)}, {c.r.randrange(-nd, nd)})"


@kind("expand-squeeze")
def _expand_squeeze(c):
    v = c.pick_nd(0, 3)
    ax = c.r.randrange(-c.val(v).ndim - 1, c.val(v).ndim + 1)
    return f"{c.new()} = " + c.choice([f"np.expand_dims({v}, {ax})", f"np.squeeze(np.expand_dims({v}, {ax}), {ax})",
                                       f"{v}[..., None]", f"np.squeeze({v}[None], axis=0)"])


@kind("broadcast-to")
def _broadcast_to(c):
    v = c.pick_nd(0, 3, lambda a: a.size <= 16)
    shape = c.val(v).shape
    big = tuple(c.r.randint(2, 3) if n == 1 else n for n in shape)
    if c.r.random() < 0.5:
        big = (2,) + big
    return f"{c.new()} = np.broadcast_to({v}, {big!r})"


@kind("flips")
def _flips(c):
    v = c.pick_nd(1, 3)
    nd = c.val(v).ndim
    opts = [f"np.flip({v})", f"np.flip({v}, {c.r.randrange(-nd, nd)})", f"np.flipud({v})",
            f"np.roll({v}, {c.r.randint(-3, 3)})", f"np.roll({v}, {c.r.randint(-2, 2)}, axis={c.r.randrange(nd)})"]
    if nd >= 2:
        opts += [f"np.fliplr({v})", f"np.rot90({v})", f"np.rot90({v}, {c.r.randint(-2, 3)})"]
    return f"{c.new()} = {c.choice(opts)}"


@kind("sort")
def _sort(c):
    def distinct(a):
        s = np.sort(a, axis=-1)
        return a.ndim >= 1 and (a.shape[-1] < 2 or np.min(np.diff(s, axis=-1)) > 0.05)

    v = c.pick_nd(1, 3, distinct)
    flat = np.sort(c.val(v).ravel())
    whole = flat.size < 2 or np.min(np.diff(flat)) > 0.05
    return f"{c.new()} = " + c.choice([f"np.sort({v})", f"np.sort({v}, axis=-1)", f"np.sort({v}.ravel())"
                                       if whole else f"np.sort({v})"])


# --- joins ---
def _same_shape_operand(c, v, shape):
    same = c.floats(lambda a: a.shape == shape)
    return c.choice(same + [f"{v} * 0.5", c.lit(shape)])


@kind("concatenate", 1.5)
def _concatenate(c):
    v = c.pick_nd(1, 3)
    shape = c.val(v).shape
    w = _same_shape_operand(c, v, shape)
    axis = c.r.randrange(-len(shape), len(shape))
    return f"{c.new()} = " + c.choice([f"np.concatenate([{v}, {w}], axis={axis})", f"np.concatenate(({w}, {v}))",
                                       f"np.concatenate([{v}, {w}, {v}], axis=None)"])


@kind("stack")
def _stack(c):
    v = c.pick_nd(0, 3)
    shape = c.val(v).shape
    w = _same_shape_operand(c, v, shape)
    return f"{c.new()} = np.stack([{v}, {w}], axis={c.r.randrange(-len(shape) - 1, len(shape) + 1)})"


@kind("hvstack")
def _hvstack(c):
    v = c.pick_nd(0, 2)
    w = _same_shape_operand(c, v, c.val(v).shape)
    fn = c.choice(["np.hstack", "np.vstack", "np.column_stack"])
    return f"{c.new()} = {fn}([{v}, {w}])"


@kind("append")
def _append(c):
    v = c.pick_nd(1, 3)
    shape = c.val(v).shape
    w = _same_shape_operand(c, v, shape)
    return f"{c.new()} = " + c.choice([f"np.append({v}, {w})", f"np.append({v}, {w}, axis={c.r.randrange(len(shape))})",
                                       f"np.append({v}, {c.num(-1, 1)})"])


@kind("tile")
def _tile(c):
    v = c.pick_nd(0, 2, lambda a: a.size <= 12)
    reps = c.choice(["2", "(2, 1)", "(1, 2)", "(2, 1, 1)" if c.val(v).ndim <= 3 else "2"])
    return f"{c.new()} = np.tile({v}, {reps})"


# --- more NumPy functions served for ported programs (partition, r_/c_, ufunc.at, unique, ...) ---
@kind("partition", 0.6)
def _partition(c):
    v = c.pick_nd(1, 3, lambda a: a.shape[-1] >= 2 and np.unique(a).size == a.size)
    n = c.val(v).shape[-1]
    return f"{c.new()} = np.partition({v}, {c.r.randrange(n)}, axis=-1)"


@kind("r_-c_", 0.6)
def _r_c(c):
    v = c.pick_nd(1, 1)
    other = c.pick_nd(1, 1)
    if c.r.random() < 0.5 or c.val(v).shape != c.val(other).shape:
        return f"{c.new()} = np.r_[{v}, {c.num(-1.0, 1.0)}, {other} * 0.5]"
    return f"{c.new()} = np.c_[{v}, {other} ** 2]"


@kind("ufunc-at", 0.6)
def _ufunc_at(c):
    v = c.pick_nd(1, 1)
    n = c.val(v).shape[0]
    idx = [c.r.randrange(3) for _ in range(n)]
    out = c.new()
    return (f"{out} = np.zeros_like({v}, shape=(3,))\n"
            f"np.{c.choice(['add', 'subtract'])}.at({out}, {idx!r}, {v})")


@kind("asarray-copy", 0.5)
def _asarray(c):
    v = c.pick_nd(1, 3)
    return f"{c.new()} = " + c.choice([f"np.asarray({v}) * 1.5", f"np.array({v}) + 0.5",
                                       f"np.ascontiguousarray({v}.T)", f"np.asarray([{v}, {v} * 2.0])"])


@kind("bincount-weights", 0.4)
def _bincount(c):
    v = c.pick_nd(1, 1)
    n = c.val(v).shape[0]
    idx = [c.r.randrange(4) for _ in range(n)]
    return f"{c.new()} = np.bincount(np.array({idx!r}), weights={v}, minlength=4)"
