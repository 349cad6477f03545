"""A second, independent exact oracle for series plans (the reviewer's; it shares no code with
series_oracle.py nor with puffer.series).

Every path of a small k-state chain is enumerated (k**T paths, T <= 12), weighted by its
probability under each prior (homogeneous, periodic or per-step matrices, any initial law). For a
secret X_t = s the law of the vector of window sums (real state values, any windows, any
function ``snap`` applied to each window's sum) is tabulated, and the loss of Laplace noise of
scales b_k on the windows is

    sup_{y in R^K} log E[prod_k exp(-|y_k - F_k| / b_k) | X_t = s] / E[... | X_t = s'].

By the box lemma (coordinate-wise the ratio is a Moebius function of exp(2 y_k / b_k) between two
consecutive support values, and constant outside the support's hull) the supremum is attained at
a point of the product of the per-window sets of support values: a finite maximum, computed with
log-sum-exp in float64 (rounding errors ~1e-13). ``check_box`` probes it with random real outputs.
"""
from __future__ import annotations

import numpy as np


def enumerate_paths(k: int, T: int) -> np.ndarray:
    """All k**T paths, one per row (row r is r written in base k, most significant first)."""
    r = np.arange(k ** T, dtype=np.int64)
    out = np.empty((r.size, T), dtype=np.int64)
    for i in range(T - 1, -1, -1):
        out[:, i] = r % k
        r //= k
    return out


def step_matrix(trans: np.ndarray, i: int, period: int | None) -> np.ndarray:
    """The matrix of the step X_i -> X_{i+1}: (k, k) homogeneous, (P, k, k) with ``period``,
    (T - 1, k, k) per step."""
    if trans.ndim == 2:
        return trans
    if period is not None:
        return trans[i % period]
    return trans[i]


def path_weights(paths: np.ndarray, trans: np.ndarray, init: np.ndarray, period: int | None = None) -> np.ndarray:
    logw = np.zeros(paths.shape[0])
    with np.errstate(divide="ignore"):
        logw += np.log(init[paths[:, 0]])
        for i in range(paths.shape[1] - 1):
            logw += np.log(step_matrix(trans, i, period)[paths[:, i], paths[:, i + 1]])
    return np.exp(logw)


def _lse(a: np.ndarray, axis: int) -> np.ndarray:
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(m, axis) + np.log(np.sum(np.exp(a - m), axis=axis))


class Series:
    """A chain with a set of priors, real state values and windows (start, stop)."""

    def __init__(self, priors, values, windows, T: int, period: int | None = None, snap=None):
        self.k = len(values)
        self.T = T
        self.values = np.asarray(values, dtype=np.float64)
        self.windows = [tuple(w) for w in windows]
        self.X = enumerate_paths(self.k, T)
        V = self.values[self.X]
        F = np.stack([V[:, a:b].sum(1) for (a, b) in self.windows], axis=1)
        if snap is not None:
            F = snap(F)
        self.F = np.round(F, 9)          # merge float noise of equal sums
        self.W = [path_weights(self.X, np.asarray(tr, float), np.asarray(pi, float), period) for tr, pi in priors]

    def law(self, j: int, t: int, s: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(support vectors (n, K), probabilities) of the window sums given X_t = s under prior j;
        None if P(X_t = s) = 0."""
        m = (self.X[:, t] == s) & (self.W[j] > 0)
        if not m.any():
            return None
        w = self.W[j][m]
        V, inv = np.unique(self.F[m], axis=0, return_inverse=True)
        p = np.bincount(inv.reshape(-1), weights=w, minlength=V.shape[0])
        return V, p / p.sum()

    def pair_loss(self, lp, lq, b: np.ndarray, box_limit: int = 4_000_000) -> float:
        """sup_y log of the ratio of the smoothed laws lp / lq: the maximum over the box."""
        Vp, Vq = lp[0], lq[0]
        axes = [np.unique(np.concatenate([Vp[:, i], Vq[:, i]])) for i in range(Vp.shape[1])]
        grids = np.meshgrid(*axes, indexing="ij")
        Y = np.stack([g.reshape(-1) for g in grids], axis=1)
        return float(np.max(self.log_ratio(lp, lq, b, Y, box_limit)))

    @staticmethod
    def log_ratio(lp, lq, b, Y, chunk_elems: int = 4_000_000) -> np.ndarray:
        (Vp, pp), (Vq, pq) = lp, lq
        out = np.empty(Y.shape[0])
        step = max(1, chunk_elems // max(Vp.shape[0], Vq.shape[0], 1))
        for lo in range(0, Y.shape[0], step):
            y = Y[lo:lo + step]
            dp = (np.abs(y[:, None, :] - Vp[None]) / b).sum(-1)
            dq = (np.abs(y[:, None, :] - Vq[None]) / b).sum(-1)
            out[lo:lo + step] = _lse(np.log(pp)[None] - dp, 1) - _lse(np.log(pq)[None] - dq, 1)
        return out

    def loss(self, scales, positions=None) -> tuple[float, tuple]:
        """The exact loss of the whole series (max over priors, positions, ordered pairs) and where."""
        b = np.broadcast_to(np.asarray(scales, dtype=np.float64), (len(self.windows),))
        best, where = -np.inf, None
        for j in range(len(self.W)):
            for t in (range(self.T) if positions is None else positions):
                laws = [self.law(j, t, s) for s in range(self.k)]
                for s in range(self.k):
                    for s2 in range(self.k):
                        if s == s2 or laws[s] is None or laws[s2] is None:
                            continue
                        v = self.pair_loss(laws[s], laws[s2], b)
                        if v > best:
                            best, where = v, (j, t, s, s2)
        return best, where

    def optimum(self, eps: float, lo: float = 1e-3, hi: float = 1e4, rel: float = 1e-7) -> float:
        """The least common scale with exact loss <= eps (bisection: the exact loss decreases in
        the common scale; checked by the caller where it matters)."""
        while self.loss(hi)[0] > eps:
            hi *= 2
        while hi - lo > rel * hi:
            mid = 0.5 * (lo + hi)
            if self.loss(mid)[0] <= eps:
                hi = mid
            else:
                lo = mid
        return hi


def check_box(series: Series, scales, rng, n: int = 2000) -> tuple[float, float]:
    """(largest log ratio at random real outputs, the box maximum) over every prior, position and
    pair: the first must not exceed the second (Lemma 1)."""
    b = np.broadcast_to(np.asarray(scales, dtype=np.float64), (len(series.windows),))
    rand_best, box_best = -np.inf, -np.inf
    for j in range(len(series.W)):
        for t in range(series.T):
            laws = [series.law(j, t, s) for s in range(series.k)]
            for s in range(series.k):
                for s2 in range(series.k):
                    if s == s2 or laws[s] is None or laws[s2] is None:
                        continue
                    lo = np.minimum(laws[s][0].min(0), laws[s2][0].min(0)) - 3
                    hi = np.maximum(laws[s][0].max(0), laws[s2][0].max(0)) + 3
                    Y = lo + (hi - lo) * rng.random((n, len(series.windows)))
                    rand_best = max(rand_best, float(series.log_ratio(laws[s], laws[s2], b, Y).max()))
                    box_best = max(box_best, series.pair_loss(laws[s], laws[s2], b))
    return rand_best, box_best


class DPSeries:
    """The exact loss for longer horizons (T up to a few hundred) with few, short windows and
    integer state values: the joint law of the window sums given X_t = s by a forward pass over
    the chain whose state is (X_i, the partial sums of every window), then the box maximum of
    the ratio of the smoothed laws, the smoothing done with dense Laplace kernel matrices (not
    puffer's recursion). ``trans`` per prior: (k, k), or (P, k, k) with ``period``, or (T - 1,
    k, k) per step."""

    def __init__(self, priors, values, windows, T: int, period: int | None = None):
        self.values = np.asarray(values, dtype=np.int64)
        assert (self.values >= 0).all()
        self.k = len(values)
        self.T = T
        self.windows = [tuple(w) for w in windows]
        self.dims = [int(self.values.max()) * (b - a) + 1 for (a, b) in self.windows]
        self.priors = [(np.asarray(tr, float), np.asarray(pi, float)) for tr, pi in priors]
        self.period = period

    def law(self, j: int, t: int, s: int) -> np.ndarray | None:
        trans, init = self.priors[j]
        k = self.k
        P = np.zeros((k, *self.dims))
        P[(slice(None),) + (0,) * len(self.dims)] = init
        for i in range(self.T):
            for w, (a, b) in enumerate(self.windows):
                if a <= i < b:          # add X_i's value to window w's sum
                    Q = np.zeros_like(P)
                    for x in range(k):
                        d = int(self.values[x])
                        src = [x] + [slice(None)] * len(self.dims)
                        dst = [x] + [slice(None)] * len(self.dims)
                        src[1 + w] = slice(0, self.dims[w] - d)
                        dst[1 + w] = slice(d, self.dims[w])
                        Q[tuple(dst)] = P[tuple(src)]
                    P = Q
            if i == t:
                keep = np.zeros(k)
                keep[s] = 1.0
                P = P * keep.reshape((k,) + (1,) * len(self.dims))
            if i < self.T - 1:
                M = step_matrix(trans, i, self.period)
                P = np.moveaxis(np.tensordot(P, M, axes=([0], [0])), -1, 0)
        out = P.sum(0)
        tot = out.sum()
        return None if tot <= 0 else out / tot

    def smooth(self, law: np.ndarray, scales) -> np.ndarray:
        G = law
        for ax, n in enumerate(self.dims):
            i = np.arange(n)
            Kx = np.exp(-np.abs(i[:, None] - i[None, :]) / scales[ax])
            G = np.moveaxis(np.tensordot(Kx, G, axes=([1], [ax])), 0, ax)
        return G

    def loss(self, scales, positions=None) -> tuple[float, tuple]:
        b = np.broadcast_to(np.asarray(scales, dtype=np.float64), (len(self.windows),))
        best, where = -np.inf, None
        for j in range(len(self.priors)):
            for t in (range(self.T) if positions is None else positions):
                G = {}
                for s in range(self.k):
                    lw = self.law(j, t, s)
                    if lw is not None:
                        G[s] = np.log(self.smooth(lw, b))
                for s in G:
                    for s2 in G:
                        if s != s2:
                            v = float((G[s] - G[s2]).max())
                            if v > best:
                                best, where = v, (j, t, s, s2)
        return best, where
