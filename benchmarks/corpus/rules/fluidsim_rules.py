"""Expert rules for fluidsim.py's top suggestions: ``project(vx, vy)`` and ``advect(f, vx, vy)``,
the two functions a time step calls (the advice prefers them to one rule for ``simulate``: they
save nearly as much, and each is a smaller rule).

advect's forward keeps the interpolation indices, weights and corner values; its pullback is the
discrete adjoint of bilinear interpolation: the cotangent scattered back to the four corners (one
np.bincount each) and the interpolation weights' derivatives passed to the velocity. project is
linear, its Jacobi sweeps self-adjoint (rolls by +1 and -1 together), so its adjoint is the same
sweeps run on the cotangent; the periodic neighbours are slices of a bordered copy, not np.roll
(whose Python around the copy made the first version of this rule cost what the derived one
does: 855 µs a call against 869 µs).

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


def _halo(p):
    """``p`` inside a one-cell periodic border: its four periodic neighbours are then slices
    (``np.roll`` by one, four times, costs ~4x as much in Python around the copies)."""
    n, m = p.shape
    P = np.empty((n + 2, m + 2))
    P[1:-1, 1:-1] = p
    P[0, 1:-1], P[-1, 1:-1] = p[-1], p[0]
    P[1:-1, 0], P[1:-1, -1] = p[:, -1], p[:, 0]
    return P


# np.roll(p, 1, axis=0) is P[:-2, 1:-1], np.roll(p, -1, axis=0) P[2:, 1:-1]; on axis 1 likewise
def _sweep(p):
    P = _halo(p)
    return (P[:-2, 1:-1] + P[2:, 1:-1] + P[1:-1, :-2] + P[1:-1, 2:]) / 4.0


def _project(vx, vy):
    h = 1.0 / vx.shape[0]
    X, Y = _halo(vx), _halo(vy)
    div = -0.5 * h * (X[2:, 1:-1] - X[:-2, 1:-1] + Y[1:-1, 2:] - Y[1:-1, :-2])
    p = np.zeros(vx.shape)
    for _ in range(JACOBI):
        p = div / 4.0 + _sweep(p)
    P = _halo(p)
    return vx - 0.5 * (P[2:, 1:-1] - P[:-2, 1:-1]) / h, vy - 0.5 * (P[1:-1, 2:] - P[1:-1, :-2]) / h


def _project_back(bx, by):
    h = 1.0 / bx.shape[0]
    X, Y = _halo(bx), _halo(by)
    bp = (-0.5 / h) * (X[:-2, 1:-1] - X[2:, 1:-1] + Y[1:-1, :-2] - Y[1:-1, 2:])
    bdiv = np.zeros_like(bp)
    for _ in range(JACOBI):
        bdiv += bp / 4.0
        bp = _sweep(bp)
    D = _halo(bdiv)
    return bx - 0.5 * h * (D[:-2, 1:-1] - D[2:, 1:-1]), by - 0.5 * h * (D[1:-1, :-2] - D[1:-1, 2:])


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
