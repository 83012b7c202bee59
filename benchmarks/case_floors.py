#!/usr/bin/env python
"""The NumPy floor of each whole profiles/ case: its value and gradient written by hand in plain
NumPy (and SciPy's LAPACK wrappers: a Cholesky factorisation in place, the triangular solves and
the inverse from the factor, which NumPy lacks), as a careful engineer writes them for that one
program, and the table of adcli's gradient against it.

    python benchmarks/case_floors.py                        # all cases, a plain table
    python benchmarks/case_floors.py --cases gp_lml,rnn --budget 0.3 --format markdown

``floor_<NAME>(*args) -> (value, gradients)`` (``FLOORS``: case name -> floor) takes the case's
``inputs()`` and returns its value and the gradient with respect to its ``ARGNUMS``, with the
structure ``adcli.value_and_grad(f, argnums=ARGNUMS)`` returns: one gradient for an int, a tuple
for a tuple; a dict or list of dicts for a pytree argument; a Python float for a float argument.

What a floor does: the program's arithmetic, in the fastest form NumPy offers, with the pullback
derived by hand. Loops over elements, columns, minibatches and rank-one terms are vectorised
(``_sum_1000``'s loop is ``x.sum()``, low_rank's outer products one matrix product); recursions
(rk4_ode's steps, the HMM's forward algorithm, the RNN, the stencil's time steps) stay loops,
keep what their reverse sweep needs and run it by hand; operations are fused and made in place
on the floor's own temporaries (never on its arguments), a temporary is freed or reused once dead
(benchmarks/memory.py measures the floors' peaks too), and derivatives are simplified by hand
(a cotangent of ones contracted with y is ``y.sum()``). Constant tables of the program (the
stencil's neighbour indices) are made once. A 2-state ODE runs on Python floats, as one would
write it. One liberty is not taken: an algebraic identity that skips the program's own arithmetic
(``sum(kron(x, y)) = sum(x) * sum(y)``, ``a ** 400`` for 400 products): the floors form the
Kronecker product (as benchmarks/references.py's rules do) and multiply 400 times, or the floor
would time another program. Constants the programs keep at module level (``STEPS``, ``DT``,
``RANK``, the model's ``eps``) are read from the profiles themselves, never copied here.

Script mode, per case (one process, BLAS on one thread as in bench.py): the floor's value and
gradient are checked against adcli's (``bench.compare``, rtol 1e-6, and the same tree structure;
a mismatch is printed, the case is not timed and the exit status is 1); then the NumPy primal
``f(*args)``, the floor and ``adcli.value_and_grad`` are timed with ``bench.measure``, in three
interleaved rounds (the machine's speed drifts over seconds; each time is the median of its
rounds). Columns: case; primal, floor and adcli times; floor / primal (under 1 where the floor
vectorises a loop); adcli / floor; whether adcli / floor <= 1.1, the target: *every benchmark case
within 1.1x of its hand-written NumPy gradient*. With PyTorch installed, its gradient
(benchmarks/peers.py, as in bench.py) is timed too and a note lists the cases where it is below
the floor; without it the column is left out and one line says so.

Imported as a module (tests/test_case_floors.py, memory.py) it does not import bench.py, whose
import pins the thread environment variables of the importing process.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    import bench  # noqa: F401  (first: pins the BLAS threads before NumPy is imported)

import numpy as np  # noqa: E402
from scipy.linalg import lapack, solve_triangular  # noqa: E402

PROFILES = HERE.parent / "profiles"
TARGET = 1.1  # adcli / floor
ROUNDS = 3  # interleaved rounds of the three (or four) timings per case


@functools.cache
def _profile(stem: str):
    """The profiles/ script ``stem``, loaded once under a private name (for its constants)."""
    spec = importlib.util.spec_from_file_location(f"adcli_case_floor_{stem}", PROFILES / f"{stem}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --- Mooncake's cases ----------------------------------------------------------------------------


def floor_sum_1000(x):
    return x.sum(), np.ones_like(x)


floor__sum_1000 = floor_sum_1000  # the while loop over x[n]: the same sum, vectorised


def floor_sum_sin_1000(x):
    return np.sin(x).sum(), np.cos(x)


floor__sum_sin_1000 = floor_sum_sin_1000  # the while loop over np.sin(x[n]), vectorised


def floor_kron_sum(x, y):
    # The Kronecker product's 640,000 products, formed (np.multiply.outer holds the same entries as
    # np.kron, in another order, and skips its reshapes); d sum / dx is sum(y) everywhere.
    return np.multiply.outer(x, y).sum(), (np.full(x.shape, y.sum()), np.full(y.shape, x.sum()))


def floor_kron_view_sum(x, y):
    xv, u = x[0:20, 0:20], np.triu(y)
    gx = np.zeros_like(x)
    gx[0:20, 0:20] = u.sum()
    return np.multiply.outer(xv, u).sum(), (gx, np.triu(np.full(y.shape, xv.sum())))


def floor_broadcast_sin_cos_exp(x):
    e = np.exp(x)
    c = np.cos(e)
    value = np.sin(c).sum()
    g = np.cos(c)  # d sin(c); times d cos(e) = -sin(e), times d exp(x) = e
    s = np.sin(e)
    s *= e
    g *= s
    return value, np.negative(g, out=g)


floor_map_sin_cos_exp = floor_broadcast_sin_cos_exp  # the Python map over x.ravel(), vectorised
floor_naive_map_sin_cos_exp = floor_broadcast_sin_cos_exp  # the double loop of item assignments, vectorised


def floor_simple_mlp(W2, W1, Y, X):
    h = W1 @ X
    mask = h >= 0.0
    h *= mask  # relu(h) = h * (0 <= h)
    d = W2 @ h
    d -= Y  # minus the residual: the squares are the same
    value = np.vdot(d, d)
    d *= 2.0  # d value / d (W2 @ relu(h))
    gW2 = d @ h.T
    del h  # each temporary goes as soon as it is dead: the gradients are twice the primal's arrays
    gh = W2.T @ d
    gh *= mask
    del mask
    gX = W1.T @ gh
    gW1 = gh @ X.T
    return value, (gW2, gW1, np.negative(d, out=d), gX)


def _cholesky_in_place(K):
    """K's lower Cholesky factor, written over K (symmetric, C-ordered: K.T is the same matrix in
    Fortran order, which LAPACK's potrf factors in place as U = L.T, the other triangle zeroed)."""
    upper, info = lapack.dpotrf(K.T, lower=0, overwrite_a=1)
    if info != 0:
        raise np.linalg.LinAlgError("Matrix is not positive definite")
    return upper.T


def _minus_inverse(W, L):
    """``W -= K^-1`` in place, K^-1 from K's lower Cholesky factor L, which it overwrites: LAPACK's
    potri on L.T (the upper factor, Fortran-ordered as it stands: no copy) writes K^-1's upper
    triangle over it, zeros below."""
    upper, info = lapack.dpotri(L.T, lower=0, overwrite_c=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"potri failed ({info})")
    W -= upper
    W -= upper.T
    W.flat[:: L.shape[0] + 1] += np.diagonal(upper)  # the diagonal was taken twice
    return W


def floor_gp_lml(x, y, s):
    n = x.shape[0]
    D = np.subtract.outer(x, x)
    E = D * D
    E *= -0.5
    np.exp(E, out=E)  # se_kernel(x, x)
    K = E.copy()
    K.flat[:: n + 1] += s
    D *= E  # -d K_ij / d x_i, all the gradient needs of D and E
    del E
    L = _cholesky_in_place(K)
    alpha, _ = lapack.dpotrs(L.T, y, lower=0)  # K^-1 y from the factor
    value = -0.5 * (y @ alpha + 2.0 * np.log(np.diagonal(L)).sum() + n * np.log(2.0 * np.pi))
    W = _minus_inverse(np.multiply.outer(alpha, alpha), L)  # L is dead: K^-1 is written over it
    W *= 0.5  # d value / d K (symmetric)
    gs = float(np.trace(W))
    W *= D  # K_ij depends on x_i and x_j: twice the row sums
    gx = W.sum(axis=1)
    gx *= -2.0
    return value, (gx, -alpha, gs)


def floor_large_single_block(x):
    x0, a = x.tolist()
    p = math.prod(itertools.repeat(a, 399))  # the program's 400 products (399 here, one below)
    return x0 * p * a, np.array([p * a, 400.0 * x0 * p])


def floor_logistic_regression(w, b, X, t, lam):
    n = X.shape[0]
    z = X @ w
    z += b
    sp = np.logaddexp(0.0, z)
    value = (sp.sum() - t @ z) / n + 0.5 * lam * (w @ w)
    np.subtract(z, sp, out=sp)
    np.exp(sp, out=sp)  # sigmoid(z) = exp(z - log(1 + exp(z))), stable
    sp -= t
    sp /= n  # d value / d z
    gw = sp @ X
    gw += lam * w
    return value, (gw, float(sp.sum()))


def floor_mlp_dict(params, X, Y):
    W1, b1, W2, b2 = params["W1"], params["b1"], params["W2"], params["b2"]
    h = X @ W1
    h += b1
    np.tanh(h, out=h)
    d = h @ W2
    d += b2
    d -= Y
    value = np.vdot(d, d) / d.size
    d *= 2.0 / d.size  # d value / d prediction
    gW2 = h.T @ d
    dz = d @ W2.T
    np.multiply(h, h, out=h)  # h is dead but for tanh's derivative 1 - h^2: made in its buffer
    np.subtract(1.0, h, out=h)
    dz *= h
    grads = {"W1": X.T @ dz, "b1": dz.sum(axis=0), "W2": gW2, "b2": d.sum(axis=0)}
    return value, {k: grads[k] for k in params}


def floor_rk4_ode(theta, u0, target):
    script = _profile("rk4_ode")
    steps, dt = script.STEPS, script.DT
    a, b, d, c = theta.tolist()
    p, q = u0.tolist()
    h2, h6 = 0.5 * dt, dt / 6.0
    traj, stages = [p, q], []
    for _ in range(steps):  # classic RK4 on the Lotka-Volterra field, in Python floats
        pq = p * q
        k1p, k1q = a * p - b * pq, d * pq - c * q
        p2, q2 = p + h2 * k1p, q + h2 * k1q
        pq = p2 * q2
        k2p, k2q = a * p2 - b * pq, d * pq - c * q2
        p3, q3 = p + h2 * k2p, q + h2 * k2q
        pq = p3 * q3
        k3p, k3q = a * p3 - b * pq, d * pq - c * q3
        p4, q4 = p + dt * k3p, q + dt * k3q
        pq = p4 * q4
        k4p, k4q = a * p4 - b * pq, d * pq - c * q4
        stages.append((p, q, p2, q2, p3, q3, p4, q4))
        p += h6 * (k1p + 2.0 * k2p + 2.0 * k3p + k4p)
        q += h6 * (k1q + 2.0 * k2q + 2.0 * k3q + k4q)
        traj += (p, q)
    r = np.array(traj).reshape(target.shape)
    r -= target
    value = np.vdot(r, r)
    r *= 2.0  # d value / d each state
    G = r.tolist()
    ga = gb = gd = gc = 0.0
    gp, gq = G[steps]

    def field_vjp(p, q, gp, gq):
        """J(p, q)^T (gp, gq) of the field, and its four theta products."""
        pq = p * q
        return gp * (a - b * q) + gq * d * q, gq * (d * p - c) - gp * b * p, gp * p, gp * pq, gq * pq, gq * q

    for t in range(steps - 1, -1, -1):
        p, q, p2, q2, p3, q3, p4, q4 = stages[t]
        g1p, g1q, g2p, g2q = h6 * gp, h6 * gq, 2.0 * h6 * gp, 2.0 * h6 * gq  # stage cotangents k1, k4 / k2, k3
        v0, v1, sa, sb, sd, sc = field_vjp(p4, q4, g1p, g1q)  # k4 = F(u + dt k3)
        up, uq = gp + v0, gq + v1
        k3p, k3q = g2p + dt * v0, g2q + dt * v1
        v0, v1, sa3, sb3, sd3, sc3 = field_vjp(p3, q3, k3p, k3q)  # k3 = F(u + dt/2 k2)
        up, uq = up + v0, uq + v1
        k2p, k2q = g2p + h2 * v0, g2q + h2 * v1
        v0, v1, sa2, sb2, sd2, sc2 = field_vjp(p2, q2, k2p, k2q)  # k2 = F(u + dt/2 k1)
        up, uq = up + v0, uq + v1
        v0, v1, sa1, sb1, sd1, sc1 = field_vjp(p, q, g1p + h2 * v0, g1q + h2 * v1)  # k1 = F(u)
        ga += sa + sa3 + sa2 + sa1
        gb -= sb + sb3 + sb2 + sb1
        gd += sd + sd3 + sd2 + sd1
        gc -= sc + sc3 + sc2 + sc1
        gp, gq = up + v0 + G[t][0], uq + v1 + G[t][1]
    return value, (np.array([ga, gb, gd, gc]), np.array([gp, gq]))


# --- the realistic models -----------------------------------------------------------------------


def floor_batchnorm_mlp(params, X, labels):
    model = _profile("batchnorm_mlp").model
    eps, wd = model.eps, model.weight_decay
    n = X.shape[0]
    h, saved = X, []
    for layer in params[:-1]:
        a = h @ layer["W"]
        a -= a.mean(axis=0)
        std = np.sqrt(np.einsum("ij,ij->j", a, a) / n + eps)
        a /= std  # the normalised values
        bn = a * layer["gamma"]
        bn += layer["beta"]
        mask = bn > 0.0
        bn *= mask  # np.maximum(bn, 0.0)
        saved.append((h, a, std, mask))
        h = bn
    last = params[-1]
    logits = h @ last["W"]
    logits += last["b"]
    logits -= logits.max(axis=1, keepdims=True)
    e = np.exp(logits)
    se = e.sum(axis=1)
    rows = np.arange(n)
    nll = -(logits[rows, labels] - np.log(se)).mean()
    value = nll + 0.5 * wd * sum(np.vdot(layer["W"], layer["W"]) for layer in params)
    e /= se[:, None]  # softmax; minus the labels' one-hot, over n: d value / d logits
    e[rows, labels] -= 1.0
    e /= n
    grads = [None] * len(params)
    gW = h.T @ e
    gW += wd * last["W"]
    grads[-1] = {"W": gW, "b": e.sum(axis=0)}
    gh = e @ last["W"].T
    for i in range(len(params) - 2, -1, -1):
        layer = params[i]
        hin, xhat, std, mask = saved[i]
        gh *= mask
        gbeta = gh.sum(axis=0)
        ggamma = np.einsum("ij,ij->j", gh, xhat)
        xhat *= ggamma  # the batch-norm pullback: (gamma / std) * (g - (gbeta + xhat * ggamma) / n)
        xhat += gbeta
        xhat /= n
        gh -= xhat
        gh *= layer["gamma"] / std
        gW = hin.T @ gh
        gW += wd * layer["W"]
        cot = {"W": gW, "gamma": ggamma, "beta": gbeta}
        grads[i] = {k: cot[k] for k in layer}
        if i:
            gh = gh @ layer["W"].T
    return value, grads


def floor_bayes_logreg(w, b, X, t):
    script = _profile("bayes_logreg")
    clip, eps = script.standardise.__defaults__
    sw2, sb2 = script.PRIOR_SCALE_W ** 2, script.PRIOR_SCALE_B ** 2
    n, dim = X.shape
    mu = X.mean(axis=0)  # the column loop's statistics, all columns at once
    Z = X - mu
    sd = np.sqrt(np.einsum("ij,ij->j", Z, Z) / n)
    np.clip(X, mu - clip * sd, mu + clip * sd, out=Z)
    Z -= Z.mean(axis=0)
    Z /= np.sqrt(np.einsum("ij,ij->j", Z, Z) / n + eps)
    z = Z @ w
    z += b
    sp = np.logaddexp(0.0, z)
    # t log s(z) + (1 - t) log s(-z) = t z - log(1 + exp(z)); the minibatches summed at once
    loglik = t @ z - sp.sum()
    prior = (-0.5 * (w @ w) / sw2 - 0.5 * b * b / sb2 - dim * np.log(script.PRIOR_SCALE_W)
             - np.log(script.PRIOR_SCALE_B) - 0.5 * (dim + 1) * np.log(2.0 * np.pi))
    np.subtract(z, sp, out=sp)
    np.exp(sp, out=sp)
    np.subtract(t, sp, out=sp)  # t - sigmoid(z)
    gw = sp @ Z
    gw -= w / sw2
    return prior + loglik, (gw, float(sp.sum() - b / sb2))


def floor_gp_hyper(params, x, y):
    n, dims = x.shape
    mean, noise_raw, scale = params[0], np.exp(params[1]), np.exp(params[2])
    xs = x / np.exp(params[3:])
    sq = [np.subtract.outer(xs[:, k], xs[:, k]) for k in range(dims)]
    for s in sq:
        s *= s  # the squared scaled differences, one input dimension at a time
    Kf = sq[0].copy()
    for s in sq[1:]:
        Kf += s
    Kf *= -0.5
    np.exp(Kf, out=Kf)
    Kf *= scale
    K = Kf.copy()
    K.flat[:: n + 1] += noise_raw + 0.0001
    L = _cholesky_in_place(K)
    r = solve_triangular(L, y - mean, lower=True, check_finite=False)
    value = -0.5 * (r @ r) - np.log(np.diagonal(L)).sum() - 0.5 * n * np.log(2 * np.pi)
    alpha = solve_triangular(L, r, lower=True, trans="T", check_finite=False)  # K^-1 (y - mean)
    W = _minus_inverse(np.multiply.outer(alpha, alpha), L)
    W *= 0.5  # d value / d K
    g_noise = np.trace(W) * noise_raw
    W *= Kf  # d K / d log scale = Kf; d K / d log lengthscale_k = Kf * sq_k
    grads = [alpha.sum(), g_noise, W.sum()] + [np.vdot(W, s) for s in sq]
    return value, np.array(grads)


def floor_hmm_forward(init_logits, trans_logits, means, sigmas, y):
    m0 = init_logits.max()
    e0 = np.exp(init_logits - m0)
    s0 = e0.sum()
    pi = e0 / s0
    mA = trans_logits.max(axis=1, keepdims=True)
    A = np.exp(trans_logits - mA)
    sA = A.sum(axis=1, keepdims=True)
    A /= sA
    log_A = trans_logits - mA
    log_A -= np.log(sA)
    z = (y[:, None] - means) / sigmas
    log_b = -0.5 * z * z
    log_b -= np.log(sigmas) + 0.5 * np.log(2.0 * np.pi)
    T, K = log_b.shape
    P = np.empty((T, K, K))  # P[t][i, j]: weight of from-state i in to-state j's logsumexp at step t
    la = init_logits - (m0 + np.log(s0))
    la += log_b[0]
    for t in range(1, T):  # the program's recursion, in log space, max-shifted per column
        M = la[:, None] + log_A
        m = M.max(axis=0)
        M -= m
        np.exp(M, out=M)
        s = M.sum(axis=0)
        np.divide(M, s, out=P[t])
        la = np.log(s)
        la += m
        la += log_b[t]
    m = la.max()
    e = np.exp(la - m)
    s = e.sum()
    G = np.empty((T, K))  # cotangents of each step's log alpha, which are log_b[t]'s too
    G[T - 1] = e / s
    for t in range(T - 1, 0, -1):
        np.matmul(P[t], G[t], out=G[t - 1])
    g_logA = np.einsum("tij,tj->ij", P[1:], G[1:])
    g_init = G[0] - pi * G[0].sum()  # through the log-softmaxes
    g_trans = g_logA - A * g_logA.sum(axis=1, keepdims=True)
    z *= G
    g_means = z.sum(axis=0)
    g_means /= sigmas
    return np.log(s) + m, (g_init, g_trans, g_means)


def floor_loop_helper_loss(w, X, y, S, lam):
    n = X.shape[0]
    r = X @ w
    r -= y
    D = np.subtract.outer(w, w)
    UD = np.triu(S, 1)  # the pairs i < j of the double loop
    UD *= D
    value = (r @ r) / n + lam * np.vdot(UD, D)
    gw = r @ X
    gw *= 2.0 / n
    gw += (2.0 * lam) * (UD.sum(axis=1) - UD.sum(axis=0))
    return value, gw


def floor_low_rank(U, V, Y):
    k = _profile("low_rank").RANK
    d = U[:k].T @ V[:k]  # the loop of outer products, as one product
    d -= Y
    value = np.vdot(d, d) + 1e-3 * (np.vdot(U, U) + np.vdot(V, V))
    d *= 2.0
    gU, gV = 2e-3 * U, 2e-3 * V
    gU[:k] += V[:k] @ d.T
    gV[:k] += U[:k] @ d
    return value, (gU, gV)


def floor_rnn(params, inputs, targets):
    C, Pm, h0 = params["change"], params["predict"], params["init hiddens"]
    T, B, ni = inputs.shape
    nh = C.shape[1]
    Wi, Wh = C[:ni], C[ni:-1]
    xin = inputs.reshape(T * B, ni)
    xs = xin @ Wi  # the inputs' part of every step at once
    xs += C[-1]
    xs = xs.reshape(T, B, nh)
    hs = np.empty((T + 1, B, nh))
    hs[0] = h0
    for t in range(T):
        z = hs[t] @ Wh
        z += xs[t]
        np.tanh(z, out=hs[t + 1])
    hflat = hs[1:].reshape(T * B, nh)  # the first output (of the initial state) is not in the loss
    lp = hflat @ Pm[:-1]
    lp += Pm[-1]
    lp -= lp.max(axis=1, keepdims=True)
    e = np.exp(lp)
    se = e.sum(axis=1, keepdims=True)
    lp -= np.log(se)
    count = targets.shape[0] * targets.shape[1]
    tflat = targets.reshape(T * B, -1)
    value = -np.vdot(lp, tflat) / count
    del lp
    e /= se
    e *= tflat.sum(axis=1, keepdims=True)
    e -= tflat
    e /= count  # d value / d logits: (softmax * sum(targets) - targets) / count
    gP = np.empty_like(Pm)
    gP[:-1] = hflat.T @ e
    gP[-1] = e.sum(axis=0)
    dz = (e @ Pm[:-1].T).reshape(T, B, nh)
    tanh_d = np.multiply(hs[1:], hs[1:], out=xs)  # in the inputs' part's buffer, dead since the forward
    np.subtract(1.0, tanh_d, out=tanh_d)
    gh = None
    for t in range(T - 1, -1, -1):  # the reverse sweep over time
        if gh is not None:
            dz[t] += gh
        dz[t] *= tanh_d[t]
        gh = dz[t] @ Wh.T
    dzf = dz.reshape(T * B, nh)
    gC = np.empty_like(C)
    gC[:ni] = xin.T @ dzf
    gC[ni:-1] = hs[:-1].reshape(T * B, nh).T @ dzf
    gC[-1] = dzf.sum(axis=0)
    grads = {"init hiddens": gh.sum(axis=0, keepdims=True), "change": gC, "predict": gP}
    return value, {k: grads[k] for k in params}


@functools.cache
def _stencil_tables(n: int):
    """Flat indices of each cell's (self, x-1, x+1, y-1, y+1) neighbours on the periodic n x n
    grid (np.roll's by 1 and -1 along both axes), and their inverse permutations."""
    idx = np.arange(n * n).reshape(n, n)
    nbr = np.stack([idx, np.roll(idx, 1, 0), np.roll(idx, -1, 0), np.roll(idx, 1, 1), np.roll(idx, -1, 1)])
    nbr = nbr.reshape(5, n * n)
    return nbr, np.argsort(nbr, axis=1)


def floor_stencil_roll(u0, kappa, vx, vy, target):
    script = _profile("stencil_roll")
    steps, dt, dx = script.STEPS, script.DT, script.DX
    n = u0.shape[0]
    nbr, inv = _stencil_tables(n)
    # One step is linear in u: u + dt * (kappa * lap - vx * dudx - vy * dudy) = sum_k C_k * u[nbr_k],
    # the upwind differences' where() folded into the coefficients.
    c, ax, ay = kappa / dx**2, vx.ravel() / dx, vy.ravel() / dx
    C = np.empty((5, n * n))
    C[0] = 1.0 - dt * (4.0 * c + np.abs(ax) + np.abs(ay))
    C[1] = dt * (c + np.maximum(ax, 0.0))
    C[2] = dt * (c - np.minimum(ax, 0.0))
    C[3] = dt * (c + np.maximum(ay, 0.0))
    C[4] = dt * (c - np.minimum(ay, 0.0))
    U = np.empty((steps, n * n))  # every step's input, for kappa's cotangent
    u = u0.ravel()
    for t in range(steps):
        U[t] = u
        u = np.einsum("kn,kn->n", C, u[nbr])
    r = u - target.ravel()
    value = r @ r
    h = r * 2.0
    CT = np.take_along_axis(C, inv, axis=1)  # the transposed step: h -> sum_k (C_k h)[inv_k]
    lap = np.array([-4.0, 1.0, 1.0, 1.0, 1.0]) * (dt / dx**2)  # d C / d kappa
    gk = 0.0
    for t in range(steps - 1, -1, -1):
        hg = h[inv]
        gk += lap @ (hg @ U[t])  # <h, (dC/dkappa) u_t>, with the neighbours moved onto h
        h = np.einsum("kn,kn->n", CT, hg)
    return value, (h.reshape(u0.shape), float(gk))


FLOORS = {
    "sum_1000": floor_sum_1000, "_sum_1000": floor__sum_1000, "sum_sin_1000": floor_sum_sin_1000,
    "_sum_sin_1000": floor__sum_sin_1000, "kron_sum": floor_kron_sum, "kron_view_sum": floor_kron_view_sum,
    "naive_map_sin_cos_exp": floor_naive_map_sin_cos_exp, "map_sin_cos_exp": floor_map_sin_cos_exp,
    "broadcast_sin_cos_exp": floor_broadcast_sin_cos_exp, "simple_mlp": floor_simple_mlp, "gp_lml": floor_gp_lml,
    "large_single_block": floor_large_single_block, "logistic_regression": floor_logistic_regression,
    "mlp_dict": floor_mlp_dict, "rk4_ode": floor_rk4_ode, "batchnorm_mlp": floor_batchnorm_mlp,
    "bayes_logreg": floor_bayes_logreg, "gp_hyper": floor_gp_hyper, "hmm_forward": floor_hmm_forward,
    "loop_helper_loss": floor_loop_helper_loss, "low_rank": floor_low_rank, "rnn": floor_rnn,
    "stencil_roll": floor_stencil_roll,
}


# --- the script: adcli's gradient against the floors ------------------------------------------------


def structure(tree):
    """The tree's shape for comparison: containers and keys in order, each leaf's kind and shape."""
    if isinstance(tree, dict):
        return ("dict", tuple((k, structure(v)) for k, v in tree.items()))
    if isinstance(tree, (list, tuple)):
        return (type(tree).__name__, tuple(structure(v) for v in tree))
    if isinstance(tree, float) and not isinstance(tree, np.ndarray):
        return "float"
    return ("array", np.shape(tree), np.asarray(tree).dtype.str)


def check(mod, adcli_result, floor_result) -> str:
    """'' when the floor's (value, gradients) agree with adcli's (the same structure, and
    bench.compare at rtol 1e-6), else what differs."""
    import bench

    single = isinstance(mod.ARGNUMS, int)
    (v0, g0), (v1, g1) = adcli_result, floor_result
    if structure(g0) != structure(g1):
        return f"gradient structure {structure(g1)} vs adcli's {structure(g0)}"
    leaves = [bench.flat((g,) if single else g) for g in (g0, g1)]
    return bench.compare((float(v0), leaves[0]), (float(v1), leaves[1]))


def run_case(mod, budget: float, torch_make=None) -> dict:
    """The check, then the timings of one case: a dict with the case's name, its times in seconds
    (primal, floor, adcli, torch: None where not timed) and its notes (a mismatch, torch's n/a)."""
    import bench

    import adcli

    row = {"case": mod.NAME, "primal": None, "floor": None, "adcli": None, "torch": None, "mismatch": "",
           "torch_note": ""}
    floor = FLOORS.get(mod.NAME)
    if floor is None:
        row["mismatch"] = f"no floor_{mod.NAME} in benchmarks/case_floors.py"
        return row
    args = mod.inputs()
    vg = adcli.value_and_grad(mod.f, argnums=mod.ARGNUMS)
    row["mismatch"] = check(mod, vg(*args), floor(*args))
    if row["mismatch"]:
        return row
    runs = {"primal": lambda: mod.f(*args), "floor": lambda: floor(*args), "adcli": lambda: vg(*args)}
    if torch_make is not None:
        try:
            run, result = torch_make(mod, args)
            reference = bench.make_adcli(mod, args)[1](vg(*args))
            diff = bench.compare(reference, result(run()))
            if diff:
                row["torch_note"] = f"GRADIENT MISMATCH with adcli: {diff}"
            else:
                runs["torch"] = run
        except Exception as e:  # noqa: BLE001 - any failure is reported as n/a with its reason
            row["torch_note"] = bench.short_reason(e)
    mod.f(*args)  # the primal's warm-up (the others ran in the checks)
    times: dict = {name: [] for name in runs}
    for _ in range(ROUNDS):  # interleaved: the machine's speed drifts over seconds
        for name, run in runs.items():
            times[name].append(bench.measure(run, budget / ROUNDS))
    for name, ts in times.items():
        row[name] = float(np.median(ts))
    return row


def _listed(rows: list[dict], key: str) -> str:
    """'case (1.23x), ...': each row's ``key`` time over its floor."""
    return ", ".join(f"{r['case']} ({r[key] / r['floor']:.2f}x)" for r in rows)


def render(rows: list[dict], fmt: str, header: str, torch_note: str) -> str:
    import bench

    with_torch = not torch_note
    notes: list[str] = []

    def note(text: str) -> str:
        notes.append(text)
        return f" [{len(notes)}]"

    cols = ["case", "NumPy primal", "floor", "adcli", "floor / primal", "adcli / floor", f"≤ {TARGET:g}"]
    if with_torch:
        cols += ["torch", "torch / floor"]
    body = []
    for r in rows:
        if r["mismatch"]:
            line = [r["case"], "MISMATCH" + note(f"{r['case']}: {r['mismatch']}")] + ["—"] * (len(cols) - 2)
            body.append(line)
            continue
        ratio = r["adcli"] / r["floor"]
        line = [r["case"], bench.fmt_time(r["primal"]), bench.fmt_time(r["floor"]), bench.fmt_time(r["adcli"]),
                f"{r['floor'] / r['primal']:.2f}", f"{ratio:.2f}", "yes" if ratio <= TARGET else "NO"]
        if with_torch:
            if r["torch"] is None:
                line += ["n/a" + note(f"torch, {r['case']}: {r['torch_note']}"), "—"]
            else:
                below = r["torch"] < r["floor"]
                line += [bench.fmt_time(r["torch"]), f"{r['torch'] / r['floor']:.2f}" + (" (below)" if below else "")]
        body.append(line)
    grid = bench._md(cols, body) if fmt == "markdown" else bench._plain(cols, body)
    timed = [r for r in rows if not r["mismatch"]]
    over = [r for r in timed if r["adcli"] / r["floor"] > TARGET]
    lines = [header, ""] + grid
    if notes:
        lines += [""] + [f"[{i}] {t}" for i, t in enumerate(notes, 1)]
    lines += ["", f"adcli within {TARGET:g}x of the floor on {len(timed) - len(over)} of {len(timed)} cases"
              + (f"; over: {_listed(over, 'adcli')}" if over else "")]
    if with_torch:
        below = [r for r in timed if r["torch"] is not None and r["torch"] < r["floor"]]
        lines.append(f"PyTorch below the floor on {len(below)} case(s)"
                     + (f": {_listed(below, 'torch')}" if below else ""))
    else:
        lines.append(f"Note: {torch_note}")
    return "\n".join(lines)


def main(argv=None) -> int:
    import argparse
    import platform

    sys.path.insert(0, str(HERE))
    import bench

    import adcli

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    p.add_argument("--budget", type=float, default=0.5, help="seconds per measurement (default 0.5)")
    p.add_argument("--format", choices=("plain", "markdown"), default="plain")
    a = p.parse_args(argv)
    mods = bench.select_cases(bench.load_profiles(), a.cases, p)
    import peers  # benchmarks/ is on sys.path once bench.py is imported

    torch_make, torch_version, torch_note = peers.torch_framework()
    header = (f"Python {platform.python_version()}, NumPy {np.__version__}, adcli {adcli.__version__}"
              + (f", torch {torch_version}" if torch_make else "")
              + "; BLAS pinned to 1 thread before NumPy loads; median of "
              f"{ROUNDS} interleaved rounds, ~{a.budget:g} s per measurement; target: adcli / floor ≤ {TARGET:g}")
    rows = []
    for name, mod in mods.items():
        print(f"  {name} ...", file=sys.stderr, flush=True)
        row = run_case(mod, a.budget, torch_make)
        if row["mismatch"]:
            print(f"\n!!! FLOOR MISMATCH in {name}: {row['mismatch']} !!!\n", file=sys.stderr, flush=True)
        rows.append(row)
    print(render(rows, a.format, header, torch_note))
    failed = [r["case"] for r in rows if r["mismatch"] or r["torch_note"].startswith("GRADIENT MISMATCH")]
    if failed:
        print(f"\n{len(failed)} MISMATCH(ES): {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
