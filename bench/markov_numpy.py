"""The straightforward numpy implementation of Delta_G for a Markov chain with a sum query that
a user would write without puffer (kept as the benchmark peer, and as an independent check of
puffer's values): per prior, a forward and a backward pass over (time, state, partial sum),
``np.convolve`` per (position, state) for the conditional laws, and W_inf by the quantile
method on the merged cumulative levels."""
from __future__ import annotations

import numpy as np


def stationary(M: np.ndarray) -> np.ndarray:
    k = M.shape[0]
    A = M.T - np.eye(k)
    A[-1, :] = 1.0
    b = np.zeros(k)
    b[-1] = 1.0
    return np.linalg.solve(A, b)


def conditional_laws(M: np.ndarray, pi: np.ndarray, T: int) -> np.ndarray:
    """laws[i, a, s] = P(S = s | X_i = a) for states valued 0..k-1 (linear space, no scaling)."""
    k = M.shape[0]
    R = T * (k - 1) + 1
    F = np.zeros((T, k, R))
    for x in range(k):
        F[0, x, x] = pi[x]
    for t in range(1, T):
        for y in range(k):
            acc = M[:, y] @ F[t - 1]          # sum_x F[t-1, x, s] P[x, y]
            F[t, y, y:] = acc[: R - y]
    B = np.zeros((T, k, R))
    B[T - 1, :, 0] = 1.0
    for t in range(T - 2, -1, -1):
        for x in range(k):
            for y in range(k):
                B[t, x, y:] += M[x, y] * B[t + 1, y, : R - y]
    laws = np.zeros((T, k, R))
    for i in range(T):
        for a in range(k):
            J = np.convolve(F[i, a], B[i, a])[:R]
            tot = J.sum()
            if tot > 0:
                laws[i, a] = J / tot
    return laws


def w_inf_quantile(p: np.ndarray, q: np.ndarray, tol: float = 1e-12) -> float:
    """W_inf between two laws on the same integer grid by sup_u |F^-1(u) - G^-1(u)|, evaluated
    on the union of the cumulative levels (levels within tol merged)."""
    xp, xq = np.flatnonzero(p > 0), np.flatnonzero(q > 0)
    Fp, Fq = np.cumsum(p[xp]), np.cumsum(q[xq])
    levels = np.unique(np.concatenate([Fp, Fq]))
    levels = levels[np.r_[True, np.diff(levels) > tol]]
    u = levels - tol / 2   # the quantile just below each level's end
    ip = np.minimum(np.searchsorted(Fp, u, side="left"), xp.size - 1)
    iq = np.minimum(np.searchsorted(Fq, u, side="left"), xq.size - 1)
    return float(np.max(np.abs(xp[ip] - xq[iq])))


def delta_g(trans: np.ndarray, T: int) -> float:
    """max over priors, positions and state pairs of W_inf (stationary start)."""
    best = 0.0
    for M in trans:
        laws = conditional_laws(M, stationary(M), T)
        k = M.shape[0]
        for i in range(T):
            for a in range(k):
                for b in range(a + 1, k):
                    best = max(best, w_inf_quantile(laws[i, a], laws[i, b]))
    return best
