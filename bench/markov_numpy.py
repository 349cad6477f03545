"""The straightforward numpy implementation of Delta_G for a Markov chain with a sum query that
a user would write without puffer (kept as the benchmark peer, and as an independent check of
puffer's values): per prior, a forward and a backward pass over (time, state, partial sum),
``np.convolve`` per (position, state) for the conditional laws, and W_inf by the quantile
method on the merged cumulative levels.

Where this peer is right, and where it refuses (issue 22): linear-space passes underflow for
long chains (a path probability below 2^-1074 becomes 0, and the backward pass sticks at the
smallest subnormal), and the 1e-12 merging of levels reads a tail level of mass < 1e-12 as tied.
At T = 2000 it gave 187 (and 9, 7) where exact arithmetic gives 10 (10, 8). So the laws are
checked against their exact supports (boolean passes over the same recursion): when a reachable
sum has a normalised mass below MIN_MASS = 1e-10 (underflowed to 0, or small enough for the
level merging to misread), ``conditional_laws`` raises ``ValueError`` instead of answering.
What remains outside the check: two *different* laws' levels closer than 1e-12 without being
equal (merged as a tie)."""
from __future__ import annotations

import numpy as np


def stationary(M: np.ndarray) -> np.ndarray:
    k = M.shape[0]
    A = M.T - np.eye(k)
    A[-1, :] = 1.0
    b = np.zeros(k)
    b[-1] = 1.0
    return np.linalg.solve(A, b)


MIN_MASS = 1e-10


def _passes(M: np.ndarray, pi: np.ndarray, T: int, clip: bool = False) -> tuple[np.ndarray, np.ndarray]:
    k = M.shape[0]
    R = T * (k - 1) + 1
    F = np.zeros((T, k, R))
    for x in range(k):
        F[0, x, x] = pi[x]
    for t in range(1, T):
        for y in range(k):
            acc = M[:, y] @ F[t - 1]          # sum_x F[t-1, x, s] P[x, y]
            F[t, y, y:] = np.minimum(acc[: R - y], 1.0) if clip else acc[: R - y]
    B = np.zeros((T, k, R))
    B[T - 1, :, 0] = 1.0
    for t in range(T - 2, -1, -1):
        for x in range(k):
            for y in range(k):
                B[t, x, y:] += M[x, y] * B[t + 1, y, : R - y]
        if clip:
            np.minimum(B[t], 1.0, out=B[t])
    return F, B


def conditional_laws(M: np.ndarray, pi: np.ndarray, T: int, check: bool = True) -> np.ndarray:
    """laws[i, a, s] = P(S = s | X_i = a) for states valued 0..k-1 (linear space, no scaling).
    Raises ValueError where a reachable sum's mass is below MIN_MASS (see the module docstring);
    check=False skips that (for timing only: the values may then be wrong)."""
    F, B = _passes(M, pi, T)
    if not check:
        k = M.shape[0]
        R = T * (k - 1) + 1
        out = np.zeros((T, k, R))
        for i in range(T):
            for a in range(k):
                J = np.convolve(F[i, a], B[i, a])[:R]
                if J.sum() > 0:
                    out[i, a] = J / J.sum()
        return out
    # exact supports: the same recursion on 0/1 indicators (clipped to 1 after every step)
    Fs, Bs = _passes((M > 0).astype(float), (pi > 0).astype(float), T, clip=True)
    k = M.shape[0]
    R = T * (k - 1) + 1
    laws = np.zeros((T, k, R))
    for i in range(T):
        for a in range(k):
            J = np.convolve(F[i, a], B[i, a])[:R]
            tot = J.sum()
            if tot > 0:
                laws[i, a] = J / tot
            reach = np.convolve(Fs[i, a], Bs[i, a])[:R] > 0
            if reach.any() and not (laws[i, a][reach] >= MIN_MASS).all():
                raise ValueError(f"markov_numpy: T={T}: a reachable sum of the law given X_{i} = {a} has mass "
                                 f"{laws[i, a][reach].min():.3g} < {MIN_MASS:g} (underflow or below the level "
                                 "merging): this peer cannot compute it")
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


def delta_g(trans: np.ndarray, T: int, check: bool = True) -> float:
    """max over priors, positions and state pairs of W_inf (stationary start); check: see
    conditional_laws (ValueError where this peer cannot compute the laws)."""
    best = 0.0
    for M in trans:
        laws = conditional_laws(M, stationary(M), T, check)
        k = M.shape[0]
        for i in range(T):
            for a in range(k):
                for b in range(a + 1, k):
                    best = max(best, w_inf_quantile(laws[i, a], laws[i, b]))
    return best
