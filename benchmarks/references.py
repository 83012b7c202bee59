"""Reference hand-written rules for the profiles/ workloads, by case and function.

When the advisor suggests "hand-write a rule for X", the benchmark serves X with the rule below
and times the program's gradient again, so the measured saving of a hand-written rule can be put
next to the advisor's estimate. These rules belong to the benchmark, not to the engine: adcli
ships none of them, and nothing outside benchmarks/ (and their tests) imports this module.

Protocol (docs/rules.md): a rule is a plain function ``rule(*args, **kwargs) -> (value,
pullback)``. ``value`` is what the original function returns (same type: a float for a scalar,
an ndarray of the same shape and dtype otherwise) and ``pullback(g)`` returns a tuple with one
cotangent per positional argument, each with its argument's structure (a dict for a dict, a list
of dicts for a list of dicts), shape and dtype; ``None`` only for an argument that is not a float
(an int, ``self``). Every float argument gets its cotangent, including ones the profile does not
differentiate.

``REFERENCE`` is keyed by ``(script stem, function __qualname__)``: ``("rnn",
"make_rnn_funs.<locals>.update_rnn")``, ``("sum_loop_1000", "f")``; a NumPy callable by its
``__qualname__`` (``("kron_view_sum", "kron")``). Constants a function reads from its script
(``STEPS``, ``DT``, ...) are read from the script itself (``_script``), never copied here.
Each rule is vectorised; where the maths is a recursion (an ODE integrator, the HMM forward
algorithm, an RNN) the forward pass keeps its states and the pullback is a manual reverse sweep.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Callable

import numpy as np

_PROFILES = Path(__file__).resolve().parent.parent / "profiles"


@functools.cache
def _script(stem: str):
    """The profiles/ script ``stem``, loaded once under a private module name (for its constants)."""
    spec = importlib.util.spec_from_file_location(f"adcli_reference_{stem}", _PROFILES / f"{stem}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _nones(extra) -> tuple:
    """Cotangents of trailing non-float positional arguments (an axis, a batch size)."""
    return (None,) * len(extra)


# --- Mooncake's scalar-loop cases -------------------------------------------------------------


def _sum_loop(x):
    return np.sum(x), lambda g: (np.full_like(x, g),)  # np.float64, as the script's loop returns


def _sum_sin_loop(x):
    return np.sum(np.sin(x)), lambda g: (g * np.cos(x),)


def _sin_cos_exp_sum(x):
    e = np.exp(x)
    c = np.cos(e)
    return np.sum(np.sin(c)), lambda g: (g * np.cos(c) * -np.sin(e) * e,)


def _large_single_block(x):
    y = x[0] * x[1] ** 400

    def pullback(g):
        out = np.zeros_like(x)
        out[0] = g * x[1] ** 400
        out[1] = g * 400.0 * x[0] * x[1] ** 399
        return (out,)

    return y, pullback


def _low_rank_reconstruct(U, V):
    # Y = sum_{k < RANK} outer(U[k], V[k]) = U[:RANK].T @ V[:RANK]  (the script's U, V have RANK rows)
    r = _script("low_rank").RANK

    def pullback(g):
        gU, gV = np.zeros_like(U), np.zeros_like(V)
        gU[:r], gV[:r] = V[:r] @ g.T, U[:r] @ g
        return gU, gV

    return U[:r].T @ V[:r], pullback


def _kron(a, b):
    return np.kron(a, b), _kron_pullback(a, b)


def _kron_pullback(a, b):
    """The pullback of ``np.kron(a, b)`` for 2-d a and b."""
    def pullback(g):
        (m, n), (p, q) = a.shape, b.shape
        G = g.reshape(m, p, n, q)  # G[i, k, j, l] = g[i * p + k, j * q + l]; a broadcast g stays a view
        if not G.flags.c_contiguous:  # e.g. the broadcast cotangent of np.sum: einsum reads it in place
            return np.einsum("ipjq,pq->ij", G, b), np.einsum("ipjq,ij->pq", G, a)
        ga = np.matmul(G, b[:, :, None]).sum(axis=1)[..., 0]  # sum_kl G[i, k, j, l] b[k, l]
        gb = np.matmul(a[:, None, None, :], G).sum(axis=0)[:, 0, :]  # sum_ij G[i, k, j, l] a[i, j]
        return ga, gb

    return pullback


# --- gp_lml ------------------------------------------------------------------------------------


def _cholesky_inverse(L):
    """K^-1 from K's lower Cholesky factor, as GP code computes it (GPy's dpotri, scikit-learn's
    cho_solve): LAPACK's potri gives one triangle, copied onto the other."""
    from scipy.linalg import lapack

    half, info = lapack.dpotri(L, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"potri failed ({info})")
    return half + np.tril(half, -1).T


def _gp_lml(x, y, s):
    n = x.shape[0]
    D = x[:, None] - x[None, :]
    E = np.exp(-0.5 * D**2)  # the script's se_kernel(x, x)
    K = E + s * np.eye(n)
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    logdet = 2.0 * np.sum(np.log(np.diagonal(L)))
    value = -0.5 * (np.dot(y, alpha) + logdet + n * np.log(2.0 * np.pi))

    def pullback(g):
        W = (0.5 * g) * (np.outer(alpha, alpha) - _cholesky_inverse(L))  # d value / d K (symmetric)
        gx = -2.0 * np.sum(W * D * E, axis=1)
        return gx, -g * alpha, float(np.trace(W))

    return value, pullback


# --- hmm_forward -------------------------------------------------------------------------------


def _logsumexp(a, *rest, **kwargs):
    axis = rest[0] if rest else kwargs.get("axis")
    m = np.max(a, axis=axis, keepdims=True)
    e = np.exp(a - m)
    s = np.sum(e, axis=axis)
    value = np.log(s) + np.squeeze(m, axis=axis)

    def pullback(g):
        ga = g * e / s if axis is None else np.expand_dims(g / s, axis) * e
        return (ga,) + _nones(rest)

    return value, pullback


def _log_softmax(logits, *rest, **kwargs):
    axis = rest[0] if rest else kwargs.get("axis", -1)
    lse, _ = _logsumexp(logits, axis=axis)
    value = logits - np.expand_dims(lse, axis)

    def pullback(g):
        return (g - np.exp(value) * np.sum(g, axis=axis, keepdims=True),) + _nones(rest)

    return value, pullback


def _gaussian_log_density(y, means, sigmas):
    z = (y[:, None] - means[None, :]) / sigmas[None, :]
    value = -0.5 * z**2 - np.log(sigmas)[None, :] - 0.5 * np.log(2.0 * np.pi)

    def pullback(g):
        gz = g * z / sigmas[None, :]  # g * (-d value / d z) / sigma
        return lambda: -np.sum(gz, axis=1), np.sum(gz, axis=0), np.sum(g * (z * z - 1.0), axis=0) / sigmas

    return value, pullback


def _hmm_log_likelihood(init_logits, trans_logits, means, sigmas, y):
    log_pi, pb_pi = _log_softmax(init_logits)
    log_A, pb_A = _log_softmax(trans_logits, axis=1)
    log_b, pb_b = _gaussian_log_density(y, means, sigmas)
    T, K = log_b.shape
    P = np.empty((T, K, K))  # P[t][i, j]: weight of from-state i in the logsumexp of to-state j at step t
    log_alpha = log_pi + log_b[0]
    for t in range(1, T):  # the script's recursion, same operations (so the same value)
        M = log_alpha[:, None] + log_A
        m = np.max(M, axis=0, keepdims=True)
        e = np.exp(M - m)
        s = np.sum(e, axis=0)
        log_alpha = np.log(s) + np.squeeze(m, axis=0) + log_b[t]
        P[t] = e / s
    value, pb_last = _logsumexp(log_alpha, axis=0)

    def pullback(g):
        g_lb = np.empty((T, K))
        ga = pb_last(g)[0]
        for t in range(T - 1, 0, -1):
            g_lb[t] = ga
            ga = P[t] @ ga
        g_lb[0] = ga
        g_logA = np.einsum("tij,tj->ij", P[1:], g_lb[1:])
        gy, gmeans, gsigmas = pb_b(g_lb)
        return pb_pi(ga)[0], pb_A(g_logA)[0], gmeans, gsigmas, gy

    return value, pullback


# --- loop_helper_loss --------------------------------------------------------------------------


def _smoothness_penalty(w, S):
    U = np.triu(S, 1)  # the pairs i < j
    D = w[:, None] - w[None, :]
    UD = U * D
    value = np.sum(UD * D)

    def pullback(g):
        return 2.0 * g * (np.sum(UD, axis=1) - np.sum(UD, axis=0)), g * np.triu(D * D, 1)

    return value, pullback


# --- rk4_ode: Python floats (the state has 2 components), same operations as the script -------


def _lv(p, q, a, b, d, c):
    return a * p - b * p * q, d * p * q - c * q


def _rk4_fwd(p, q, th, dt):
    k1 = _lv(p, q, *th)
    u2 = (p + 0.5 * dt * k1[0], q + 0.5 * dt * k1[1])
    k2 = _lv(*u2, *th)
    u3 = (p + 0.5 * dt * k2[0], q + 0.5 * dt * k2[1])
    k3 = _lv(*u3, *th)
    u4 = (p + dt * k3[0], q + dt * k3[1])
    k4 = _lv(*u4, *th)
    h = dt / 6.0
    out = (p + h * (k1[0] + 2.0 * k2[0] + 2.0 * k3[0] + k4[0]), q + h * (k1[1] + 2.0 * k2[1] + 2.0 * k3[1] + k4[1]))
    return out, ((p, q), u2, u3, u4, k1, k2, k3, k4)


def _lv_vjp(u, th, g0, g1, gth):
    """Cotangent of the state of the Lotka-Volterra field at u; adds theta's into gth."""
    p, q = u
    a, b, d, c = th
    pq = p * q
    gth[0] += g0 * p
    gth[1] -= g0 * pq
    gth[2] += g1 * pq
    gth[3] -= g1 * q
    return g0 * (a - b * q) + g1 * (d * q), g1 * (d * p - c) - g0 * (b * p)


def _rk4_vjp(saved, th, dt, go0, go1, gth):
    """Cotangents (state, dt) of one RK4 step given its output's; adds theta's into gth."""
    u1, u2, u3, u4, k1, k2, k3, k4 = saved
    h = dt / 6.0
    gk1 = [h * go0, h * go1]
    gk2 = [2.0 * h * go0, 2.0 * h * go1]
    gk3 = [2.0 * h * go0, 2.0 * h * go1]
    gk4 = (h * go0, h * go1)
    gdt = (go0 * (k1[0] + 2.0 * k2[0] + 2.0 * k3[0] + k4[0]) + go1 * (k1[1] + 2.0 * k2[1] + 2.0 * k3[1] + k4[1])) / 6.0
    gu0, gu1 = go0, go1
    a0, a1 = _lv_vjp(u4, th, *gk4, gth)  # u4 = u + dt k3
    gu0 += a0
    gu1 += a1
    gk3[0] += dt * a0
    gk3[1] += dt * a1
    gdt += a0 * k3[0] + a1 * k3[1]
    a0, a1 = _lv_vjp(u3, th, *gk3, gth)  # u3 = u + dt/2 k2
    gu0 += a0
    gu1 += a1
    gk2[0] += 0.5 * dt * a0
    gk2[1] += 0.5 * dt * a1
    gdt += 0.5 * (a0 * k2[0] + a1 * k2[1])
    a0, a1 = _lv_vjp(u2, th, *gk2, gth)  # u2 = u + dt/2 k1
    gu0 += a0
    gu1 += a1
    gk1[0] += 0.5 * dt * a0
    gk1[1] += 0.5 * dt * a1
    gdt += 0.5 * (a0 * k1[0] + a1 * k1[1])
    a0, a1 = _lv_vjp(u1, th, *gk1, gth)
    return gu0 + a0, gu1 + a1, gdt


def _rk4_step(u, theta, dt):
    th = tuple(theta.tolist())
    p, q = u.tolist()
    out, saved = _rk4_fwd(p, q, th, dt)

    def pullback(g):
        gth = [0.0, 0.0, 0.0, 0.0]
        gu0, gu1, gdt = _rk4_vjp(saved, th, dt, *g.tolist(), gth)
        return np.array([gu0, gu1]), np.array(gth), lambda: float(gdt)

    return np.array(out), pullback


def _rk4_simulate(theta, u0):
    script = _script("rk4_ode")
    steps, dt = script.STEPS, script.DT
    th = tuple(theta.tolist())
    state = tuple(u0.tolist())
    states, saved = [state], []
    for _ in range(steps):
        state, s = _rk4_fwd(*state, th, dt)
        states.append(state)
        saved.append(s)

    def pullback(G):
        G = G.tolist()
        gth = [0.0, 0.0, 0.0, 0.0]
        g0, g1 = G[steps]
        for t in range(steps - 1, -1, -1):
            g0, g1, _ = _rk4_vjp(saved[t], th, dt, g0, g1, gth)
            g0 += G[t][0]
            g1 += G[t][1]
        return np.array(gth), np.array([g0, g1])

    return np.array(states), pullback


def _squared_error(simulated, target):
    """``np.sum((u - target) ** 2)`` of a simulation's ``(u, pullback)``: the value and the
    pullback to the simulation's arguments and the target."""
    u, simulate_pullback = simulated
    r = u - target

    def pullback(g):
        gu = (2.0 * g) * r
        return (*simulate_pullback(gu), lambda: -gu)

    return np.sum(r**2), pullback


def _rk4_f(theta, u0, target):
    return _squared_error(_rk4_simulate(theta, u0), target)


# --- stencil_roll ------------------------------------------------------------------------------


def _roll1(u, shift, axis):
    """np.roll(u, shift, axis) of a 2-d array for shift +-1, without np.roll's generic overhead."""
    out = np.empty_like(u)
    src, dst = (u, out) if axis == 0 else (u.T, out.T)
    if shift == 1:
        dst[1:], dst[0] = src[:-1], src[-1]
    else:
        dst[:-1], dst[-1] = src[1:], src[0]
    return out


def _stencil_terms(u, vx_pos, vy_pos, dx):
    """The script's Laplacian and upwind differences (same operations, each roll taken once)."""
    u_xm = _roll1(u, 1, 0)
    u_xp = _roll1(u, -1, 0)
    u_ym = _roll1(u, 1, 1)
    u_yp = _roll1(u, -1, 1)
    lap = (u_xm + u_xp + u_ym + u_yp - 4.0 * u) / dx**2
    dudx = np.where(vx_pos, u - u_xm, u_xp - u) / dx
    dudy = np.where(vy_pos, u - u_ym, u_yp - u) / dx
    return lap, dudx, dudy


def _stencil_adjoint(kappa, vx, vy, vx_pos, vy_pos, dx):
    """h -> the adjoint of u -> kappa * lap - vx * dudx - vy * dudy, applied to h."""
    c = kappa / dx**2
    wxp, wxn = np.where(vx_pos, -vx / dx, 0.0), np.where(vx_pos, 0.0, -vx / dx)
    wyp, wyn = np.where(vy_pos, -vy / dx, 0.0), np.where(vy_pos, 0.0, -vy / dx)
    diag = -4.0 * c + wxp - wxn + wyp - wyn

    def adjoint(h):
        ch = c * h
        return (diag * h + _roll1(ch - wxp * h, -1, 0) + _roll1(ch + wxn * h, 1, 0)
                + _roll1(ch - wyp * h, -1, 1) + _roll1(ch + wyn * h, 1, 1))

    return adjoint


def _stencil_step(u, kappa, vx, vy, dt, dx):
    vx_pos, vy_pos = vx > 0, vy > 0
    lap, dudx, dudy = _stencil_terms(u, vx_pos, vy_pos, dx)
    rate = kappa * lap - vx * dudx - vy * dudy
    value = u + dt * rate

    def pullback(g):
        h = dt * g
        gu = g + _stencil_adjoint(kappa, vx, vy, vx_pos, vy_pos, dx)(h)
        return (gu, float(np.vdot(h, lap)), lambda: -h * dudx, lambda: -h * dudy, lambda: float(np.vdot(g, rate)),
                lambda: float(np.vdot(h, vx * dudx + vy * dudy - 2.0 * kappa * lap)) / dx)

    return value, pullback


def _stencil_simulate(u0, kappa, vx, vy):
    script = _script("stencil_roll")
    steps, dt, dx = script.STEPS, script.DT, script.DX
    vx_pos, vy_pos = vx > 0, vy > 0
    laps, dudxs, dudys = (np.empty((steps,) + u0.shape) for _ in range(3))
    u = u0
    for t in range(steps):
        lap, dudx, dudy = _stencil_terms(u, vx_pos, vy_pos, dx)
        laps[t], dudxs[t], dudys[t] = lap, dudx, dudy
        u = u + dt * (kappa * lap - vx * dudx - vy * dudy)

    def pullback(g):
        adjoint = _stencil_adjoint(kappa, vx, vy, vx_pos, vy_pos, dx)
        H = np.empty((steps,) + u0.shape)  # dt * the cotangent of each step's output
        for t in range(steps - 1, -1, -1):
            H[t] = dt * g
            g = g + adjoint(H[t])
        return (g, float(np.vdot(H, laps)), lambda: -np.einsum("tij,tij->ij", H, dudxs),
                lambda: -np.einsum("tij,tij->ij", H, dudys))

    return u, pullback


def _stencil_f(u0, kappa, vx, vy, target):
    return _squared_error(_stencil_simulate(u0, kappa, vx, vy), target)


# --- rnn: the closures of make_rnn_funs -----------------------------------------------------------


def _only(params, key, cot):
    """The cotangent of a params dict whose leaf ``key`` alone is used: zeros elsewhere, same key order."""
    return {k: cot if k == key else np.zeros_like(v) for k, v in params.items()}


def _rnn_update(params, input, hiddens):
    C = params["change"]
    cat = np.concatenate((input, hiddens), axis=1)
    value = np.tanh(np.dot(cat, C[:-1]) + C[-1:])

    def pullback(g):
        dz = g * (1.0 - value * value)
        gC = np.empty_like(C)
        gC[:-1] = cat.T @ dz
        gC[-1] = np.sum(dz, axis=0)
        gcat = dz @ C[:-1].T
        ni = input.shape[1]
        return _only(params, "change", gC), gcat[:, :ni], gcat[:, ni:]

    return value, pullback


def _rnn_log_softmax_rows(x):
    """The script's log_softmax(x, axis=1), same operations."""
    m = np.max(x, axis=1, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=1, keepdims=True))


def _rnn_output_probs(params, hiddens):
    Pm = params["predict"]
    value = _rnn_log_softmax_rows(np.dot(hiddens, Pm[:-1]) + Pm[-1:])

    def pullback(g):
        go = g - np.exp(value) * np.sum(g, axis=1, keepdims=True)
        gP = np.empty_like(Pm)
        gP[:-1] = hiddens.T @ go
        gP[-1] = np.sum(go, axis=0)
        return _only(params, "predict", gP), go @ Pm[:-1].T

    return value, pullback


def _rnn_loss(params, inputs, targets):
    C, Pm, h0 = params["change"], params["predict"], params["init hiddens"]
    T, B, ni = inputs.shape
    nh, no = C.shape[1], Pm.shape[1]
    Wi, Wh, bias = C[:ni], C[ni:-1], C[-1]
    xs = (inputs.reshape(T * B, ni) @ Wi).reshape(T, B, nh)
    hs = np.empty((T + 1, B, nh))
    hs[0] = h0
    for t in range(T):
        hs[t + 1] = np.tanh(xs[t] + hs[t] @ Wh + bias)
    hflat = hs[1:].reshape(T * B, nh)
    lp = _rnn_log_softmax_rows(hflat @ Pm[:-1] + Pm[-1:])
    n = targets.shape[0] * targets.shape[1]
    tflat = targets.reshape(T * B, no)
    value = -np.sum(lp * tflat) / n

    def pullback(g):
        scale = -g / n
        glp = scale * tflat
        go = glp - np.exp(lp) * np.sum(glp, axis=1, keepdims=True)
        gP = np.empty_like(Pm)
        gP[:-1] = hflat.T @ go
        gP[-1] = np.sum(go, axis=0)
        gh_out = (go @ Pm[:-1].T).reshape(T, B, nh)
        dz = np.empty((T, B, nh))
        gh = np.zeros((B, nh))
        for t in range(T - 1, -1, -1):
            dz[t] = (gh + gh_out[t]) * (1.0 - hs[t + 1] ** 2)
            gh = dz[t] @ Wh.T
        dzf = dz.reshape(T * B, nh)
        gC = np.empty_like(C)
        gC[:ni] = inputs.reshape(T * B, ni).T @ dzf
        gC[ni:-1] = hs[:-1].reshape(T * B, nh).T @ dzf
        gC[-1] = np.sum(dzf, axis=0)
        cot = {"init hiddens": np.sum(gh, axis=0, keepdims=True), "change": gC, "predict": gP}
        return ({k: cot[k] for k in params}, lambda: (dzf @ Wi.T).reshape(T, B, ni),
                lambda: (scale * lp).reshape(targets.shape))

    return value, pullback


# --- bayes_logreg ------------------------------------------------------------------------------


def _bayes_log_likelihood(w, b, Z, t, *rest):
    z = Z @ w + b
    value = np.sum(t * -np.logaddexp(0.0, -z) + (1.0 - t) * -np.logaddexp(0.0, z))

    def pullback(g):
        gz = g * (t - np.exp(-np.logaddexp(0.0, -z)))  # t - sigmoid(z)
        return Z.T @ gz, float(np.sum(gz)), lambda: np.outer(gz, w), lambda: g * z, *_nones(rest)

    return value, pullback


def _bayes_standardise(X, *rest, **kwargs):
    names = ("clip", "eps")
    options = {**dict(zip(names, _script("bayes_logreg").standardise.__defaults__)), **dict(zip(names, rest)), **kwargs}
    clip, eps = options["clip"], options["eps"]
    # The script's per-column reductions, on the rows of X.T: the same pairwise sums, and np.mean,
    # np.std, np.var, np.clip's own steps (sum / n, sqrt of the mean squared deviation; min then
    # max), so the same value; in place where the script makes a temporary.
    n = X.shape[0]
    XT = np.ascontiguousarray(X.T)
    mu = np.sum(XT, axis=1) / n
    C = XT - mu[:, None]
    C *= C
    sd = np.sqrt(np.sum(C, axis=1) / n)
    lo, hi = mu - clip * sd, mu + clip * sd
    np.minimum(XT, hi[:, None], out=C)
    np.maximum(C, lo[:, None], out=C)  # C: the clipped columns
    C -= (np.sum(C, axis=1) / n)[:, None]
    s2 = np.sqrt(np.sum(C * C, axis=1) / n + eps)
    C /= s2[:, None]
    value = np.ascontiguousarray(C.T)

    def pullback(g):
        gv = g * value
        sgv = np.sum(gv, axis=0)
        gc = np.multiply(value, sgv / n, out=gv)  # through centre-and-scale:
        np.subtract(g, gc, out=gc)  # (g - mean(g) - value * mean(g * value)) / s2
        gc -= np.sum(g, axis=0) / n
        gc /= s2
        # through the clip: a clipped entry passes its cotangent to its column's bound, mu -+ clip * sd
        below, above = X < lo, X > hi
        g_lo, g_hi = np.sum(gc, axis=0, where=below), np.sum(gc, axis=0, where=above)
        np.copyto(gc, 0.0, where=below | above)
        k = clip * (g_hi - g_lo) / (n * sd)
        gx = np.multiply(X, k)
        gx += (g_lo + g_hi) / n - k * mu
        gx += gc
        g_opts = (float(np.sum(sd * (g_hi - g_lo))), float(-np.sum(sgv / (2.0 * s2**2))))
        return (gx,) + tuple(c if isinstance(v, float) else None for v, c in zip(rest, g_opts))

    return value, pullback


def _bayes_f(w, b, X, t):
    script = _script("bayes_logreg")
    sw2, sb2 = script.PRIOR_SCALE_W**2, script.PRIOR_SCALE_B**2
    d = w.shape[0]
    Z, pb_std = _bayes_standardise(X)
    ll, pb_ll = _bayes_log_likelihood(w, b, Z, t)  # the minibatches summed at once: the same sum, regrouped
    prior = (-0.5 * np.sum(w**2) / sw2 - 0.5 * b**2 / sb2 - d * np.log(script.PRIOR_SCALE_W)
             - np.log(script.PRIOR_SCALE_B) - 0.5 * (d + 1) * np.log(2.0 * np.pi))

    def pullback(g):
        gw, gb, gZ, gt = pb_ll(g)
        return gw - (g / sw2) * w, float(gb - g * b / sb2), lambda: pb_std(gZ())[0], gt

    return prior + ll, pullback


# --- batchnorm_mlp: methods of BatchNormMLP (``self`` is an argument, its cotangent None) -----


def _bn_forward(self, h, gamma, beta):
    n = h.shape[0]
    mu = np.mean(h, axis=0)
    c = h - mu
    var = np.sum(c * c, axis=0) / n  # np.var's own steps (sum of squared deviations / n): the same value
    std = np.sqrt(var + self.eps)
    value = gamma * c / std + beta
    xhat = c / std

    def pullback(g):
        gbeta = np.sum(g, axis=0)
        ggamma = np.sum(g * xhat, axis=0)
        # (gamma / std) * (g - mean(g) - xhat * mean(g * xhat)): the means are gbeta / n, ggamma / n
        gh = (gamma / std) * (g - (gbeta + xhat * ggamma) / n)
        return gh, ggamma, gbeta

    return value, pullback


def _bn_batch_norm(self, h, gamma, beta):
    value, pb = _bn_forward(self, h, gamma, beta)
    return value, lambda g: (None, *pb(g))


def _bn_mlp_forward(self, params, X):
    h, tape = X, []
    for layer in params[:-1]:
        a = h @ layer["W"]
        bn, pb = _bn_forward(self, a, layer["gamma"], layer["beta"])
        tape.append((h, pb, bn > 0.0))
        h = np.maximum(bn, 0.0)
    last = params[-1]
    value = h @ last["W"] + last["b"]

    def backward(g):
        """The params' cotangents, and X's as a thunk (docs/rules.md: computed when called)."""
        grads = [None] * len(params)
        grads[-1] = {"W": h.T @ g, "b": np.sum(g, axis=0)}
        gh = g @ last["W"].T
        for i in range(len(params) - 2, -1, -1):
            hin, pb, pos = tape[i]
            ga, ggamma, gbeta = pb(gh * pos)
            cot = {"W": hin.T @ ga, "gamma": ggamma, "beta": gbeta}
            grads[i] = {k: cot[k] for k in params[i]}
            if i:
                gh = ga @ params[i]["W"].T
        grads[-1] = {k: grads[-1][k] for k in last}
        return grads, lambda: ga @ params[0]["W"].T

    return value, backward


def _bn_mlp_forward_rule(self, params, X):
    value, backward = _bn_mlp_forward(self, params, X)
    return value, lambda g: (None, *backward(g))


def _bn_mlp_loss(self, params, X, labels):
    logits, backward = _bn_mlp_forward(self, params, X)
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    rows = np.arange(X.shape[0])
    nll = -np.mean(logp[rows, labels])
    l2 = sum(np.sum(layer["W"] ** 2) for layer in params)
    value = nll + 0.5 * self.weight_decay * l2

    def pullback(g):
        glogits = np.exp(logp)
        glogits[rows, labels] -= 1.0
        glogits *= g / X.shape[0]
        grads, gX = backward(glogits)
        for layer, cot in zip(params, grads):
            cot["W"] = cot["W"] + (g * self.weight_decay) * layer["W"]
        return None, grads, gX, None

    return value, pullback


def _var(a, *rest, **kwargs):
    """np.var(a, axis, dtype, out, ddof, keepdims) for ``dtype`` and ``out`` None (as batch_norm calls it)."""
    options = {**dict(zip(("axis", "dtype", "out", "ddof", "keepdims"), rest)), **kwargs}
    axis, ddof, keepdims = options.get("axis"), options.get("ddof", 0), options.get("keepdims", False)
    if options.get("dtype") is not None or options.get("out") is not None or "where" in options:
        raise NotImplementedError("the reference rule for np.var takes axis, ddof and keepdims only")
    n = a.size if axis is None else int(np.prod([a.shape[i] for i in np.atleast_1d(axis)]))
    c = a - np.sum(a, axis=axis, keepdims=True) / n  # np.var's own steps: the same value
    d = max(n - ddof, 0)
    value = np.sum(c * c, axis=axis, keepdims=keepdims) / d

    def pullback(g):
        gk = g if keepdims or axis is None else np.expand_dims(g, axis)
        return ((2.0 / d) * gk * c,) + _nones(rest)

    return value, pullback


# --- gp_hyper: the log_marginal_likelihood closure of make_gp_funs(rbf_covariance, 3) ----------


def _rbf_parts(kernel_params, x, xp):
    output_scale = np.exp(kernel_params[0])
    lengthscales = np.exp(kernel_params[1:])
    diffs = np.expand_dims(x / lengthscales, 1) - np.expand_dims(xp / lengthscales, 0)
    E = np.exp(-0.5 * np.sum(diffs**2, axis=2))
    return output_scale * E, diffs, lengthscales


def _rbf_cov_vjp(W, Kf, diffs, lengthscales):
    """Cotangents (kernel_params, x, xp) of rbf_covariance given W, the cotangent of its value;
    x's and xp's as thunks (computed when called: docs/rules.md)."""
    WK = W * Kf
    g_scale = np.sum(WK)
    g_logl = np.einsum("ij,ijd->d", WK, diffs**2)

    made = []

    def gdiff():  # d value / d diffs, made once for x's and xp's cotangents (the same array in a GP)
        if not made:
            made.append(-WK[:, :, None] * diffs)
        return made[0]
    return (np.concatenate(([g_scale], g_logl)), lambda: np.sum(gdiff(), axis=1) / lengthscales,
            lambda: -np.sum(gdiff(), axis=0) / lengthscales)


def _rbf_covariance(kernel_params, x, xp):
    value, diffs, lengthscales = _rbf_parts(kernel_params, x, xp)

    def pullback(g):
        return _rbf_cov_vjp(g, value, diffs, lengthscales)

    return value, pullback


def _gp_hyper_lml(params, x, y):
    mean = params[0]
    noise_scale = np.exp(params[1]) + 0.0001
    Kf, diffs, lengthscales = _rbf_parts(params[2:], x, x)
    n = len(y)
    cov_y_y = Kf + noise_scale * np.eye(n)
    L = np.linalg.cholesky(cov_y_y)
    r = np.linalg.solve(L, y - mean * np.ones(n))
    value = -0.5 * np.dot(r, r) - np.sum(np.log(np.diag(L))) - 0.5 * n * np.log(2 * np.pi)

    def pullback(g):
        from scipy.linalg import solve_triangular

        alpha = solve_triangular(L, r, lower=True, trans="T")  # K^-1 (y - mean), with the factor's triangle
        W = (0.5 * g) * (np.outer(alpha, alpha) - _cholesky_inverse(L))  # d value / d cov_y_y (symmetric)
        gk, gx, gxp = _rbf_cov_vjp(W, Kf, diffs, lengthscales)
        gparams = np.concatenate(([g * np.sum(alpha), np.trace(W) * np.exp(params[1])], gk))
        return gparams, lambda: gx() + gxp(), lambda: -g * alpha

    return value, pullback


# --- whole objectives: kron_sum, kron_view_sum, logistic_regression, low_rank, mlp_dict -------


def _kron_sum(x, y):
    # The function's own maths, fused: the forward as f computes it (the exported skeleton's
    # forward calls f), the pullback is sum's (a broadcast cotangent) through kron's (``_kron``).
    # The identity d sum(kron(x, y)) / dx = sum(y) would skip the 800x800 work altogether: a
    # rewrite of the maths, not a rule for it, which no cost model of the function predicts.
    K = np.kron(x, y)
    kron_pullback = _kron_pullback(x, y)
    return np.sum(K), lambda g: kron_pullback(np.broadcast_to(g, K.shape))


def _kron_view_sum(x, y):
    # as _kron_sum: the view is taken here, as in f; triu's pullback keeps the upper triangle
    xv, U = x[0:20, 0:20], np.triu(y)
    K = np.kron(xv, U)
    kron_pullback = _kron_pullback(xv, U)

    def pullback(g):
        gxv, gU = kron_pullback(np.broadcast_to(g, K.shape))
        gx = np.zeros_like(x)
        gx[0:20, 0:20] = gxv
        return gx, np.triu(gU)

    return np.sum(K), pullback


def _logistic_regression(w, b, X, t, lam):
    z = X @ w + b
    sp = np.logaddexp(0.0, z)
    n = z.shape[0]
    value = np.mean(sp - t * z) + 0.5 * lam * np.sum(w**2)

    def pullback(g):
        gz = (g / n) * (np.exp(z - sp) - t)  # sigmoid(z) = exp(z - log(1 + exp(z))), stable
        return (X.T @ gz + (g * lam) * w, float(np.sum(gz)), lambda: np.outer(gz, w), lambda: (-g / n) * z,
                lambda: float(0.5 * g * np.sum(w**2)))

    return value, pullback


def _low_rank_f(U, V, Y):
    r = _script("low_rank").RANK
    R = Y - U[:r].T @ V[:r]
    value = np.sum(R**2) + 1e-3 * (np.sum(U**2) + np.sum(V**2))

    def pullback(g):
        gR = (2.0 * g) * R  # d value / d Y; minus that for the reconstruction
        gU, gV = (2e-3 * g) * U, (2e-3 * g) * V
        gU[:r] -= V[:r] @ gR.T
        gV[:r] -= U[:r] @ gR
        return gU, gV, gR

    return value, pullback


def _mlp_dict_f(params, X, Y):
    W1, b1, W2, b2 = params["W1"], params["b1"], params["W2"], params["b2"]
    h = np.tanh(X @ W1 + b1)
    D = h @ W2 + b2 - Y
    value = np.mean(D**2)

    def pullback(g):
        gP = (2.0 * g / D.size) * D
        dz = (gP @ W2.T) * (1.0 - h * h)
        cot = {"W1": X.T @ dz, "b1": np.sum(dz, axis=0), "W2": h.T @ gP, "b2": np.sum(gP, axis=0)}
        return {k: cot[k] for k in params}, lambda: dz @ W1.T, lambda: -gP

    return value, pullback


# --- stencil_roll: numpy.roll itself ----------------------------------------------------------


def _rolled(a, shift, axis, like):
    """np.roll(a, shift, axis) for an int shift and axis, into an array laid out as ``like``
    (np.roll's own empty_like): two slice copies, without np.roll's generic overhead."""
    out = np.empty_like(like)
    n = a.shape[axis]
    s = shift % n if n else 0
    pre = (slice(None),) * (axis % a.ndim)
    out[pre + (slice(s, None),)] = a[pre + (slice(None, n - s),)]
    out[pre + (slice(None, s),)] = a[pre + (slice(n - s, None),)]
    return out


def _roll(a, shift, *rest, **kwargs):
    axis = rest[0] if rest else kwargs.get("axis")
    if isinstance(shift, (int, np.integer)) and isinstance(axis, (int, np.integer)) and a.ndim:
        return _rolled(a, shift, axis, a), lambda g: (_rolled(g, -shift, axis, a), None, *_nones(rest))
    # a tuple of shifts or of axes, or no axis (the flattened array): np.roll itself, both ways
    back = np.negative(shift)
    return np.roll(a, shift, axis=axis), lambda g: (np.roll(g, back, axis=axis), None, *_nones(rest))


def _triu(m, *rest, **kwargs):
    """np.triu(m, k): the upper triangle; its pullback keeps the cotangent's (a mask, no maths)."""
    k = {**dict(zip(("k",), rest)), **kwargs}.get("k", 0)
    return np.triu(m, k), lambda g: (np.triu(g, k), *_nones(rest))


def _outer(a, b):
    """np.outer(a, b) of two vectors: one broadcast product; its pullback two matrix-vector
    products (thunks: the engine asks only for a traced argument's)."""
    a, b = np.asarray(a), np.asarray(b)
    return np.multiply(a.ravel()[:, None], b.ravel()[None, :]), lambda g: (
        lambda: (g @ b.ravel()).reshape(a.shape), lambda: (a.ravel() @ g).reshape(b.shape))


REFERENCE: dict[tuple[str, str], Callable] = {
    ("sum_loop_1000", "f"): _sum_loop,
    ("sum_sin_loop_1000", "f"): _sum_sin_loop,
    ("naive_map_sin_cos_exp", "f"): _sin_cos_exp_sum,
    ("map_sin_cos_exp", "f"): _sin_cos_exp_sum,
    ("large_single_block", "f"): _large_single_block,
    ("low_rank", "reconstruct"): _low_rank_reconstruct,
    ("kron_view_sum", "kron"): _kron,
    ("gp_lml", "f"): _gp_lml,
    ("hmm_forward", "f"): _hmm_log_likelihood,
    ("hmm_forward", "hmm_log_likelihood"): _hmm_log_likelihood,
    ("hmm_forward", "logsumexp"): _logsumexp,
    ("hmm_forward", "log_softmax"): _log_softmax,
    ("hmm_forward", "gaussian_log_density"): _gaussian_log_density,
    ("loop_helper_loss", "smoothness_penalty"): _smoothness_penalty,
    ("rk4_ode", "f"): _rk4_f,
    ("rk4_ode", "simulate"): _rk4_simulate,
    ("rk4_ode", "rk4_step"): _rk4_step,
    ("stencil_roll", "simulate"): _stencil_simulate,
    ("stencil_roll", "step"): _stencil_step,
    ("stencil_roll", "f"): _stencil_f,
    ("rnn", "make_rnn_funs.<locals>.update_rnn"): _rnn_update,
    ("rnn", "make_rnn_funs.<locals>.hiddens_to_output_probs"): _rnn_output_probs,
    ("rnn", "make_rnn_funs.<locals>.loss"): _rnn_loss,
    ("bayes_logreg", "log_likelihood"): _bayes_log_likelihood,
    ("bayes_logreg", "standardise"): _bayes_standardise,
    ("batchnorm_mlp", "BatchNormMLP.batch_norm"): _bn_batch_norm,
    ("batchnorm_mlp", "BatchNormMLP.forward"): _bn_mlp_forward_rule,
    ("batchnorm_mlp", "BatchNormMLP.loss"): _bn_mlp_loss,
    ("batchnorm_mlp", "var"): _var,
    ("gp_hyper", "rbf_covariance"): _rbf_covariance,
    ("gp_hyper", "make_gp_funs.<locals>.log_marginal_likelihood"): _gp_hyper_lml,
    ("bayes_logreg", "f"): _bayes_f,
    ("kron_sum", "f"): _kron_sum,
    ("kron_view_sum", "f"): _kron_view_sum,
    ("logistic_regression", "f"): _logistic_regression,
    ("low_rank", "f"): _low_rank_f,
    ("mlp_dict", "f"): _mlp_dict_f,
    ("stencil_roll", "roll"): _roll,
    ("kron_view_sum", "triu"): _triu,
    ("low_rank", "outer"): _outer,
}
