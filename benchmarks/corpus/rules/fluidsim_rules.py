"""Expert rules for fluidsim.py's top suggestions: ``project(vx, vy)`` and ``advect(f, vx, vy)``,
the two functions a time step calls (the advice prefers them to one rule for ``simulate``: they
save nearly as much, and each is a smaller rule).

advect's forward keeps the interpolation indices, weights and corner values; its pullback is the
discrete adjoint of bilinear interpolation: the cotangent scattered back to the four corners (one
np.bincount each) and the interpolation weights' derivatives passed to the velocity. project is
linear, its Jacobi sweeps self-adjoint (rolls by +1 and -1 together), so its adjoint is the same
sweeps run on the cotangent.

``simulate_rule`` (below, not registered) is the whole time loop as one rule, the earlier top
suggestion: its measured saving was 31% (benchmarks/corpus/RESULTS.md of 2026-12-05, 16:37)."""

import numpy as np

import adcli.rules

TARGET = "__main__.project(f64[2d], f64[2d]) + __main__.advect(f64[2d], f64[2d], f64[2d])"
JACOBI = 10  # the script's project() default


def _advect(f, vx, vy):
    rows, cols = f.shape
    cell_ys, cell_xs = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    cx = (cell_xs - vx).ravel()
    cy = (cell_ys - vy).ravel()
    left, top = np.floor(cx), np.floor(cy)
    rw, bw = cx - left, cy - top
    li = left.astype(int)
    ti = top.astype(int)
    l, r = np.mod(li, rows), np.mod(li + 1, rows)
    t, b = np.mod(ti, cols), np.mod(ti + 1, cols)
    idx = (l * cols + t, l * cols + b, r * cols + t, r * cols + b)
    flat = f.ravel()
    flt, flb, frt, frb = (flat[i] for i in idx)
    out = (1 - rw) * ((1 - bw) * flt + bw * flb) + rw * ((1 - bw) * frt + bw * frb)
    return out.reshape(rows, cols), (idx, rw, bw, flt, flb, frt, frb)


def _advect_back(G, cache, shape):
    idx, rw, bw, flt, flb, frt, frb = cache
    g = G.ravel()
    n = shape[0] * shape[1]
    weights = ((1 - rw) * (1 - bw), (1 - rw) * bw, rw * (1 - bw), rw * bw)
    gf = sum(np.bincount(i, weights=g * w, minlength=n) for i, w in zip(idx, weights)).reshape(shape)
    d_rw = ((1 - bw) * frt + bw * frb) - ((1 - bw) * flt + bw * flb)
    d_bw = (1 - rw) * (flb - flt) + rw * (frb - frt)
    return gf, (-g * d_rw).reshape(shape), (-g * d_bw).reshape(shape)


def _sweep(p):
    return (np.roll(p, 1, axis=0) + np.roll(p, -1, axis=0) + np.roll(p, 1, axis=1) + np.roll(p, -1, axis=1)) / 4.0


def _project(vx, vy):
    h = 1.0 / vx.shape[0]
    div = -0.5 * h * (np.roll(vx, -1, axis=0) - np.roll(vx, 1, axis=0) + np.roll(vy, -1, axis=1) - np.roll(vy, 1, axis=1))
    p = np.zeros(vx.shape)
    for _ in range(JACOBI):
        p = (div + np.roll(p, 1, axis=0) + np.roll(p, -1, axis=0) + np.roll(p, 1, axis=1) + np.roll(p, -1, axis=1)) / 4.0
    return (vx - 0.5 * (np.roll(p, -1, axis=0) - np.roll(p, 1, axis=0)) / h,
            vy - 0.5 * (np.roll(p, -1, axis=1) - np.roll(p, 1, axis=1)) / h)


def _project_back(bx, by):
    h = 1.0 / bx.shape[0]
    bp = (-0.5 / h) * (np.roll(bx, 1, axis=0) - np.roll(bx, -1, axis=0) + np.roll(by, 1, axis=1) - np.roll(by, -1, axis=1))
    bdiv = np.zeros_like(bp)
    for _ in range(JACOBI):
        bdiv += bp / 4.0
        bp = _sweep(bp)
    gx = bx - 0.5 * h * (np.roll(bdiv, 1, axis=0) - np.roll(bdiv, -1, axis=0))
    gy = by - 0.5 * h * (np.roll(bdiv, 1, axis=1) - np.roll(bdiv, -1, axis=1))
    return gx, gy


@adcli.rules.rule("__main__:advect", "f64[2d]", "f64[2d]", "f64[2d]")
def advect_rule(f, vx, vy):
    out, cache = _advect(f, vx, vy)
    shape = f.shape

    def pullback(g):
        return _advect_back(g, cache, shape)

    return out, pullback


@adcli.rules.rule("__main__:project", "f64[2d]", "f64[2d]")
def project_rule(vx, vy):
    out = _project(vx, vy)

    def pullback(g):
        return _project_back(*g)

    return out, pullback


def simulate_rule(vx, vy, smoke, num_time_steps):
    shape = vx.shape
    tape = []
    for _ in range(num_time_steps):
        vx1, cx = _advect(vx, vx, vy)
        vy1, cy = _advect(vy, vx, vy)
        vx, vy = _project(vx1, vy1)
        smoke, cs = _advect(smoke, vx, vy)
        tape.append((cx, cy, cs))

    def pullback(g):
        b_smoke, b_vx, b_vy = g, np.zeros(shape), np.zeros(shape)
        for cx, cy, cs in reversed(tape):
            b_smoke, gvx, gvy = _advect_back(b_smoke, cs, shape)
            b_vx1, b_vy1 = _project_back(b_vx + gvx, b_vy + gvy)
            fx, ax, ay = _advect_back(b_vx1, cx, shape)
            fy, bx_, by_ = _advect_back(b_vy1, cy, shape)
            b_vx, b_vy = fx + ax + bx_, fy + ay + by_
        return b_vx, b_vy, b_smoke, None

    return smoke, pullback
