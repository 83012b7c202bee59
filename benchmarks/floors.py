"""The NumPy floor of each rule in rules.py: the forward pass and the pullback written by hand in
plain NumPy and SciPy, as one would write them for that one function and cotangent.

A floor is the work a rule cannot avoid with NumPy's kernels: the primal, then one NumPy call per
quantity the cotangents need (``g * np.cos(x)``, ``g @ b.T``), with nothing an engine does
(no tape, no dispatch, no checks for ties, zeros, layouts or dtypes, no copies kept for safety).
Some floors are therefore *less* careful than the rule: maximum's and max's ignore ties, prod's
divides by x whatever x holds, sum's spreads g as a read-only view. ``rule / floor`` near 1 means
the rule does what a hand-written pullback does; a floor ratio over 3 means that no rule built
on NumPy's kernels can meet the per-rule target of 3x its primal.

Each entry is ``name: floor(args, g) -> cotangents`` for the arguments ``cases()`` differentiates,
the forward pass included (its result is what the cotangent ``g`` belongs to).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular


def _matmul(a, b, g):
    a @ b
    return g @ b.T, a.T @ g


def _divide(x, p, g):
    q = x / p
    gx = g / p
    return gx, -gx * q


def _var(x, g, std=False):
    d = x - x.mean(axis=0)
    v = (d * d).mean(axis=0)
    n = x.shape[0]
    if std:
        return (d * (g / (n * np.sqrt(v))),)
    return (d * (2.0 * g / n),)


def _max_axis1(x, g):
    m = x.max(axis=1)
    return ((x == m[:, None]) * g[:, None],)  # ties not split


def _fancy(x, idx, g):
    x[idx]
    out = np.zeros_like(x)
    np.add.at(out, idx, g)
    return (out,)


def _slice(x, g):
    x[::2, 1:]
    out = np.zeros_like(x)
    out[::2, 1:] = g
    return (out,)


def _kron(a, b, g):
    np.kron(a, b)
    k, m = a.shape[0], b.shape[0]
    g4 = g.reshape(k, m, k, m)  # kron(a, b)[i*m + p, j*m + q] = a[i, j] * b[p, q]
    return np.einsum("ipjq,pq->ij", g4, b), np.einsum("ipjq,ij->pq", g4, a)


def _cholesky(a, g):
    lo = np.linalg.cholesky(a)
    phi = np.tril(lo.T @ g)
    phi[np.diag_indices_from(phi)] *= 0.5
    # S = L^-T phi L^-1, symmetrised
    s = solve_triangular(lo, solve_triangular(lo, phi.T, lower=True, trans="T").T, lower=True, trans="T")
    return ((s + s.T) / 2.0,)


def _solve(a, b, g):
    x = np.linalg.solve(a, b)
    gb = np.linalg.solve(a.T, g)
    return -gb @ x.T, gb


def _det(a, g):
    d = np.linalg.det(a)
    return (g * d * np.linalg.inv(a).T,)


def _eigh(a, g):
    _, v = np.linalg.eigh(a)
    return ((v * g) @ v.T,)


def _svd(a, g):
    u, _, vt = np.linalg.svd(a, full_matrices=False)
    return ((u * g) @ vt,)


def _norm(x, g):
    n = np.linalg.norm(x)
    return (x * (g / n),)


def floors(idx):
    """The floors by rule name; ``idx`` is the fancy-index case's index array."""
    return {
        "sin": lambda x, g: (np.sin(x), g * np.cos(x))[1:],
        "exp": lambda x, g: (lambda e: (g * e * 0.1,))(np.exp(x * 0.1)),
        "log": lambda p, g: (np.log(p), g / p)[1:],
        "tanh": lambda x, g: (lambda t: (g * (1.0 - t * t),))(np.tanh(x)),
        "sqrt": lambda p, g: (lambda s: (g / (2.0 * s),))(np.sqrt(p)),
        "abs": lambda x, g: (np.abs(x), g * np.sign(x))[1:],
        "add": lambda x, y, g: (x + y, g, g)[1:],
        "multiply": lambda x, y, g: (x * y, g * y, g * x)[1:],
        "divide": _divide,
        "power": lambda x, g: (x ** 3, g * (3.0 * x * x))[1:],
        "maximum": lambda x, y, g: (np.maximum(x, y), g * (x > y), g * (x <= y))[1:],  # ties not split
        "where": lambda x, y, g: (np.where(x > 0, x, y), np.where(x > 0, g, 0.0), np.where(x > 0, 0.0, g))[1:],
        "broadcast add": lambda x, a, g: (x + a, g, g.sum(axis=0))[1:],
        "sum": lambda x, g: (x.sum(), np.broadcast_to(g, x.shape))[1:],
        "sum axis=0": lambda x, g: (x.sum(axis=0), np.broadcast_to(g, x.shape))[1:],
        "mean axis=0": lambda x, g: (x.mean(axis=0), np.broadcast_to(g / x.shape[0], x.shape))[1:],
        "var axis=0": _var,
        "std axis=0": lambda x, g: _var(x, g, std=True),
        "max axis=1": _max_axis1,
        "cumsum": lambda x, g: (np.cumsum(x, axis=0), np.cumsum(g[::-1], axis=0)[::-1])[1:],
        "prod axis=0": lambda x, g: (lambda p: ((g * p) / x,))(np.prod(x, axis=0)),
        "transpose": lambda x, g: (x.T, g.T)[1:],
        "reshape": lambda x, g: (x.reshape(-1), g.reshape(x.shape))[1:],
        "slice": _slice,
        "fancy index": lambda x, g: _fancy(x, idx, g),
        "concatenate": lambda x, y, g: (np.concatenate([x, y]), g[:len(x)], g[len(x):])[1:],
        "stack": lambda x, y, g: (np.stack([x, y]), g[0], g[1])[1:],
        "roll": lambda x, g: (np.roll(x, 3, axis=1), np.roll(g, -3, axis=1))[1:],
        "triu": lambda x, g: (np.triu(x), np.triu(g))[1:],
        "outer": lambda a, b, g: (np.outer(a, b), g @ b, a @ g)[1:],
        "kron": _kron,
        "matmul": _matmul,
        "dot (vector)": lambda u, v, g: (u @ v, g * v, g * u)[1:],
        "einsum matmul": lambda a, b, g: (np.einsum("ij,jk->ik", a, b), g @ b.T, a.T @ g)[1:],
        "cholesky": _cholesky,
        "solve": _solve,
        "inv": lambda a, g: (lambda ai: (-(ai.T @ g @ ai.T),))(np.linalg.inv(a)),
        "det": _det,
        "slogdet": lambda a, g: (np.linalg.slogdet(a), g * np.linalg.inv(a).T)[1:],
        "eigh": _eigh,
        "svd": _svd,
        "norm": _norm,
    }
