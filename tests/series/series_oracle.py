"""The exact loss of a series of Laplace window-sum releases on a small chain (independent of
puffer's theorems): every path of a k-state chain (k**T paths), the window sums as integer
vectors, and the box lemma (docs/series.md, "What the plan certifies"): the likelihood ratio's
supremum over real outputs is attained on the integer box prod_k [min F_k, max F_k], so the loss
is a finite maximum, computed with log-sum-exp in float64 (errors ~1e-13, far below the
tolerances used).
"""
from __future__ import annotations

import itertools

import numpy as np


def paths(k: int, T: int) -> np.ndarray:
    return np.array(list(itertools.product(range(k), repeat=T)), dtype=np.int64)


def path_probs(M: np.ndarray, init: np.ndarray, X: np.ndarray) -> np.ndarray:
    """P(path) for a homogeneous (k, k), periodic (P, k, k) or per-step (T - 1, k, k) chain: the
    step i -> i + 1 uses mats[i % len(mats)]."""
    mats = M[None] if M.ndim == 2 else M
    p = init[X[:, 0]].astype(np.float64)
    for i in range(X.shape[1] - 1):
        p = p * mats[i % mats.shape[0]][X[:, i], X[:, i + 1]]
    return p


def window_sums(X: np.ndarray, values: np.ndarray, windows) -> np.ndarray:
    V = values[X]
    return np.stack([V[:, a:b].sum(1) for a, b in windows], axis=1)


class SeriesOracle:
    """The exact loss sup_y max_{t, (s, s')} log P(y | X_t = s) / P(y | X_t = s') of the whole
    series for given scales (max over the priors)."""

    def __init__(self, priors, T: int, windows, values=None):
        self.windows = list(windows)
        self.T = T
        self.cases = []
        for M, init in priors:
            M = np.asarray(M, dtype=np.float64)
            init = np.asarray(init, dtype=np.float64)
            k = M.shape[-1]
            vals = np.arange(k) if values is None else np.asarray(values)
            X = paths(k, T)
            p = path_probs(M, init, X)
            F = window_sums(X, vals, self.windows)
            uniq, inv = np.unique(F, axis=0, return_inverse=True)
            inv = inv.reshape(-1)
            conds = []
            for t in range(T):
                for s in range(k):
                    m = X[:, t] == s
                    ps = p[m].sum()
                    if ps <= 0:
                        conds.append(None)
                        continue
                    W = np.bincount(inv[m], weights=p[m], minlength=uniq.shape[0]) / ps
                    conds.append(W)
            self.cases.append((k, uniq, conds))

    def loss(self, scales) -> float:
        b = np.broadcast_to(np.asarray(scales, dtype=np.float64), (len(self.windows),))
        worst = 0.0
        for k, uniq, conds in self.cases:
            axes = [np.arange(uniq[:, j].min(), uniq[:, j].max() + 1) for j in range(uniq.shape[1])]
            Y = np.array(list(itertools.product(*axes)), dtype=np.float64)
            # log kernel: -sum_j |y_j - v_j| / b_j (the constants cancel in the ratio)
            LK = -(np.abs(Y[:, None, :] - uniq[None, :, :]) / b[None, None, :]).sum(2)
            mx = LK.max(1, keepdims=True)
            E = np.exp(LK - mx)
            logs = []
            for W in conds:
                logs.append(None if W is None else np.log(E @ W) + mx[:, 0])
            for t in range(self.T):
                for s in range(k):
                    for s2 in range(k):
                        a, c = logs[t * k + s], logs[t * k + s2]
                        if s == s2 or a is None or c is None:
                            continue
                        worst = max(worst, float((a - c).max()))
        return worst

    def optimum(self, eps: float, rel: float = 1e-6) -> float:
        """The least common scale with loss <= eps (bisection; the loss decreases in the scale
        on these chains)."""
        hi = 1.0
        while self.loss(hi) > eps:
            hi *= 2
        lo = 0.0 if hi == 1.0 else hi / 2
        while hi - lo > rel * hi:
            mid = 0.5 * (lo + hi)
            if self.loss(mid) <= eps:
                hi = mid
            else:
                lo = mid
        return hi


def stationary(M) -> np.ndarray:
    M = np.asarray(M, dtype=np.float64)
    w, v = np.linalg.eig(M.T)
    x = np.real(v[:, np.argmin(np.abs(w - 1))])
    return x / x.sum()
