"""The theorems behind a series plan: the quilted Wasserstein bound and the MQM fallback.

Setting: one chain X_0 .. X_{T-1} (a :func:`puffer.models.markov_chain` framework, Theta its
priors), windows W_1 .. W_K (disjoint position ranges), window k's release
Y_k = F_k(X) + Lap(b_k) with F_k(X) = sum_{i in W_k} v(X_i); secret pairs (X_t = s, X_t = s').

* **MQM on the vector of window sums** (Song, Wang, Chaudhuri 2017, Markov Quilt Mechanism):
  the vector (F_1, .., F_K) changes by at most L = max v - min v in L1 when one record changes,
  so F + L Lap(sigma)^K with the MQM's sigma is eps-Pufferfish for the whole series.
  :func:`mqm_candidate`.
* **Quilted Wasserstein** (puffer's own; proof on the docs page "Publishing a series", cited as
  ``Ref("pufferseries", "Thm 1")``): for a quilt Q = {X_{t-a}, X_{t+b}} (a side may be absent:
  the nearby part N then runs to the horizon's end), N the positions strictly between the quilt
  nodes, rho(x_Q) = log P(X_Q = x_Q | X_t = s) / P(X_Q = x_Q | X_t = s') and W(x_Q) any bound of
  sum_k |a_k - a'_k| / b_k on the support of a coupling of the laws of the window parts
  A_k = sum_{i in W_k cap N} v(X_i) given (x_Q, s) and given (x_Q, s'),

      eps_t <= min_Q max_{x_Q} [ rho(x_Q) + W(x_Q) ]    (inf where P(x_Q | s') = 0 < P(x_Q | s)),

  and the series is max_theta max_t max_pairs eps_t -Pufferfish. Here W(x_Q) = min_j [
  W_inf(A_j | x_Q, s ; A_j | x_Q, s') / b_j + sum_{k != j} range_k / b_k ] (the quantile
  coupling of one window's part, any coupling of the rest; range_k = max |a_k - a'_k| over
  the two supports). :func:`quilt_candidate`, :func:`series_epsilon`.

Soundness. Bridge laws P(A_j = . , X_t = s | X_{t-a} = u) and the quilt's transition products
are sums of products of non-negative numbers, computed in float64 with a relative error at most
(n (k + 1) + 2) u for n steps (no cancellation); every probability used is taken with a
relative margin ``_REL`` = 1e-10 (ample for n (k + 1) <= 10^5) plus an absolute floor for
underflow, and the exact support of every law comes from a boolean pass (not from the floats).
rho is rounded outward; W_inf is certified: d grid steps are accepted only where the CDF
comparisons F_p(x) <= F_q(x + d) hold with the margins, in the CDF or in the survival form (the
tails are compared relatively), and exactly at the supports' ends; a near tie costs one grid
step, never a smaller bound. eps(b) is summed with upward rounding; the calibrated scale is
checked with this certified evaluator (eps_total(b) <= eps) before it is returned. Positions with
the same surroundings (the windows, the horizon's ends within the quilt cap, the period's phase
and the support pattern) share one evaluation with the largest marginal ratio P(X_t = s') /
P(X_t = s) of the class (an upper bound for each member). Capping quilt distances is a choice of
quilts: every quilt gives a valid bound.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..refs import Ref
from ._plan import Candidate

__all__ = ["mqm_candidate", "quilt_candidate", "series_epsilon", "QuiltTables"]

_U = 2.0 ** -53
_REL = 1e-10            # relative error margin of every probability (see the module docstring)
_FLOOR = 2.0 ** -990    # absolute floor (underflow)

# The results implemented here (read by scripts/theorems.py for docs/theorems.md)
REFERENCES = {
    "quilt_candidate": (Ref("pufferseries", "Thm 1", "quilted Wasserstein bound for a series of window sums"),
                        Ref("pufferseries", "Lemma 1", "the box lemma (exact loss on the integer box)"),
                        Ref("song2017", "max-influence of a Markov quilt")),
    "series_epsilon": (Ref("pufferseries", "Thm 1", "quilted Wasserstein bound for a series of window sums"),),
    "mqm_candidate": (Ref("song2017", "Markov Quilt Mechanism"), Ref("song2017", "MQMExact")),
}
#: the quilted Wasserstein bound (puffer's own, proved on the docs page "Publishing a series")
QUILT_REFS = REFERENCES["quilt_candidate"]
#: the MQM (Song et al. 2017) on the vector of window sums
MQM_REFS = REFERENCES["mqm_candidate"]


def _up(x: float, n: int = 2) -> float:
    for _ in range(n):
        x = math.nextafter(x, math.inf)
    return x


def _label(th: Any) -> Any:
    return th if isinstance(th, (str, int)) and not isinstance(th, bool) else repr(th)


# ---------------------------------------------------------------------------- MQM fallback

def mqm_candidate(fw: Any, windows: tuple[tuple[int, int], ...], eps: float) -> Candidate:
    """The MQM (Song et al. 2017) for the vector of window sums: 1-Lipschitz in L1 with L =
    max v - min v, so Laplace(L sigma) on each window is eps-Pufferfish for the whole series."""
    from ..mechanisms import MarkovQuilt

    m = MarkovQuilt(fw, eps)
    scale = float(m.noise.scale) if m.noise is not None else 0.0
    if not scale > 0:
        raise ParameterError("fw", fw.name, "a chain whose state values differ (a constant query needs no plan)")
    q = dict(m.quilt)
    names = fw.state_names
    pair = q.get("pair")
    binding = {"prior": _label(q["prior"]), "t": int(q["node"]),
               "pair": None if pair is None else [names[pair[0]], names[pair[1]]],
               "quilt": {"a": q["a"], "b": q["b"]}, "card": int(q["card"]), "influence": float(q["influence"])}
    summary = ("Song et al. 2017, Markov Quilt Mechanism on the vector of window sums (L1-Lipschitz with "
               f"L = {m.lipschitz!r}): Laplace(L sigma), sigma = {m.sigma!r}")
    return Candidate("mqm", scale, eps, binding, MQM_REFS, summary)


# ---------------------------------------------------------------------------- the chain

class _Chain:
    """One prior's chain: step matrices, support patterns, marginals."""

    def __init__(self, fw: Any, j: int):
        M = fw._M[j]
        self.k = int(fw._k)
        self.T = int(fw.length)
        self.M = M
        self.per = fw.period
        self.kind = "hom" if M.ndim == 2 else ("per" if self.per is not None else "step")
        init = fw._pi[j]
        T, k = self.T, self.k
        law = np.empty((T, k))
        pos = np.empty((T, k), dtype=bool)
        law[0], pos[0] = init, init > 0
        for i in range(1, T):
            S = self.step(i - 1)
            law[i] = law[i - 1] @ S
            pos[i] = (pos[i - 1].astype(np.int64) @ (S > 0).astype(np.int64)) > 0
        self.law, self.pos, self.init = law, pos, np.asarray(init, dtype=np.float64)

    def step(self, i: int) -> np.ndarray:
        """The matrix of the step X_i -> X_{i+1}."""
        if self.kind == "hom":
            return np.asarray(self.M)
        if self.kind == "per":
            return np.asarray(self.M[i % self.per])
        return np.asarray(self.M[i])

    def phase(self, t: int) -> int:
        return 0 if self.kind == "hom" else (t % self.per if self.kind == "per" else t)


# ---------------------------------------------------------------------------- certified W_inf

def _w_inf_steps(p: np.ndarray, q: np.ndarray, mp: np.ndarray, mq: np.ndarray) -> np.ndarray:
    """Certified upper bounds (integer grid steps) of W_inf between the rows of p and q (laws on
    the grid 0 .. L - 1, normalised, each mass within relative ``_REL`` of the truth; ``mp``,
    ``mq`` their exact supports). Rows where either law is empty get 0 (never read)."""
    B, L = p.shape
    if B == 0:
        return np.zeros(0, dtype=np.int64)
    idx = np.arange(L)
    big = L + 1
    lo_p = np.where(mp.any(1), np.argmax(mp, 1), big)
    hi_p = np.where(mp.any(1), L - 1 - np.argmax(mp[:, ::-1], 1), -1)
    lo_q = np.where(mq.any(1), np.argmax(mq, 1), big)
    hi_q = np.where(mq.any(1), L - 1 - np.argmax(mq[:, ::-1], 1), -1)
    r = _REL + 4 * L * _U

    def forms(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        F = np.cumsum(x, axis=1)
        S = np.cumsum(x[:, ::-1], axis=1)[:, ::-1]         # P(>= x)
        S = np.concatenate([S[:, 1:], np.zeros((B, 1))], axis=1)   # P(> x)
        return F, S

    Fp, Sp = forms(p)
    Fq, Sq = forms(q)

    def ok(F1: np.ndarray, S1: np.ndarray, lo1: np.ndarray, F2: np.ndarray, S2: np.ndarray, hi2: np.ndarray,
           d: np.ndarray) -> np.ndarray:
        # certified F1(x) <= F2(x + d) for every x, per row (d per row)
        y = idx[None, :] + d[:, None]
        yc = np.minimum(y, L - 1)
        f2 = np.take_along_axis(F2, yc, 1)
        s2 = np.take_along_axis(S2, yc, 1)
        triv = (idx[None, :] < lo1[:, None]) | (y >= hi2[:, None])
        a = F1 * (1 + r) + _FLOOR <= f2 * (1 - r) - _FLOOR
        b = s2 * (1 + r) + _FLOOR <= S1 * (1 - r) - _FLOOR
        return (triv | a | b).all(axis=1)   # type: ignore[no-any-return]

    done = np.zeros(B, dtype=bool)
    out = np.zeros(B, dtype=np.int64)
    empty = ~mp.any(1) | ~mq.any(1)
    done |= empty
    # start from a lower bound: |lo_p - lo_q| and |hi_p - hi_q| are both <= W_inf
    d = np.where(empty, 0, np.maximum(np.abs(lo_p - lo_q), np.abs(hi_p - hi_q)))
    while not done.all():
        rows = np.flatnonzero(~done)
        dd = d[rows]
        good = (ok(Fp[rows], Sp[rows], lo_p[rows], Fq[rows], Sq[rows], hi_q[rows], dd)
                & ok(Fq[rows], Sq[rows], lo_q[rows], Fp[rows], Sp[rows], hi_p[rows], dd))
        out[rows[good]] = dd[good]
        done[rows[good]] = True
        d[rows[~good]] += 1
    return out


# ---------------------------------------------------------------------------- one position

@dataclass
class QuiltTables:
    """The bound's ingredients at one position t (for one prior), per ordered secret pair:
    ``rho[p]`` (quilts, x_Q) the log-ratio bounds WITHOUT the marginal term, ``left[p]`` (quilts,)
    whether the quilt has a left node (then log R_t is added), ``cost[p]`` (quilts, x_Q) the
    coupling bound in query units (divided by the scale b at evaluation), ``quilts`` the (a, b)
    pairs (None: no node on that side)."""

    pairs: list[tuple[int, int]]
    quilts: list[tuple[int | None, int | None]]
    rho: list[np.ndarray]
    left: np.ndarray
    cost: list[np.ndarray]
    xq: list[tuple[int | None, int | None]] = field(default_factory=list)


def _shift_rows(G: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    """G (k, ..., S): row u shifted right by shifts[u] along the last axis (dropping nothing:
    S has room)."""
    out = np.zeros_like(G)
    S = G.shape[-1]
    for u, sh in enumerate(shifts):
        if sh == 0:
            out[u] = G[u]
        elif sh < S:
            out[u, ..., sh:] = G[u, ..., :S - sh]
    return out


def _position_tables(ch: _Chain, t: int, windows: tuple[tuple[int, int], ...], wv: np.ndarray,
                     g: float, e: float, D: int, dists: list[int] | None) -> QuiltTables | None:
    """The tables at position t (None: no possible secret pair at t)."""
    k, T = ch.k, ch.T
    prs = [(s, s2) for s in range(k) for s2 in range(k) if s != s2 and ch.pos[t, s] and ch.pos[t, s2]]
    if not prs:
        return None
    DL, DR = min(t, D), min(T - 1 - t, D)
    lo_pos = t - DL if t > D else 0
    hi_pos = t + DR if T - 1 - t > D else T - 1
    near = [(a, b) for (a, b) in windows if a <= hi_pos and b > lo_pos]
    span = int(wv.max())
    S = span * (hi_pos - lo_pos + 1) + 1
    # the quilt distances considered (any subset is valid)
    la = [a for a in range(1, DL + 1) if dists is None or a in dists or a == DL]
    lb = [b for b in range(1, DR + 1) if dists is None or b in dists or b == DR]
    left_opts: list[int | None] = list(la) + ([None] if t <= D else [])
    right_opts: list[int | None] = list(lb) + ([None] if T - 1 - t <= D else [])

    nW = max(len(near), 1)
    # left DP per window: G[a] (u, s, S) = P(sum over (t-a, t) cap W = sigma, X_t = s | X_{t-a} = u)
    Lf = np.zeros((len(left_opts), nW, k, k, S))      # conditional laws given (u, s), row per option
    Lb = np.zeros((len(left_opts), nW, k, k, S), dtype=bool)
    Lmass = np.zeros((len(left_opts), k, k))           # P(X_t = s | X_{t-a} = u) (None: P(X_t = s))
    Lok = np.zeros((len(left_opts), k), dtype=bool)     # u a possible quilt value
    inw = [[(a <= i < b) for (a, b) in near] or [False] for i in range(T)] if T <= 4 * D + 8 else None

    def member(i: int) -> list[bool]:
        if inw is not None:
            return inw[i]
        return [(a <= i < b) for (a, b) in near] or [False]

    def left_pass() -> None:
        G = np.zeros((nW, k, k, S))
        Gb = np.zeros((nW, k, k, S), dtype=bool)
        if t >= 1:
            M0 = ch.step(t - 1)
            G[:, :, :, 0] = M0[None]
            Gb[:, :, :, 0] = (M0 > 0)[None]
        for a in range(1, DL + 1):
            # G holds distance a (positions t-a+1 .. t-1 inside)
            if a in la:
                oi = left_opts.index(a)
                mass = G[0].sum(-1)
                Lmass[oi] = mass
                Lok[oi] = ch.pos[t - a]
                with np.errstate(divide="ignore", invalid="ignore"):
                    Lf[oi] = np.where(mass[None, :, :, None] > 0, G / np.where(mass > 0, mass, 1)[None, :, :, None], 0)
                Lb[oi] = Gb
            if a == t and t <= D:
                # the None option: X_0 ~ init, position 0 inside N
                oi = left_opts.index(None)
                shs = [wv * m for m in member(0)]
                H0 = np.stack([np.einsum("u,usx->sx", ch.init, _shift_rows(G[j], shs[j])) for j in range(nW)])
                Hb0 = np.stack([np.einsum("u,usx->sx", (ch.init > 0).astype(float),
                                          _shift_rows(Gb[j].astype(float), shs[j])) > 0 for j in range(nW)])
                mass = H0[0].sum(-1)
                Lmass[oi] = 0.0
                Lmass[oi, 0] = 1.0                 # no left node: no left factor
                Lok[oi] = False
                Lok[oi, 0] = True
                with np.errstate(divide="ignore", invalid="ignore"):
                    Lf[oi, :, 0] = np.where(mass[None, :, None] > 0, H0 / np.where(mass > 0, mass, 1)[None, :, None], 0)
                Lb[oi, :, 0] = Hb0
            if a < DL:
                # extend to distance a + 1: new inside position t - a (state u'), new quilt t - a - 1
                Mx = ch.step(t - a - 1)
                mem = member(t - a)
                G2 = np.empty_like(G)
                Gb2 = np.empty_like(Gb)
                for j in range(nW):
                    sh = wv * mem[j]
                    Gs = _shift_rows(G[j], sh)
                    Gbs = _shift_rows(Gb[j], sh)
                    G2[j] = np.einsum("uv,vsx->usx", Mx, Gs)
                    Gb2[j] = np.einsum("uv,vsx->usx", (Mx > 0).astype(float), Gbs.astype(float)) > 0
                G, Gb = G2, Gb2
        if t == 0:
            oi = left_opts.index(None)
            Lmass[oi] = 0.0
            Lmass[oi, 0] = 1.0
            Lok[oi] = False
            Lok[oi, 0] = True
            Lf[oi, :, 0, :, 0] = 1.0
            Lb[oi, :, 0, :, 0] = True

    left_pass()

    # right DP: H[b] (w, s, S) = P(sum over (t, t+b) cap W = sigma, X_{t+b} = w | X_t = s)
    Rf = np.zeros((len(right_opts), nW, k, k, S))
    Rb = np.zeros((len(right_opts), nW, k, k, S), dtype=bool)
    Rmass = np.zeros((len(right_opts), k, k))          # [w, s]
    Rok = np.zeros((len(right_opts), k), dtype=bool)
    H = np.zeros((nW, k, k, S))
    Hb = np.zeros((nW, k, k, S), dtype=bool)
    if t <= T - 2:
        M0 = ch.step(t)
        H[:, :, :, 0] = M0.T[None]
        Hb[:, :, :, 0] = (M0.T > 0)[None]
    for b in range(1, DR + 1):
        if b in lb:
            oi = right_opts.index(b)
            mass = H[0].sum(-1)
            Rmass[oi] = mass
            Rok[oi] = ch.pos[t + b]
            with np.errstate(divide="ignore", invalid="ignore"):
                Rf[oi] = np.where(mass[None, :, :, None] > 0, H / np.where(mass > 0, mass, 1)[None, :, :, None], 0)
            Rb[oi] = Hb
        if b == T - 1 - t and T - 1 - t <= D:
            oi = right_opts.index(None)
            mem = member(T - 1)
            H0 = np.stack([_shift_rows(H[j], wv * mem[j]).sum(0) for j in range(nW)])
            Hb0 = np.stack([_shift_rows(Hb[j], wv * mem[j]).any(0) for j in range(nW)])
            Rmass[oi] = 0.0
            Rmass[oi, 0] = 1.0
            Rok[oi] = False
            Rok[oi, 0] = True
            Rf[oi, :, 0] = H0
            Rb[oi, :, 0] = Hb0
        if b < DR:
            Mx = ch.step(t + b)
            mem = member(t + b)
            H2 = np.empty_like(H)
            Hb2 = np.empty_like(Hb)
            for j in range(nW):
                sh = wv * mem[j]
                Hs = _shift_rows(H[j], sh)
                Hbs = _shift_rows(Hb[j], sh)
                H2[j] = np.einsum("vsx,vw->wsx", Hs, Mx)
                Hb2[j] = np.einsum("vsx,vw->wsx", Hbs.astype(float), (Mx > 0).astype(float)) > 0
            H, Hb = H2, Hb2
    if t == T - 1:
        oi = right_opts.index(None)
        Rmass[oi] = 0.0
        Rmass[oi, 0] = 1.0
        Rok[oi] = False
        Rok[oi, 0] = True
        Rf[oi, :, 0, :, 0] = 1.0
        Rb[oi, :, 0, :, 0] = True

    center = np.array(member(t))
    nA, nB = len(left_opts), len(right_opts)
    quilts: list[tuple[int | None, int | None]] = [(a, b) for a in left_opts for b in right_opts]
    xq: list[tuple[int | None, int | None]] = [(u, w) for u in range(k) for w in range(k)]
    # window positions inside the widest N (for the grid-error term)
    mcount = np.array([max(0, min(b_, hi_pos + 1) - max(a_, lo_pos)) for (a_, b_) in near] or [0])
    err = 2.0 * mcount * e
    rhos, costs = [], []
    for (s, s2) in prs:
        rho = np.full((nA, nB, k, k), -np.inf)
        cost = np.zeros((nA, nB, k, k))
        # log-ratio bounds: left factor P(u | s) / P(u | s') without the marginal, right factor
        with np.errstate(divide="ignore"):
            lnum, lden = Lmass[:, :, s], Lmass[:, :, s2]                     # (nA, k)
            rnum, rden = Rmass[:, :, s], Rmass[:, :, s2]                     # (nB, k)
            lr = _log_ratio_up(lnum, lden)
            rr = _log_ratio_up(rnum, rden)
        okL = Lok & (lnum > 0)                                               # P(u | s) > 0
        okR = Rok & (rnum > 0)
        rho = lr[:, None, :, None] + rr[None, :, None, :]
        live = okL[:, None, :, None] & okR[None, :, None, :]
        rho = np.where(live, rho, -np.inf)
        # coupling bounds where P(x_Q | s') > 0 (else rho is already inf)
        fin = live & np.isfinite(rho)
        idx = np.argwhere(fin)                                               # (n, 4): ia, ib, u, w
        if idx.size:
            Wj = np.zeros((idx.shape[0], nW))
            Rj = np.zeros((idx.shape[0], nW))
            for j in range(nW):
                Ls = Lf[idx[:, 0], j, idx[:, 2], s]
                Ls2 = Lf[idx[:, 0], j, idx[:, 2], s2]
                Lbs = Lb[idx[:, 0], j, idx[:, 2], s]
                Lbs2 = Lb[idx[:, 0], j, idx[:, 2], s2]
                Rs = Rf[idx[:, 1], j, idx[:, 3], s]
                Rs2 = Rf[idx[:, 1], j, idx[:, 3], s2]
                Rbs = Rb[idx[:, 1], j, idx[:, 3], s]
                Rbs2 = Rb[idx[:, 1], j, idx[:, 3], s2]
                cs = int(wv[s]) * bool(center[j]) if near else 0
                cs2 = int(wv[s2]) * bool(center[j]) if near else 0
                p, mp = _conv(Ls, Rs, Lbs, Rbs, cs, S)
                q, mq = _conv(Ls2, Rs2, Lbs2, Rbs2, cs2, S)
                Wj[:, j] = _w_inf_steps(p, q, mp, mq) * g + err[min(j, err.size - 1)]
                lo_p, hi_p = _ends(mp)
                lo_q, hi_q = _ends(mq)
                Rj[:, j] = np.maximum(np.maximum(hi_p - lo_q, hi_q - lo_p), 0) * g + err[min(j, err.size - 1)]
            tot = Rj.sum(1, keepdims=True)
            c = (Wj + (tot - Rj)).min(1)
            # upward: the sum of a few floats (relative 1e-15 is ample)
            c = c * (1 + 1e-12)
            cost[idx[:, 0], idx[:, 1], idx[:, 2], idx[:, 3]] = c
        rhos.append(rho.reshape(nA * nB, k * k))
        costs.append(cost.reshape(nA * nB, k * k))
    left = np.array([a is not None for (a, _) in quilts])
    return QuiltTables(prs, quilts, rhos, left, costs, xq)


def _ends(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    L = m.shape[1]
    any_ = m.any(1)
    lo = np.where(any_, np.argmax(m, 1), 0)
    hi = np.where(any_, L - 1 - np.argmax(m[:, ::-1], 1), 0)
    return lo, hi


def _conv(L: np.ndarray, R: np.ndarray, Lb: np.ndarray, Rb: np.ndarray, c: int, S: int
          ) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise convolution of the laws L and R shifted by c (grid 0 .. S - 1) and of their
    supports."""
    B = L.shape[0]
    out = np.zeros((B, S))
    ob = np.zeros((B, S), dtype=bool)
    nzl = np.flatnonzero(Lb.any(0))
    nzr = np.flatnonzero(Rb.any(0))
    if nzl.size == 0 or nzr.size == 0:
        return out, ob
    rmax = int(nzr.max()) + 1
    for i in nzl:
        lo = i + c
        hi = min(S, lo + rmax)
        if lo >= S:
            break
        out[:, lo:hi] += L[:, i, None] * R[:, :hi - lo]
        ob[:, lo:hi] |= Lb[:, i, None] & Rb[:, :hi - lo]
    return out, ob


def _log_ratio_up(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Upper bounds of log(num / den) with the relative margins (inf where den may be 0, -inf
    where num = 0)."""
    hi = num * (1 + _REL) + _FLOOR
    lo = den * (1 - _REL) - _FLOOR
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(lo > 0, np.log(hi / np.where(lo > 0, lo, 1.0)), np.inf)
    r = np.where(num > 0, r, -np.inf)
    fin = np.isfinite(r)
    rf = np.where(fin, r, 0.0)
    out: np.ndarray = np.where(fin, np.nextafter(rf + 1e-15 * np.abs(rf), np.inf), r)
    return out


# ---------------------------------------------------------------------------- the whole series

@dataclass
class _Class:
    t: int                      # representative position
    members: list[int]
    prior: int
    tables: QuiltTables
    logR: np.ndarray            # per pair: max over members of log P(X_t = s') / P(X_t = s), rounded up


def _dists(D: int) -> list[int]:
    """The quilt distances tried when the cap is large: all up to 16, then a geometric grid."""
    out = list(range(1, min(D, 16) + 1))
    x = 16.0
    while x < D:
        x *= 1.25
        out.append(min(D, int(round(x))))
    return sorted(set(out))


def _build(fw: Any, windows: tuple[tuple[int, int], ...], D: int, progress: Any) -> list[_Class]:
    from .._progress import resolve

    wv_all = np.asarray(fw._vals, dtype=np.int64)
    wv = wv_all - wv_all.min()
    g = float(fw._step)
    e = float(fw.grid_error)
    T = int(fw.length)
    classes: list[_Class] = []
    beat = resolve(progress, label=f"series quilts (T={T})")
    starts = np.array([a for a, _ in windows])
    stops = np.array([b for _, b in windows])
    dists = None if D <= 24 else _dists(D)
    for j in range(len(fw.priors)):
        ch = _Chain(fw, j)
        pats, pid = np.unique(ch.pos, axis=0, return_inverse=True)
        pid = np.asarray(pid).reshape(-1)
        one_pattern = pats.shape[0] == 1
        groups: dict[Any, list[int]] = {}
        for t in range(T):
            lo, hi = t - D - 1, t + D + 1
            i0 = int(np.searchsorted(stops, lo, side="right"))
            i1 = int(np.searchsorted(starts, hi, side="left"))
            rel = tuple((max(int(starts[i]) - t, -D - 2), min(int(stops[i]) - t, D + 2)) for i in range(i0, i1))
            pat = 0 if one_pattern else tuple(pid[max(0, t - D - 1): t + D + 2].tolist())
            key = (ch.phase(t), rel, t if t <= D + 1 else None, T - 1 - t if T - 1 - t <= D + 1 else None, pat)
            groups.setdefault(key, []).append(t)
        done = 0
        for members in groups.values():
            t0 = members[0]
            tab = _position_tables(ch, t0, windows, wv, g, e, D, dists)
            done += 1
            if beat is not None:
                beat(done, len(groups))
            if tab is None:
                continue
            logR = np.empty(len(tab.pairs))
            mem = np.array(members)
            for p, (s, s2) in enumerate(tab.pairs):
                lr = _log_ratio_up(ch.law[mem, s2], ch.law[mem, s])
                logR[p] = float(lr.max())
            classes.append(_Class(t0, members, j, tab, logR))
    return classes


def _eps_of(classes: list[_Class], b: float, *, certified: bool) -> tuple[float, tuple[int, int, int, int] | None]:
    """max over classes and pairs of min over quilts of max over x_Q of rho + cost / b; with the
    witness (class, pair, quilt, x_Q). ``certified``: every step rounded upward."""
    worst, wit = -math.inf, None
    for ci, c in enumerate(classes):
        tab = c.tables
        for p in range(len(tab.pairs)):
            rho = tab.rho[p] + np.where(tab.left, c.logR[p], 0.0)[:, None]
            v = rho + tab.cost[p] / b
            if certified:
                v = np.nextafter(np.nextafter(rho, np.inf) + np.nextafter(tab.cost[p] / b, np.inf), np.inf)
            v = np.where(np.isnan(v), np.inf, v)
            per_q = v.max(1)
            qi = int(np.argmin(per_q))
            val = float(per_q[qi])
            if val > worst:
                worst, wit = val, (ci, p, qi, int(np.argmax(v[qi])))
    return worst, wit


def series_epsilon(fw: Any, windows: Any, scale: float, *, cap: int | None = None, progress: Any = None
                   ) -> float:
    """The certified eps of the whole series (all windows together) with Laplace noise of the
    common ``scale`` on each window, by the quilted Wasserstein bound (an upper bound, rounded
    up; quilt distances up to ``cap``, default min(T - 1, 64))."""
    from .. import _validate as V
    from ._windows import check_windows

    ws = check_windows(windows, fw.length)
    b = V.positive("scale", scale)
    D = _cap(fw, cap)
    return _eps_of(_build(fw, ws, D, progress), b, certified=True)[0]


def _cap(fw: Any, cap: int | None) -> int:
    from .. import _validate as V

    T = int(fw.length)
    if cap is None:
        return max(1, min(T - 1, 64))
    return V.integer("cap", cap, lo=1, hi=max(T - 1, 1))


def quilt_candidate(fw: Any, windows: tuple[tuple[int, int], ...], eps: float, *, cap: int | None = None,
                    progress: Any = None) -> Candidate:
    """The least common scale the quilted Wasserstein bound certifies for ``eps`` (bisection on
    the scale, erring toward more noise, then checked with the certified evaluator)."""
    D = _cap(fw, cap)
    classes = _build(fw, windows, D, progress)
    if not classes:
        raise ParameterError("fw", fw.name, "a chain with at least one possible secret pair")

    def f(b: float) -> float:
        return _eps_of(classes, b, certified=False)[0]

    hi = 1.0
    while f(hi) > eps:
        hi *= 2.0
        if hi > 1e15:
            return Candidate("quilt", math.inf, math.inf, {}, QUILT_REFS, "quilted Wasserstein: no finite scale")
    lo = hi / 2.0 if hi > 1.0 else 0.0
    if lo > 0 and f(lo) <= eps:
        lo = 0.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if f(mid) <= eps:
            hi = mid
        else:
            lo = mid
    b = _up(hi, 4)
    val, wit = _eps_of(classes, b, certified=True)
    while val > eps:          # the certified check: more noise until it holds
        b = _up(b * (1 + 1e-12), 4)
        val, wit = _eps_of(classes, b, certified=True)
    assert wit is not None
    c = classes[wit[0]]
    s, s2 = c.tables.pairs[wit[1]]
    qa, qb = c.tables.quilts[wit[2]]
    u, w = c.tables.xq[wit[3]]
    names = fw.state_names
    binding = {"prior": _label(fw.priors[c.prior]), "t": int(c.t), "pair": [names[s], names[s2]],
               "quilt": {"a": qa, "b": qb}, "x_Q": [None if qa is None else names[u], None if qb is None else names[w]],
               "positions_alike": len(c.members)}
    summary = (f"quilted Wasserstein bound for a series of window sums (puffer, docs 'Publishing a series', Thm 1): "
               f"common Laplace scale {b!r}, quilt distances up to {D}")
    return Candidate("quilt", b, val, binding, QUILT_REFS, summary)


#: type of the progress callbacks
Progress = Callable[[int, int], Any] | None
