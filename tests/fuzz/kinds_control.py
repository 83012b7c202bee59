"""Statement kinds: assignment and in-place operators, views observed after a write, loops, and
Python scalars (builtins on traced scalars)."""

from __future__ import annotations

import numpy as np

from .ctx import Skip, kind
from .kinds_shape import index, view_of


def _fresh(c, v):
    """An expression making a new array (owning its memory) from variable ``v``."""
    return c.choice([f"{v} * 1.0", f"{v}.copy()", f"np.copy({v})", f"{v} + 0.0", f"{v}.T.copy()",
                     f"{v}.astype(np.{'float32' if c.f32 else 'float64'})"])


def _write(c, y, shape, unique=True) -> str:
    """One statement writing into ``y`` (of ``shape``)."""
    roll = c.r.random()
    if roll < 0.45 and shape:
        idx = index(c, shape, advanced=0.3, unique=unique)
        target = c.ev(f"np.zeros({shape!r})[{idx}]").shape
        op = c.choice(["=", "=", "+=", "*="]) if target else "="
        rhs = c.fit(target) if op != "*=" else c.num(0.5, 2.0)
        return f"{y}[{idx}] {op} {rhs}"
    if roll < 0.7:
        return f"{y} {c.choice(['+=', '-='])} {c.fit(shape, extra_lead=False)}"
    if roll < 0.8 and len(shape) == 2 and shape[0] == shape[1]:
        return f"{y} -= {y}.T"
    return f"{y} *= {c.num(0.5, 2.0)}"


@kind("assign-zeros", 2)
def _assign_zeros(c):
    v = c.pick_nd(1, 3)
    shape = c.val(v).shape
    y = c.new()
    make = c.choice([f"np.zeros_like({v})", f"np.ones_like({v})", f"np.full_like({v}, 0.5)"])
    return f"{y} = {make}\n{_write(c, y, shape)}"


@kind("assign-empty-full")
def _assign_empty_full(c):
    v = c.pick_nd(1, 3)
    n = c.val(v).shape[0]
    y, i = c.new(), c.tmp("i")
    body = c.choice([f"np.sin({v}[{i}])", f"{v}[{i}] * ({i} + 1.0)", f"{v}[{n - 1} - {i}]"])
    return f"{y} = np.empty_like({v})\nfor {i} in range({n}):\n    {y}[{i}] = {body}"


@kind("assign-copy", 2)
def _assign_copy(c):
    v = c.pick_nd(1, 3)
    y = c.new()
    make = _fresh(c, v)
    shape = c.shape(make)
    return f"{y} = {make}\n{_write(c, y, shape)}"


@kind("assign-lead-axes")
def _assign_lead_axes(c):
    v = c.pick_nd(1, 2, lambda a: a.shape[0] >= 2)
    n = c.val(v).shape[0]
    y = c.new()
    return c.choice([f"{y} = np.zeros_like({v})\n{y}[0:{n}] = {v}[::-1][None]",
                     f"{y} = {v} * 1.0\n{y}[0:1] = {v}[1:2][None]",
                     f"{y} = {v} * 1.0\n{y}[0:{n}] = {v}[1:2][None]"])


@kind("assign-reshaped-zeros")
def _assign_reshaped(c):
    v = c.pick_nd(1, 3, lambda a: a.size >= 2)
    size = c.val(v).size
    y, z = c.new(), c.new()
    return (f"{y} = np.zeros_like({v}).reshape(-1)\n{y}[{c.r.randrange(size)}] = {c.scalar()}\n"
            f"{z} = {y}.reshape({c.val(v).shape!r})")


@kind("mutate-existing", 1.5)
def _mutate_existing(c):
    t = c.owner()
    return _write(c, t, c.val(t).shape, unique=c.r.random() < 0.9)


@kind("write-through-view", 0.5)
def _write_through_view(c):
    v = c.pick_nd(1, 3)
    y, d = c.new(), c.new()
    make = _fresh(c, v)
    view = view_of(c, y, c.shape(make))
    dshape = c.ev(view.replace(y, f"({make})")).shape
    if not dshape:
        raise Skip
    return f"{y} = {make}\n{d} = {view}\n{d}[{index(c, dshape, advanced=0)}] = {c.num(-2, 2)}"


@kind("view-then-write", 2.5)
def _view_then_write(c):
    """Take a view of a fresh array, write into the array, then read the view (NumPy decides)."""
    v = c.pick_nd(1, 3)
    y, d, z = c.new(), c.new(), c.new()
    make = _fresh(c, v)
    shape = c.shape(make)
    view = view_of(c, y, shape)
    write = _write(c, y, shape)
    use = c.choice([f"{d} * 2.0", f"np.sin({d})", f"{d} + 1.0", f"{d}.copy()"])
    return f"{y} = {make}\n{d} = {view}\n{write}\n{z} = {use}"


@kind("copy-then-write")
def _copy_then_write(c):
    """A copy (not a view) must not see a later write."""
    v = c.pick_nd(1, 3)
    y, d, z = c.new(), c.new(), c.new()
    make = _fresh(c, v)
    shape = c.shape(make)
    copy = c.choice([f"{y}.copy()", f"{y}.flatten()", f"np.copy({y})", f"{y}.astype(float)", f"{y} * 1.0",
                     f"{y}[[0]]", f"{y}.ravel().copy()"])
    return f"{y} = {make}\n{d} = {copy}\n{_write(c, y, shape)}\n{z} = {d} * 1.5"


# --- loops ---
@kind("for-accumulate", 2)
def _for_acc(c):
    v = c.pick_nd(1, 3)
    n = c.val(v).shape[0]
    acc, i = c.new(), c.tmp("i")
    body = c.choice([f"{acc} + {v}[{i}] * ({i} + 0.5)", f"{acc} + np.sin({v}[{i}])", f"{acc} * 0.5 + {v}[{i}]",
                     f"np.maximum({acc}, {v}[{i}]) * 0.0 + {acc} + {v}[{i}] ** 2"])
    return f"{acc} = {v}[0] * 0.0\nfor {i} in range({n}):\n    {acc} = {body}"


@kind("while-fixed")
def _while(c):
    v = c.pick_nd(1, 3)
    n = c.val(v).shape[0]
    acc, i = c.new(), c.tmp("i")
    return (f"{acc} = {v}[0] * 1.0\n{i} = 1\nwhile {i} < {n}:\n    {acc} = {acc} * 0.9 + np.tanh({v}[{i}])\n"
            f"    {i} += 1")


@kind("list-stack")
def _list_stack(c):
    v = c.pick_nd(1, 3)
    n = c.val(v).shape[0]
    out, parts, i = c.new(), c.tmp("parts"), c.tmp("i")
    join = c.choice(["np.stack", "np.stack", "np.concatenate" if c.val(v).ndim > 1 else "np.stack", "np.vstack"])
    return (f"{parts} = []\nfor {i} in range({n}):\n    {parts}.append({v}[{i}] * ({i} + 1.0))\n"
            f"{out} = {join}({parts})")


@kind("comprehension-sum")
def _comprehension(c):
    v = c.pick_nd(1, 3)
    n = c.val(v).shape[0]
    i = c.tmp("i")
    return f"{c.new()} = " + c.choice([f"sum({v}[{i}] * {v}[{i}] for {i} in range({n}))",
                                       f"sum([np.cos({v}[{i}]) for {i} in range({n})])",
                                       f"np.stack([{v}[{i}] + {i} for {i} in range({n})])"])


@kind("iterate-rows")
def _iterate(c):
    v = c.pick_nd(1, 3)
    r = c.tmp("row")
    return f"{c.new()} = np.stack([{r} * 2.0 for {r} in {v}])" if c.r.random() < 0.5 else \
        f"{c.new()} = sum({r} for {r} in {v})"


# --- Python scalars ---
def _scalar_elem(c, margin_int=False):
    v = c.pick_nd(1, 3)
    a = c.val(v)
    pos = tuple(c.r.randrange(n) for n in a.shape)
    x = float(a[pos])
    if margin_int and abs(x - round(x)) < 0.05:
        raise Skip
    return f"{v}[{', '.join(map(str, pos))}]", x


@kind("scalar-python", 2)
def _scalar_python(c):
    s, _ = _scalar_elem(c)
    return f"{c.new()} = " + c.choice([f"{s} * 2.5 - 1.0", f"{s} ** 2 + {s}", f"abs({s} - 5.0)", f"-{s} / 3.0",
                                       f"max({s}, {s} + 1.0)", f"2.0 ** {s}", f"({s} + 0.5) * {s}"])


@kind("scalar-round", 0.5)
def _scalar_round(c):
    s, x = _scalar_elem(c)
    if abs(x * 10 - np.floor(x * 10) - 0.5) < 0.1 or abs(x - np.floor(x) - 0.5) < 0.05:
        raise Skip
    return f"{c.new()} = {s} * " + c.choice([f"round({s})", f"round({s}, 1)", f"(round({s}) + 2.0)"])


@kind("scalar-trunc", 0.5)
def _scalar_trunc(c):
    s, x = _scalar_elem(c, margin_int=True)
    return f"{c.new()} = {s} * " + c.choice([f"(math.trunc({s}) + 2.0)", f"(math.floor({s}) + 3.0)",
                                             f"(math.ceil({s}) + 3.0)"])


@kind("scalar-hash", 0.2)
def _scalar_hash(c):
    s, _ = _scalar_elem(c)
    return f"{c.new()} = {s} * (1.0 + 0.0 * (hash({s}) % 7))"


@kind("divmod", 0.7)
def _divmod(c):
    v = c.pick()
    a = np.asarray(c.val(v), float) / 0.7
    if np.any(np.abs(a - np.round(a)) < 0.08):
        raise Skip
    q, r = c.new(), c.new()
    return f"{q}, {r} = divmod({v}, 0.7)\n{r} = {r} + {q} * 0.0"


@kind("float-arg", 1.0)
def _float_arg(c):
    floats = [n for n in c.argnames if type(c.env.get(n)) is float]
    if not floats:
        raise Skip
    a = c.choice(floats)
    v = c.pick()
    return f"{c.new()} = " + c.choice([f"{v} * {a}", f"np.sin({a}) + {v}", f"{a} ** 2 * {v}", f"{v} / ({a} * {a} + 1.0)"])


@kind("item-escape", 0.15)
def _item_escape(c):
    """Routes adcli must refuse (never answer wrongly): float(), .item(), np.asarray of a traced value."""
    s, _ = _scalar_elem(c)
    return f"{c.new()} = " + c.choice([f"{s} * float({s})", f"{s} * np.float64({s})", f"np.asarray({s}) * 1.0"])


@kind("plain-write-escape", 0.2)
def _plain_write(c):
    """Writing a traced value into a plain array: adcli must refuse with its own error."""
    v = c.pick_nd(1, 2)
    n = c.val(v).shape[0]
    p = c.new()
    rhs = c.choice([f"{v}[0]", f"np.sum({v})", f"{v}[0:1]", f"{v}[0, ...]", f"np.sum({v}, keepdims=True).reshape(())"])
    return f"{p} = np.zeros({n + 1})\n{p}[0] = {rhs}\n{c.new()} = {p} * {v}[0]"
