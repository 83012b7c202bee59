"""Statement kinds for the input shapes of "shapes" programs: containers holding traced values
handed to every library rule (tests/fuzz/library_specs.py), joins of lists mixing traced arrays,
slices and traced scalars, ndarray subclasses (np.matrix, masked arrays) as operands, SciPy
functions without rules given lists of traced values, and traced closures handed to
scipy.optimize. A correct gradient or an adcli error are both acceptable answers; a silent zero
or another exception is a finding."""

from __future__ import annotations

import numpy as np

from .ctx import Skip, kind
from .library_specs import COUNT, SPECS, expression, sample


def _items(c, t: str, shape, plain, form: str) -> str:
    """Source of the container ``form`` of the traced array ``t`` (values ``plain``)."""
    def leaf(idx, traced):
        ix = ", ".join(str(i) for i in idx)
        return f"{t}[{ix}]" if traced else repr(round(float(plain[idx]), 4))

    def nested(prefix, dims, kind_, mixed):
        if not dims:
            return leaf(prefix, not mixed or sum(prefix) % 2 == 0)
        parts = [nested(prefix + (j,), dims[1:], kind_, mixed) for j in range(dims[0])]
        if kind_ == "tuple":
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        return "[" + ", ".join(parts) + "]"

    if form == "bare" or not shape:
        return t
    if form in ("list", "tuple", "mixed"):
        return nested((), list(shape), "tuple" if form == "tuple" else "list", form == "mixed")
    rows = [f"{t}[{j}]" if form == "rows" or j % 2 == 0 else nested((j,), list(shape[1:]), "list", False)
            for j in range(shape[0])]
    return "[" + ", ".join(rows) + "]"


_FORMS = ("bare", "list", "list", "tuple", "mixed", "rows", "rows-mixed")


@kind("library-container", 25.0, shapes=True)
def _library_container(c):
    spec = c.choice(SPECS)
    shapes = c.choice(spec.shapes)
    lines, vals = [], {}
    rng = np.random.default_rng(c.r.randrange(1 << 30))
    for p in spec.params:
        shape = shapes[p.name]
        if p.domain == COUNT or not p.differentiable or c.r.random() < 0.2:
            v = spec.fixed[p.name] if p.name in spec.fixed else sample(p.domain, shape, rng)
            vals[p.name] = repr(tuple(int(x) for x in v)) if isinstance(v, tuple) else \
                f"np.array({np.round(v, 4).tolist()!r})"
            continue
        n = int(np.prod(shape))
        src = c.pick(lambda a: a.size >= n)
        t = f"{c.tmp('t')}_{p.name}"
        lines.append(f"{t} = {expression(p.domain, f'np.ravel({src})[:{n}].reshape({shape!r})', shape)}")
        plain = c.ev(f"{expression(p.domain, f'np.ravel({src})[:{n}].reshape({shape!r})', shape)}")
        form = c.choice([f for f in _FORMS if not f.startswith("rows") or len(shape) >= 2])
        vals[p.name] = _items(c, t, shape, np.asarray(plain), form)
    if not lines:
        raise Skip
    lines.append(f"{c.new()} = {spec.call.format(**vals)}")
    return "\n".join(lines)


def _scalars(c, k: int) -> list:
    return [f"np.tanh({c.scalar()})" if c.r.random() < 0.7 else c.num(-1.5, 1.5) for _ in range(k)]


@kind("mixed-join", 10.0, shapes=True)
def _mixed_join(c):
    a = c.pick_nd(1, 1)
    n = c.val(a).shape[0]
    s = _scalars(c, max(n, 2))
    lst = "[" + ", ".join(s[:n]) + "]"
    k = c.r.randint(1, n) if n > 1 else 1
    form = c.choice(["concat", "concat2", "stack", "array", "hstack", "vstack", "append", "r_", "column", "copyto",
                     "meshgrid", "broadcast_to", "windows"])
    out = c.new()
    if form == "concat":
        return f"{out} = np.concatenate([{a}[:{k}], [{', '.join(s[:2])}]])"
    if form == "concat2":
        b = c.pick_nd(2, 2, lambda v: v.shape[1] == n)
        return f"{out} = np.concatenate([{b}, [{lst}]], axis=0)"
    if form == "stack":
        return f"{out} = np.stack([{a}, {lst}], axis={c.choice([0, -1])})"
    if form == "array":
        return f"{out} = np.array([{a}, {lst}])"
    if form == "hstack":
        return f"{out} = np.hstack([{a}[{k - 1}:], [{s[0]}, 0.5], {s[-1]}])"
    if form == "vstack":
        return f"{out} = np.vstack([{a}, {lst}])"
    if form == "append":
        return f"{out} = np.append({a}, [{', '.join(s[:2])}])"
    if form == "r_":
        return f"{out} = np.r_[{a}[:{k}], [{', '.join(s[:2])}], 0.25]"
    if form == "column":
        return f"{out} = np.column_stack([{a}, {lst}])"
    if form == "copyto":
        return f"{out} = {a} * 1.0\nnp.copyto({out}, {lst})"
    if form == "meshgrid":
        return f"{out} = np.meshgrid([{', '.join(s[:2])}], {a})[{c.choice([0, 1])}]"
    if form == "broadcast_to":
        return f"{out} = np.broadcast_to({lst}, (2, {n})) * 1.0"
    if n < 2:
        raise Skip
    return f"{out} = np.lib.stride_tricks.sliding_window_view({lst}, 2) * 1.0"


@kind("heaviside-h", 2.0, shapes=True)
def _heaviside(c):
    h = f"np.tanh({c.scalar()})"
    return f"{c.new()} = np.heaviside(np.array([0.0, 1.5, -0.5, 0.0]), {h})"


@kind("subclass-operand", 6.0, shapes=True)
def _subclass_operand(c):
    a = c.pick_nd(1, 2)
    shape = c.val(a).shape
    lit = c.lit(shape)
    out = c.new()
    form = c.choice(["matrix-mul", "matrix-matmul", "matrix-add", "masked-mul", "masked-add", "masked-sum",
                     "masked-filled", "masked-plain"])
    mask = c.mask(shape).replace("True", "_T").replace("False", "True").replace("_T", "False")  # some masked
    if form == "matrix-mul":
        return f"{out} = np.asarray(np.multiply(np.matrix({lit}), {a}))"
    if form == "matrix-matmul":
        if len(shape) != 2:
            raise Skip
        return f"{out} = np.asarray(np.matrix({c.lit((shape[1], shape[0]))}) @ {a})"
    if form == "matrix-add":
        return f"{out} = np.asarray({a} + np.matrix({lit}))"
    if form == "masked-mul":
        return f"{out} = {a} * np.ma.array({lit}, mask={mask})"
    if form == "masked-add":
        return f"{out} = np.ma.array({lit}, mask={mask}) + {a}"
    if form == "masked-sum":
        return f"{out} = ({a} * np.ma.array({lit}, mask={mask})).sum(axis=0)"
    if form == "masked-filled":
        return f"{out} = np.ma.filled({a} * np.ma.array({lit}, mask={mask}), 0.0)"
    return f"{out} = {a} * np.ma.getdata(np.ma.array({lit}, mask={mask}))"


@kind("scipy-unruled-list", 4.0, shapes=True)
def _scipy_unruled(c):
    """SciPy functions without rules, given lists holding traced values: refused or correct."""
    s = _scalars(c, 4)
    lst = "[" + ", ".join(s[:3]) + "]"
    out = c.new()
    form = c.choice(["toeplitz", "expm", "cumtrapz", "lfilter", "spline", "sylvester-list", "stats-list"])
    if form == "toeplitz":
        return f"{out} = sl.toeplitz({lst})"
    if form == "expm":
        return f"{out} = sl.expm([[{s[0]} * 0.3, 0.1], [0.2, {s[1]} * 0.3]])"
    if form == "cumtrapz":
        return f"{out} = si.cumulative_trapezoid({lst})"
    if form == "lfilter":
        return f"{out} = ss.lfilter([1.0], [1.0, -0.5], {lst})"
    if form == "spline":
        return f"{out} = sint.make_interp_spline([0.0, 1.0, 2.0, 3.0], [{', '.join(s)}], k=1)(np.array([0.5, 2.5]))"
    if form == "sylvester-list":
        m = c.pick_nd(2, 2, lambda v: v.shape == (2, 2))
        return (f"{out} = sl.solve_sylvester(np.tanh({m}) * 0.2 + 3.0 * np.eye(2), [[3.0, 0.1], [0.0, 2.5]], "
                f"[[{s[0]}, 0.5], [0.25, {s[1]}]])")
    return f"{out} = st.norm.logpdf({lst}, loc={c.bounded(c.pick())}, scale=[1.0, 1.5, 2.0][:len({lst})])"


@kind("optimize-closure", 3.0, shapes=True)
def _optimize_closure(c):
    """scipy.optimize handed a function reading a traced value from its closure: a plain answer
    would carry no gradient, so adcli must refuse it (or differentiate it correctly)."""
    t = f"np.tanh({c.scalar()})"
    tt = c.tmp("t")
    out = c.new()
    form = c.choice(["minimize_scalar", "brentq", "bisect", "fsolve", "minimize"])
    head = f"{tt} = {t}\n"
    if form == "minimize_scalar":
        return head + f"{out} = so.minimize_scalar(lambda z: (z - {tt}) ** 2 + 0.1 * z ** 4).x"
    if form == "brentq":
        return head + f"{out} = so.brentq(lambda z: z ** 3 + z - {tt}, -5.0, 5.0)"
    if form == "bisect":
        return head + f"{out} = so.bisect(lambda z: z ** 3 + z - {tt}, -5.0, 5.0)"
    if form == "fsolve":
        return head + f"{out} = so.fsolve(lambda z: z ** 3 + z - {tt}, 0.0)[0]"
    return head + f"{out} = so.minimize(lambda z: np.sum((z - {tt}) ** 2), np.zeros(2)).x"
