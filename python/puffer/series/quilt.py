"""The theorems behind a series plan: the quilted local-loss bound and the MQM fallback.

Setting: one chain X_0 .. X_{T-1} (a :func:`puffer.models.markov_chain` framework, Theta its
priors), windows W_1 .. W_K (disjoint position ranges), window k's release
Y_k = F_k(X) + Lap(b) with F_k(X) = sum_{i in W_k} v(X_i); secret pairs (X_t = s, X_t = s').
The proofs are on the docs page "Series plans: what the plan certifies" (cited as
``Ref("pufferseries", ...)``).

* **Lemma 1 (box lemma)**: for laws mu, nu on the integers and Laplace kernels, the supremum
  over real outputs of the ratio of the smoothed laws is a maximum over the product of the
  coordinates' support values (or any finite superset of them).
* **Theorem 1 (quilt decomposition)**: for a quilt Q = {X_{t-a}, X_{t+b}} (a side may be
  absent: the nearby part N then runs to the horizon's end), rho(x_Q) = log P(X_Q = x_Q |
  X_t = s) / P(X_Q = x_Q | X_t = s') and Lambda(x_Q) any bound of the log-ratio of the
  expected Laplace densities of the windows' parts inside N given (x_Q, s) and (x_Q, s'),
  uniformly in the outputs: eps_t <= min_Q max_{x_Q} [rho(x_Q) + Lambda(x_Q)], and the series
  is max_theta max_t max_pairs eps_t -Pufferfish. Q empty (N = the whole chain) is the exact
  loss itself.
* **Lemma 2 (local loss)**: Lambda computed exactly by Lemma 1: one window meeting N (the
  convolution of the two bridge laws around t), two adjacent windows (a mixture over the
  state at the boundary between them, on the 2-D box), three or more (the joint law by a
  forward pass, on boxes up to ``_BOX`` points, counted on the support values).
* **MQM on the vector of window sums** (Song, Wang, Chaudhuri 2017): the vector (F_1, .., F_K)
  changes by at most L = max v - min v in L1 when one record changes, so Laplace(L sigma) per
  window with the MQM's sigma is eps-Pufferfish for the whole series. :func:`mqm_candidate`.

Lattice padding (Lemma 3 (b)): with padding Delta, each quilt's bound plus Delta / b per window
meeting its nearby part (``series_epsilon(..., lattice_sensitivity=Delta)``, what a plan read
from a file is re-checked against: :meth:`puffer.series.SeriesPlan.verify`). The laws live on
the grid of the state values: their size is known before any work (:func:`grid_points`), and
values without a common step that would need more than :data:`MAX_GRID` points are refused
(:func:`check_grid`; ``plan(theorem="best")`` then takes the MQM, which needs no grid).

Soundness. Bridge laws P(A = . , X_t = s | X_{t-a} = u) and the quilt's transition products
are sums of products of non-negative numbers, computed in float64 with a relative error at most
(n (k + 1) + 2) u for n steps (no cancellation); every probability used is taken with a
relative margin ``_REL`` = 1e-8 (ample for n (k + 1) <= 10^7) plus an absolute floor for
underflow, and the supports come from boolean passes (not from the floats). The Laplace
smoothing sums positive terms (a kernel-matrix product on small grids, a two-sided recursion on
large ones); logarithms and sums are rounded up. The
calibrated scale is checked with the certified evaluator (eps_total(b) <= eps, raised until it
holds) before it is returned. Positions with the same surroundings (the windows, the horizon's
ends within the quilt cap, the period's phase and the support pattern) share one evaluation with
the largest marginal ratio P(X_t = s') / P(X_t = s) of the class (an upper bound for each
member). Capping quilt distances, the grid of distances and keeping a class's best quilts are
choices of quilts: every quilt gives a valid bound.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..refs import Ref
from ._candidate import Candidate

__all__ = ["mqm_candidate", "quilt_candidate", "series_epsilon", "check_grid", "grid_problem", "grid_points",
           "MAX_GRID"]

_U = 2.0 ** -53
_REL = 1e-8             # relative error margin of every probability (see the module docstring)
_FLOOR = 2.0 ** -990    # absolute floor (underflow)
_BOX = 4096             # the largest box of a quilt meeting 3 or more windows (else not in the quilt set)
_BOX2 = 1 << 20         # the largest 2-D box of a quilt meeting two windows (else not in the quilt set)
_MAX_BYTES = 1 << 30    # the most memory the bridge passes of one position may take (else refused)

# The results implemented here (read by scripts/theorems.py for docs/theorems.md)
REFERENCES = {
    "quilt_candidate": (Ref("pufferseries", "Thm 1", "quilt decomposition of a series of window sums"),
                        Ref("pufferseries", "Lemma 1", "the box lemma (exact loss on the box of support values)"),
                        Ref("pufferseries", "Lemma 2", "the exact local loss of the windows inside a quilt"),
                        Ref("song2017", "max-influence of a Markov quilt")),
    "series_epsilon": (Ref("pufferseries", "Thm 1", "quilt decomposition of a series of window sums"),
                       Ref("pufferseries", "Lemma 2", "the exact local loss of the windows inside a quilt"),
                       Ref("pufferseries", "Lemma 3", "more noise, and the lattice padding of the releases")),
    "mqm_candidate": (Ref("song2017", "Markov Quilt Mechanism"), Ref("song2017", "MQMExact")),
}
#: the quilt decomposition with the exact local loss (puffer's own, proved on the docs page "series")
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
    return Candidate("mqm", scale, eps, binding, MQM_REFS, summary, float(m.lattice_sensitivity()))


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


# ---------------------------------------------------------------------------- bridge passes

def _shift(G: np.ndarray, sh: np.ndarray, axis0: int) -> np.ndarray:
    """G with the slices along ``axis0`` (a state axis) shifted right by sh[x] on the last axis."""
    out = np.zeros_like(G)
    S = G.shape[-1]
    for x, d in enumerate(sh):
        d = int(d)
        if d >= S:
            continue
        src = np.take(G, x, axis=axis0)
        dst = [slice(None)] * G.ndim
        dst[axis0] = x  # type: ignore[call-overload]
        dst[-1] = slice(d, S)
        out[tuple(dst)] = src[..., :S - d]
    return out


@dataclass
class _Pass:
    """Bridge laws from an anchor position i0, for distances d = 1 .. n, per window j (unnormalised):
    ``F[d-1, j, x_far, x_anchor, sigma]`` = P(sum over the open interval between i0 and i0 +- d of
    window j's values = sigma, X_far = x_far | X_anchor = x_anchor) (right pass: far = i0 + d; left
    pass: P(.., X_anchor | X_far), far = i0 - d); ``Fb`` the exact supports; ``none`` / ``noneb``
    (j, x_anchor, sigma): the same up to the horizon's end, the end position inside (left: X_0
    from the initial law, joint with X_anchor; right: given X_anchor), or None."""

    F: np.ndarray
    Fb: np.ndarray
    none: np.ndarray | None
    noneb: np.ndarray | None

    def mass(self, d: int) -> np.ndarray:
        out: np.ndarray = self.F[d - 1, 0].sum(-1)    # (x_far, x_anchor): the transition product
        return out

    def massb(self, d: int) -> np.ndarray:
        out: np.ndarray = self.Fb[d - 1, 0].any(-1)
        return out


def _right_pass(ch: _Chain, i0: int, n: int, wins: list[tuple[int, int]], wv: np.ndarray, S: int,
                none: bool) -> _Pass:
    k = ch.k
    nW = max(len(wins), 1)
    F = np.zeros((max(n, 1), nW, k, k, S))
    Fb = np.zeros((max(n, 1), nW, k, k, S), dtype=bool)
    H = np.zeros((nW, k, k, S))
    Hb = np.zeros((nW, k, k, S), dtype=bool)
    if n >= 1:
        M0 = ch.step(i0)
        H[:, :, :, 0] = M0.T[None]
        Hb[:, :, :, 0] = (M0.T > 0)[None]
    nb = nbb = None
    for d in range(1, n + 1):
        F[d - 1], Fb[d - 1] = H, Hb
        pos = i0 + d                    # the far node; it becomes inside when extending
        mem = [a <= pos < b for (a, b) in wins] or [False]
        if d == n and none:
            nb = np.stack([_shift(H[j], wv * mem[j], 0).sum(0) for j in range(nW)])
            nbb = np.stack([_shift(Hb[j], wv * mem[j], 0).any(0) for j in range(nW)])
        if d < n:
            Mx = ch.step(pos)
            Mb = (Mx > 0).astype(float)
            H2 = np.empty_like(H)
            Hb2 = np.empty_like(Hb)
            for j in range(nW):
                Hs = _shift(H[j], wv * mem[j], 0)
                Hbs = _shift(Hb[j], wv * mem[j], 0)
                H2[j] = np.einsum("vsx,vw->wsx", Hs, Mx)
                Hb2[j] = np.einsum("vsx,vw->wsx", Hbs.astype(float), Mb) > 0
            H, Hb = H2, Hb2
    if n == 0 and none:     # the anchor is the last position: nothing to its right
        nb = np.zeros((nW, k, S))
        nb[:, :, 0] = 1.0
        nbb = nb > 0
    return _Pass(F, Fb, nb, nbb)


def _left_pass(ch: _Chain, i0: int, n: int, wins: list[tuple[int, int]], wv: np.ndarray, S: int,
               none: bool) -> _Pass:
    k = ch.k
    nW = max(len(wins), 1)
    F = np.zeros((max(n, 1), nW, k, k, S))
    Fb = np.zeros((max(n, 1), nW, k, k, S), dtype=bool)
    G = np.zeros((nW, k, k, S))
    Gb = np.zeros((nW, k, k, S), dtype=bool)
    if n >= 1:
        M0 = ch.step(i0 - 1)
        G[:, :, :, 0] = M0[None]
        Gb[:, :, :, 0] = (M0 > 0)[None]
    nb = nbb = None
    for d in range(1, n + 1):
        F[d - 1], Fb[d - 1] = G, Gb
        pos = i0 - d
        mem = [a <= pos < b for (a, b) in wins] or [False]
        if d == n and none:             # pos = 0: X_0 from the initial law, inside N
            nb = np.stack([np.einsum("u,usx->sx", ch.init, _shift(G[j], wv * mem[j], 0)) for j in range(nW)])
            nbb = np.stack([np.einsum("u,usx->sx", (ch.init > 0).astype(float),
                                      _shift(Gb[j], wv * mem[j], 0).astype(float)) > 0 for j in range(nW)])
        if d < n:
            Mx = ch.step(pos - 1)
            Mb = (Mx > 0).astype(float)
            G2 = np.empty_like(G)
            Gb2 = np.empty_like(Gb)
            for j in range(nW):
                Gs = _shift(G[j], wv * mem[j], 0)
                Gbs = _shift(Gb[j], wv * mem[j], 0)
                G2[j] = np.einsum("uv,vsx->usx", Mx, Gs)
                Gb2[j] = np.einsum("uv,vsx->usx", Mb, Gbs.astype(float)) > 0
            G, Gb = G2, Gb2
    if n == 0 and none:     # the anchor is position 0
        nb = np.zeros((nW, k, S))
        nb[:, :, 0] = ch.init[None, :]
        nbb = nb > 0
    return _Pass(F, Fb, nb, nbb)


def _cond(x: np.ndarray) -> np.ndarray:
    """Rows of x normalised over the last axis (zero rows stay zero)."""
    m = x.sum(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        out: np.ndarray = np.where(m > 0, x / np.where(m > 0, m, 1.0), 0.0)
    return out


class _Convs:
    """Convolutions requested one batch at a time and computed together (one pass over the
    grid for all rows of a class)."""

    def __init__(self) -> None:
        self.L: list[np.ndarray] = []
        self.R: list[np.ndarray] = []
        self.c: list[np.ndarray] = []
        self.n = 0
        self.out: np.ndarray | None = None

    def add(self, L: np.ndarray, R: np.ndarray, c: int) -> slice:
        n = L.shape[0]
        self.L.append(L)
        self.R.append(R)
        self.c.append(np.full(n, c, dtype=np.int64))
        sl = slice(self.n, self.n + n)
        self.n += n
        return sl

    def run(self, S: int) -> None:
        if self.n == 0:
            self.out = np.zeros((0, S))
            return
        self.out = _conv_rows(np.concatenate(self.L), np.concatenate(self.R), np.concatenate(self.c))

    def __getitem__(self, sl: slice) -> np.ndarray:
        assert self.out is not None
        return self.out[sl]


def _conv_rows(L: np.ndarray, R: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Row-wise convolution of the laws L and R (B, S) shifted by c (B,), truncated to S (the
    grid holds every possible sum)."""
    B, S = L.shape
    out = np.zeros((B, S))
    nzl = np.flatnonzero(L.any(0))
    nzr = np.flatnonzero(R.any(0))
    if nzl.size == 0 or nzr.size == 0:
        return out
    rmax = int(nzr.max()) + 1
    for cc in np.unique(c):
        rows = np.flatnonzero(c == cc)
        for i in nzl:
            lo = i + int(cc)
            if lo >= S:
                break
            hi = min(S, lo + rmax)
            out[rows, lo:hi] += L[rows, i, None] * R[rows, :hi - lo]
    return out


# ---------------------------------------------------------------------------- exact local loss

def _local_loss(p: np.ndarray, q: np.ndarray, beta: float) -> np.ndarray:
    """Upper bounds of sup_y log (p * lap_beta)(y) / (q * lap_beta)(y) per row (laws on the
    integer grid 0 .. S - 1, noise scale beta in grid steps): by the box lemma the supremum over
    real y is the maximum over the support values of the two laws (of all rows together: a
    superset is still exact). The smoothing at those points is a sum of positive terms (relative
    error <= 4 S u), the laws carry ``_REL``."""
    B, S = p.shape
    if B == 0:
        return np.zeros(0)
    lam = math.exp(-1.0 / beta)
    pts = np.flatnonzero(p.any(0) | q.any(0))
    if pts.size == 0:
        return np.zeros(B)
    gp, gq = _smooth_at(p[:, pts], pts, lam), _smooth_at(q[:, pts], pts, lam)
    r = _REL + 8 * S * _U
    hi = gp * (1 + r) + _FLOOR
    lo = gq * (1 - r) - _FLOOR
    live = p.any(1) & q.any(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(lo > 0, np.log(hi / np.where(lo > 0, lo, 1.0)), np.inf)
    out: np.ndarray = np.where(live, v.max(1), 0.0)
    out = np.where(np.isfinite(out), np.nextafter(out + 1e-15 * np.abs(out), np.inf), out)
    res: np.ndarray = np.maximum(out, 0.0)
    return res


# ---------------------------------------------------------------------------- one position

#: joint-law rows of quilts meeting 3 or more windows (see ``_Rows.rowsN``)
_RowN = tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, ...]]


@dataclass
class _Rows:
    """The local laws of one class, in groups (pair, quilt, x_Q): one-window rows (``pa``,
    ``qa``: the laws of the window's part under s and s') and two-window rows (``W2`` (n, 2, k):
    P(Z = z | x_Q, s or s') of the boundary state; ``A2``, ``B2`` (n, 2, k, S): the two parts'
    laws given z); ``rho`` per group (without log R_t); ``left`` per quilt (a left node: log R_t
    added); ``err`` the grid-error term (times 1/b)."""

    gid: np.ndarray
    pa: np.ndarray
    qa: np.ndarray
    gid2: np.ndarray
    W2: np.ndarray
    A2: np.ndarray
    B2: np.ndarray
    rho: np.ndarray             # (pairs, quilts, x_Q)
    left: np.ndarray            # (quilts,)
    err: float
    pairs: list[tuple[int, int]]
    quilts: list[tuple[int | None, int | None]]
    k: int
    #: per quilt: how many windows meet its nearby part
    nwin: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: quilts meeting 3 or more windows, batched by box: (quilt index per row, group ids,
    #: joint laws (n, 2, *box), the box's value set per axis)
    rowsN: list[_RowN] = field(default_factory=list)

    def values(self, beta: float, b: float, logR: np.ndarray) -> np.ndarray:
        """(pairs, quilts, x_Q): rho + the local loss bound at scale b (beta = b / grid step)."""
        flat = np.zeros(self.rho.size)
        if self.gid.size:
            np.maximum.at(flat, self.gid, _local_loss(self.pa, self.qa, beta))
        if self.gid2.size:
            np.maximum.at(flat, self.gid2, _local_loss2(self.W2, self.A2, self.B2, beta))
        for _, gids, J, vals in self.rowsN:
            np.maximum.at(flat, gids, _local_lossN(J, vals, beta))
        lam = np.nextafter(flat + self.err / b, np.inf)
        rho = self.rho + np.where(self.left, 1.0, 0.0)[None, :, None] * logR[:, None, None]
        v: np.ndarray = np.nextafter(rho + lam.reshape(self.rho.shape), np.inf)
        return np.where(np.isnan(v), np.inf, v)

    def keep(self, quilts: np.ndarray) -> _Rows:
        """The rows of the listed quilts only (any subset of quilts gives a valid bound)."""
        nP, nQ, nX = self.rho.shape
        newq = -np.ones(nQ, dtype=np.int64)
        newq[quilts] = np.arange(quilts.size)

        def remap(gid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            qi = (gid // nX) % nQ
            m = newq[qi] >= 0
            pi = gid // (nX * nQ)
            return (pi[m] * quilts.size + newq[qi[m]]) * nX + gid[m] % nX, m

        g1, m1 = remap(self.gid)
        g2, m2 = remap(self.gid2)
        rN = []
        for qis, gids, J, vals in self.rowsN:
            m = newq[qis] >= 0
            if m.any():
                rN.append((newq[qis[m]], remap(gids[m])[0], J[m], vals))
        return _Rows(g1, self.pa[m1], self.qa[m1], g2, self.W2[m2], self.A2[m2], self.B2[m2],
                     self.rho[:, quilts], self.left[quilts], self.err, self.pairs, [self.quilts[i] for i in quilts],
                     self.k, self.nwin[quilts], rN)


#: grids up to this many points are smoothed by a product with the kernel matrix (one BLAS call)
_SMALL = 96


@functools.lru_cache(maxsize=4096)
def _sums(vals: tuple[int, ...], c: int) -> np.ndarray:
    """The sorted integers that are sums of at most c of the (integer) values ``vals`` (with
    repetition; 0 included): a superset of the support of any window part of c positions."""
    reach = np.zeros(max(vals) * c + 1, dtype=bool)
    reach[0] = True
    cur = reach.copy()
    for _ in range(c):
        nxt = np.zeros_like(cur)
        for v in vals:
            nxt[v:] |= cur[: cur.size - v]
        cur = nxt
        reach |= cur
    out = np.flatnonzero(reach)
    out.setflags(write=False)      # shared by the cache
    return out


def _smooth_at(x: np.ndarray, pts: np.ndarray, lam: float) -> np.ndarray:
    """(x * e^{-|.|/beta}) at the sorted integer points ``pts``, along the last axis, for x
    (..., pts.size) the masses at those points (lam = e^{-1/beta}): sums of positive terms, by a
    product with the kernel matrix lam^|p_i - p_j| (at most ``_SMALL`` points; each entry within
    1 ulp of the power of the float lam) or a two-sided recursion with the factors lam^(gap)
    (each within 1 ulp; relative error <= 4 n u for n points)."""
    n = x.shape[-1]
    pf = pts.astype(np.float64)
    if n <= _SMALL:
        K = np.power(lam, np.abs(pf[:, None] - pf[None, :]))
        out_: np.ndarray = np.matmul(x, K)
        return out_
    c = np.power(lam, np.diff(pf))
    f = x.copy()
    for i in range(1, n):
        f[..., i] += c[i - 1] * f[..., i - 1]
    g = x.copy()
    for i in range(n - 2, -1, -1):
        g[..., i] += c[i] * g[..., i + 1]
    out: np.ndarray = f + g - x
    return out


def _local_loss2(W: np.ndarray, A: np.ndarray, B: np.ndarray, beta: float) -> np.ndarray:
    """Upper bounds of sup_{y1, y2} log g_s / g_s' per row, g(y1, y2) = sum_z W_z (A_z *
    lap)(y1) (B_z * lap)(y2): by the box lemma the maximum over the product of the two
    coordinates' support values (of all rows together: a superset is still exact)."""
    n, _, k, S = A.shape
    lam = math.exp(-1.0 / beta)
    ia = np.flatnonzero(A.any((0, 1, 2)))
    ib = np.flatnonzero(B.any((0, 1, 2)))
    ia = ia if ia.size else np.zeros(1, dtype=np.int64)
    ib = ib if ib.size else np.zeros(1, dtype=np.int64)
    SA, SB = _smooth_at(A[..., ia], ia, lam), _smooth_at(B[..., ib], ib, lam)
    out = np.empty(n)
    r = _REL * 2 + 8 * (A.shape[-1] + B.shape[-1] + k) * _U
    step = max(1, int(4e6 // max(1, 2 * k * SA.shape[-1] * SB.shape[-1])))
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        g = np.einsum("nsz,nszi,nszj->nsij", W[lo:hi], SA[lo:hi], SB[lo:hi])
        gp = g[:, 0] * (1 + r) + _FLOOR
        gq = g[:, 1] * (1 - r) - _FLOOR
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.where(gq > 0, np.log(gp / np.where(gq > 0, gq, 1.0)), np.inf)
        out[lo:hi] = v.reshape(hi - lo, -1).max(1)
    out = np.where(np.isfinite(out), np.nextafter(out + 1e-15 * np.abs(out), np.inf), out)
    return np.maximum(out, 0.0)


def _local_lossN(J: np.ndarray, vals: tuple[np.ndarray, ...], beta: float) -> np.ndarray:
    """Upper bounds of sup_y log (J_s * lap)(y) / (J_s' * lap)(y) per row, J (n, 2, *box) the joint
    laws of the window parts on the product of the value sets ``vals`` (per axis, sorted grid
    values, a superset of the supports): by the box lemma the maximum over that product."""
    lam = math.exp(-1.0 / beta)
    G = J
    for ax in range(2, J.ndim):
        G = np.moveaxis(_smooth_at(np.moveaxis(G, ax, -1), vals[ax - 2], lam), -1, ax)
    r = _REL * 2 + 8 * (sum(int(v[-1]) + 1 for v in vals) + J.ndim) * _U
    gp = G[:, 0] * (1 + r) + _FLOOR
    gq = G[:, 1] * (1 - r) - _FLOOR
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(gq > 0, np.log(gp / np.where(gq > 0, gq, 1.0)), np.inf)
    out = v.reshape(J.shape[0], -1).max(1)
    out = np.where(np.isfinite(out), np.nextafter(out + 1e-15 * np.abs(out), np.inf), out)
    return np.maximum(out, 0.0)  # type: ignore[no-any-return]


def _joint_laws(ch: _Chain, t: int, lo_n: int, hi_n: int, a: int | None, b: int | None,
                wins: list[tuple[int, int]], wv: np.ndarray, sec: int, vals: list[np.ndarray]) -> np.ndarray:
    """The joint law of the window parts (one axis per window of ``wins``, indexed by the sorted
    grid values ``vals[j]``: every partial sum of the part's values, 0 included) of N = [lo_n,
    hi_n] given X_{t-a} = u, X_t = sec, X_{t+b} = w: shape (k_u, k_w, *sizes) (k_u = 1 without a
    left node, k_w = 1 without a right node), by a forward pass over N."""
    k = ch.k
    dims = [v.size for v in vals]
    nu = k if a is not None else 1
    T0 = ch.step(t - a) if a is not None else ch.init[None, :]
    P = np.zeros((nu, k, *dims))
    P[(slice(None), slice(None)) + (0,) * len(dims)] = T0
    # per axis and state: the indices (src, dst) of the values v and v + wv[x] in vals[j]
    moves: list[list[tuple[np.ndarray, np.ndarray]]] = []
    for v in vals:
        mv = []
        for x in range(k):
            pos = np.searchsorted(v, v + int(wv[x]))
            ok = pos < v.size
            ok[ok] = v[pos[ok]] == v[ok] + int(wv[x])
            mv.append((np.flatnonzero(ok), pos[ok]))
        moves.append(mv)
    for i in range(lo_n, hi_n + 1):
        for j, (ws, we) in enumerate(wins):
            if ws <= i < we:
                ax = 2 + j
                Q = np.zeros_like(P)
                for x in range(k):
                    src_i, dst_i = moves[j][x]
                    Px = np.moveaxis(P[:, x], ax - 1, 0)
                    Qx = np.moveaxis(Q[:, x], ax - 1, 0)     # a view: writes into Q
                    # a value leaving the set would carry no mass (the set holds every partial sum)
                    Qx[dst_i] = Px[src_i]
                P = Q
        if i == t:
            mask = np.zeros(k)
            mask[sec] = 1.0
            P = P * mask.reshape((1, k) + (1,) * len(dims))
        if i < hi_n:
            P = np.moveaxis(np.tensordot(P, ch.step(i), axes=([1], [0])), -1, 1)
    if b is not None:
        out = np.moveaxis(np.tensordot(P, ch.step(hi_n), axes=([1], [0])), -1, 1)   # (u, w, *dims)
    else:
        out = P.sum(1, keepdims=True)
    m = out.reshape(out.shape[0], out.shape[1], -1).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        res: np.ndarray = np.where(m.reshape(m.shape + (1,) * len(dims)) > 0,
                                   out / np.where(m > 0, m, 1.0).reshape(m.shape + (1,) * len(dims)), 0.0)
    return res


def _class_rows(ch: _Chain, t: int, windows: tuple[tuple[int, int], ...], wv: np.ndarray, e: float,
                D: int, dists: list[int] | None) -> _Rows | None:
    k, T = ch.k, ch.T
    prs = [(s, s2) for s in range(k) for s2 in range(k) if s != s2 and ch.pos[t, s] and ch.pos[t, s2]]
    if not prs:
        return None
    DL, DR = min(t, D), min(T - 1 - t, D)
    noneL, noneR = t <= D, T - 1 - t <= D
    lo_pos, hi_pos = t - DL, t + DR
    near = [(a, b) for (a, b) in windows if a <= hi_pos and b > lo_pos]
    span = int(wv.max())
    S = span * (hi_pos - lo_pos + 1) + 1
    wset = tuple(sorted({int(x) for x in wv}))
    la = [a for a in range(1, DL + 1) if dists is None or a in dists or a == DL]
    lb = [b for b in range(1, DR + 1) if dists is None or b in dists or b == DR]
    left_opts: list[int | None] = list(la) + ([None] if noneL else [])
    right_opts: list[int | None] = list(lb) + ([None] if noneR else [])
    quilts: list[tuple[int | None, int | None]] = [(a, b) for a in left_opts for b in right_opts]
    nQ, nX = len(quilts), k * k
    Gt = _left_pass(ch, t, DL, near, wv, S, noneL)
    Ht = _right_pass(ch, t, DR, near, wv, S, noneR)
    inw = [a <= t < b for (a, b) in near]
    # boundary passes: for each adjacent pair (P, Nx) of near windows, anchored at e = last of P
    bpass: dict[int, _Pass] = {}
    for i in range(len(near) - 1):
        eb = near[i][1] - 1
        if eb >= t:
            bpass[i] = _right_pass(ch, eb, hi_pos - eb, [near[i + 1]], wv, S, noneR)
        else:
            bpass[i] = _left_pass(ch, eb, eb - lo_pos, [near[i]], wv, S, noneL)

    def lpart(a: int | None, j: int) -> tuple[np.ndarray, np.ndarray]:
        """(mass (u, s), conditional laws (u, s, S)) of window j's part on (t - a, t) given u, s."""
        if a is None:
            assert Gt.none is not None
            lw = np.zeros((k, k, S))
            lw[0] = _cond(Gt.none[j])
            mass = np.zeros((k, k))
            mass[0] = 1.0
            return mass, lw
        return Gt.mass(a), _cond(Gt.F[a - 1, j])

    def rpart(b: int | None, j: int) -> tuple[np.ndarray, np.ndarray]:
        """(mass (w, s), conditional laws (w, s, S)) of window j's part on (t, t + b) given s, w."""
        if b is None:
            assert Ht.none is not None
            rw = np.zeros((k, k, S))
            rw[0] = _cond(Ht.none[j])
            mass = np.zeros((k, k))
            mass[0] = 1.0
            return mass, rw
        return Ht.mass(b), _cond(Ht.F[b - 1, j])

    okL = {a: (ch.pos[t - a] if a is not None else np.eye(k, dtype=bool)[0]) for a in left_opts}
    okR = {b: (ch.pos[t + b] if b is not None else np.eye(k, dtype=bool)[0]) for b in right_opts}
    rho = np.full((len(prs), nQ, nX), -np.inf)
    rows_g: list[np.ndarray] = []
    rows: list[tuple[slice, slice]] = []
    rows2_g: list[np.ndarray] = []
    rows2: list[tuple[np.ndarray, list[list[slice]], np.ndarray]] = []
    cv = _Convs()
    rowsN: list[_RowN] = []
    nwin = np.zeros(len(quilts), dtype=np.int64)
    for qi, (a, b) in enumerate(quilts):
        lo_n = 0 if a is None else t - a + 1
        hi_n = T - 1 if b is None else t + b - 1
        meet = [i for i, (ws, we) in enumerate(near) if ws <= hi_n and we - 1 >= lo_n]
        nwin[qi] = len(meet)
        valsN: list[np.ndarray] = []
        if len(meet) >= 2:
            # the box of Lemma 1 on the support values: per window, the sums of its part's values
            cnt = [max(0, min(near[j][1] - 1, hi_n) - max(near[j][0], lo_n) + 1) for j in meet]
            valsN = [_sums(wset, c) for c in cnt]
            if int(np.prod([v.size for v in valsN])) > (_BOX if len(meet) > 2 else _BOX2):
                rho[:, qi] = np.inf        # not in the quilt set (any subset is valid): never chosen
                continue
            if len(meet) == 2:
                valsN = []
        lm, _ = lpart(a, 0)
        rm, _ = rpart(b, 0)
        lmb = (Gt.massb(a) if a is not None else lm > 0)
        rmb = (Ht.massb(b) if b is not None else rm > 0)
        for pi, (s, s2) in enumerate(prs):
            lr = _log_ratio_up(lm[:, s], lm[:, s2], lmb[:, s])         # (u,)
            rr = _log_ratio_up(rm[:, s], rm[:, s2], rmb[:, s])         # (w,)
            live = (okL[a] & lmb[:, s])[:, None] & (okR[b] & rmb[:, s])[None, :]
            # exact zeros: a denominator with an exact zero support is infinite
            lr = np.where(lmb[:, s] & ~lmb[:, s2], np.inf, lr)
            rr = np.where(rmb[:, s] & ~rmb[:, s2], np.inf, rr)
            with np.errstate(invalid="ignore"):
                r2 = np.where(live, lr[:, None] + rr[None, :], -np.inf)
            rho[pi, qi] = r2.reshape(-1)
            fin = np.argwhere(live & np.isfinite(r2))
            if fin.size == 0 or not meet:
                continue
            U, W = fin[:, 0], fin[:, 1]
            gbase = (pi * nQ + qi) * nX + U * k + W
            if len(meet) > 2:
                wins = [near[j] for j in meet]
                Js = _joint_laws(ch, t, lo_n, hi_n, a, b, wins, wv, s, valsN)
                Js2 = _joint_laws(ch, t, lo_n, hi_n, a, b, wins, wv, s2, valsN)
                rowsN.append((np.full(U.size, qi), gbase, np.stack([Js[U, W], Js2[U, W]], axis=1),
                              tuple(valsN)))
                continue
            if len(meet) == 1:
                j = meet[0]
                _, Lw = lpart(a, j)
                _, Rw = rpart(b, j)
                c = int(inw[j])
                hp = cv.add(Lw[U, s], Rw[W, s], int(wv[s]) * c)
                hq = cv.add(Lw[U, s2], Rw[W, s2], int(wv[s2]) * c)
                rows_g.append(gbase)
                rows.append((hp, hq))
                continue
            iP, iN = meet
            eb = near[iP][1] - 1
            bp = bpass[iP]
            Z = list(range(k))
            if eb >= t:
                # Z = X_e right of t: A_P | (u, s, z) and A_Nx | (z, w)
                _, Lw = lpart(a, iP)
                dz = eb - t
                if dz > 0:
                    Rz = _shift(_cond(Ht.F[dz - 1, iP]), wv, 0)          # (z, s, S): (t, e], X_e = z
                    pz = Ht.mass(dz)                                      # (z, s)
                    pzb = Ht.massb(dz)
                else:
                    Rz = np.zeros((k, k, S))
                    Rz[:, :, 0] = 1.0
                    pz = np.eye(k)
                    pzb = np.eye(k, dtype=bool)
                if b is None:
                    assert bp.none is not None
                    Bz = np.zeros((k, k, S))
                    Bz[0] = _cond(bp.none[0])                              # (w=0, z, S)
                    pw = np.zeros((k, k))
                    pw[0] = 1.0
                    pwb = pw > 0
                else:
                    db = t + b - eb
                    Bz = _cond(bp.F[db - 1, 0])                           # (w, z, S)
                    pw, pwb = bp.mass(db), bp.massb(db)
                cP = int(inw[iP])
                pi_s = pz[:, s][None, :] * pw[W][:, :]                  # (n, z): P(z | s) P(w | z)
                pi_s2 = pz[:, s2][None, :] * pw[W][:, :]
                sup_s = pzb[:, s][None, :] & pwb[W]
                sup_s2 = pzb[:, s2][None, :] & pwb[W]
                lawA: dict[tuple[int, int], slice] = {}
                for sec in (s, s2):
                    for z in Z:
                        lawA[(sec, z)] = cv.add(Lw[U, sec], np.tile(Rz[z, sec], (U.size, 1)), int(wv[sec]) * cP)
                lawB = {z: Bz[W, z] for z in Z}
            else:
                # Z = X_e left of t: A_P | (u, z) and A_Nx | (z, s, w)
                _, Rw = rpart(b, iN)
                dz = t - eb
                Lz = _cond(Gt.F[dz - 1, iN])                               # (z, s, S): (e, t) given z, s
                pz, pzb = Gt.mass(dz), Gt.massb(dz)                        # (z, s): P(s | z)
                if a is None:
                    assert bp.none is not None
                    Az = np.zeros((k, k, S))
                    Az[0] = _shift(_cond(bp.none[0]), wv, 0)               # (u=0, z, S), X_e's value inside
                    pu = np.zeros((k, k))
                    pu[0] = bp.none[0].sum(-1)                             # P(X_e = z)
                    pub = pu > 0
                    pub[0] = bp.noneb[0].any(-1) if bp.noneb is not None else pub[0]
                else:
                    da = eb - (t - a)
                    Az = _shift(_cond(bp.F[da - 1, 0]), wv, 1)            # (u, z, S)
                    pu, pub = bp.mass(da), bp.massb(da)
                cN = int(inw[iN])
                pi_s = pu[U] * pz[:, s][None, :]
                pi_s2 = pu[U] * pz[:, s2][None, :]
                sup_s = pub[U] & pzb[:, s][None, :]
                sup_s2 = pub[U] & pzb[:, s2][None, :]
                lawA = {}
                for sec in (s, s2):
                    for z in Z:
                        lawA[(sec, z)] = cv.add(np.tile(Lz[z, sec], (U.size, 1)), Rw[W, sec], int(wv[sec]) * cN)
                lawB = {z: Az[U, z] for z in Z}
            # the exact local loss on the 2-D box: g_sec(y1, y2) = sum_z P(z | x_Q, sec) f_z(y1) h_z(y2)
            n_ = U.size
            Wt = np.stack([pi_s, pi_s2], axis=1)                                     # (n, 2, z)
            Wt = Wt / np.maximum(Wt.sum(2, keepdims=True), 1e-300)
            Wt = np.where(np.stack([sup_s, sup_s2], axis=1), Wt, 0.0)
            B2 = np.stack([np.stack([lawB[z] for z in Z], axis=1)] * 2, axis=1)
            assert B2.shape == (n_, 2, k, S)
            rows2_g.append(gbase)
            rows2.append((Wt, [[lawA[(sec, z)] for z in Z] for sec in (s, s2)], B2))
    cv.run(S)
    if rows:
        gid = np.concatenate(rows_g)
        pa = np.concatenate([cv[r[0]] for r in rows])
        qa = np.concatenate([cv[r[1]] for r in rows])
    else:
        gid = np.zeros(0, dtype=np.int64)
        pa = qa = np.zeros((0, S))
    if rows2:
        gid2 = np.concatenate(rows2_g)
        W2 = np.concatenate([r[0] for r in rows2])
        A2s = np.concatenate([np.stack([np.stack([cv[h] for h in hz], axis=1) for hz in r[1]], axis=1)
                              for r in rows2])
        B2s = np.concatenate([r[2] for r in rows2])
    else:
        gid2 = np.zeros(0, dtype=np.int64)
        W2, A2s, B2s = np.zeros((0, 2, k)), np.zeros((0, 2, k, S)), np.zeros((0, 2, k, S))
    left = np.array([a is not None for (a, _) in quilts])
    err = 2.0 * 2.0 * (hi_pos - lo_pos + 1) * e       # two window parts, each moved by <= m e per law
    # the joint-law rows batched by box shape
    byshape: dict[tuple[tuple[int, ...], ...], list[_RowN]] = {}
    for ent in rowsN:
        byshape.setdefault(tuple(tuple(int(x) for x in v) for v in ent[3]), []).append(ent)
    merged = [(np.concatenate([e_[0] for e_ in v]), np.concatenate([e_[1] for e_ in v]),
               np.concatenate([e_[2] for e_ in v]), v[0][3]) for v in byshape.values()]
    return _Rows(gid, pa, qa, gid2, W2, A2s, B2s, rho, left, err, prs, quilts, k, nwin, merged)


def _log_ratio_up(num: np.ndarray, den: np.ndarray, pos: np.ndarray | None = None) -> np.ndarray:
    """Upper bounds of log(num / den) with the relative margins (inf where den may be 0, -inf
    where num = 0; ``pos``: the exact positivity of num, inf where it is positive but underflowed
    to 0)."""
    if pos is not None:
        num = np.where(pos & (num <= 0), np.inf, num)
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
    members: int                # how many positions share it
    prior: int
    rows: _Rows
    logR: np.ndarray            # per pair: max over members of log P(X_t = s') / P(X_t = s), rounded up
    scale: float = math.nan     # the class's own least scale for the target (when asked)


def _dists(D: int, coarse: bool = False) -> list[int]:
    """The quilt distances tried when the cap is large (any subset of quilts is valid): 1 .. 6,
    then about 1.33x apart (``coarse``: 4, 8, 16, ...)."""
    if coarse:
        out = [d for d in (2, 4, 8, 16, 32, 64, 128) if d <= D] + [D]
        return sorted(set(out))
    out = list(range(1, min(D, 6) + 1))
    x = 6.0
    while x < D:
        x = max(x + 1, x * 1.33)
        out.append(min(D, int(round(x))))
    return sorted(set(out))


def _groups(fw: Any, ch: _Chain, windows: tuple[tuple[int, int], ...], D: int) -> list[list[int]]:
    """Positions with the same surroundings within the cap (see the module docstring)."""
    T = ch.T
    starts = np.array([a for a, _ in windows])
    stops = np.array([b for _, b in windows])
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
    return list(groups.values())


_WORK: dict[str, Any] = {}      # the job of the worker processes (inherited by fork)


def _one_class(n: int) -> tuple[int, _Class | None]:
    w = _WORK
    j, members = w["groups"][n]
    ch = w["chains"][j]
    t0 = members[0]
    rows = _class_rows(ch, t0, w["windows"], w["wv"], w["e"], w["D"], w["dists"])
    if rows is None:
        return n, None
    mem = np.array(members)
    logR = np.array([float(_log_ratio_up(ch.law[mem, s2], ch.law[mem, s], ch.pos[mem, s2]).max())
                     for (s, s2) in rows.pairs])
    b0s, keep, g = w["b0s"], w["keep"], w["g"]
    if b0s and len(rows.quilts) > keep:
        best: set[int] = set()
        for b0 in b0s:
            v = rows.values(b0 / g, b0, logR).max(2)            # (pairs, quilts)
            best.update(np.argsort(v, axis=1)[:, :keep].reshape(-1).tolist())
        rows = rows.keep(np.array(sorted(best)))
    c = _Class(t0, len(members), j, rows, logR)
    if w["eps"] is not None:
        c.scale = _bisect([c], w["eps"], g, (b0s[1] if len(b0s) > 1 else None))
    return n, c


def _worker_init() -> None:
    """Worker processes leave Ctrl-C to the parent (which cancels the pending classes)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _workers(n_jobs: int) -> int:
    import multiprocessing
    import os

    if n_jobs < 16 or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:          # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


def _build(fw: Any, windows: tuple[tuple[int, int], ...], D: int, b0s: list[float], keep: int,
           progress: Any, dists: list[int] | None = None, eps: float | None = None,
           label: str = "series quilts") -> list[_Class]:
    """The classes of positions with their rows; with scales ``b0s``, each class keeps only the
    ``keep`` quilts best at one of them for some pair (a subset: still a valid bound); with
    ``eps``, each class also finds its own least scale (``_Class.scale``). Long horizons run the
    classes on worker processes (one per core; the result does not depend on it)."""
    from .._progress import resolve

    wv_all = np.asarray(fw._vals, dtype=np.int64)
    chains = [_Chain(fw, j) for j in range(len(fw.priors))]
    groups = [(j, m) for j, ch in enumerate(chains) for m in _groups(fw, ch, windows, D)]
    _WORK.clear()
    _WORK.update(groups=groups, chains=chains, windows=windows, wv=wv_all - wv_all.min(), e=float(fw.grid_error),
                 D=D, dists=dists if dists is not None else (None if D <= 16 else _dists(D)), b0s=list(b0s),
                 keep=keep, g=float(fw._step), eps=eps)
    beat = resolve(progress, label=f"{label} (T={fw.length})")
    out: list[_Class | None] = [None] * len(groups)
    nw = _workers(len(groups))
    try:
        if nw == 1:
            for n in range(len(groups)):
                out[n] = _one_class(n)[1]
                if beat is not None:
                    beat(n + 1, len(groups))
        else:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor, as_completed

            with ProcessPoolExecutor(nw, mp_context=multiprocessing.get_context("fork"),
                                     initializer=_worker_init) as ex:
                futs = [ex.submit(_one_class, n) for n in range(len(groups))]
                try:
                    for done, f in enumerate(as_completed(futs)):
                        n, c = f.result()
                        out[n] = c
                        if beat is not None:
                            beat(done + 1, len(groups))
                except BaseException:
                    for f in futs:
                        f.cancel()
                    raise
    finally:
        _WORK.clear()
    return [c for c in out if c is not None]


def _eps_of(classes: list[_Class], b: float, g: float, pad: float = 0.0
            ) -> tuple[float, tuple[int, int, int, int] | None]:
    """max over classes and pairs of min over quilts of max over x_Q of the bound (every step
    rounded upward), with the witness (class, pair, quilt, x_Q). ``pad`` > 0: each quilt's bound
    plus ``pad`` per window meeting its nearby part (Lemma 3 (b): pad = Delta / b for the
    lattice releases of padding Delta)."""
    worst, wit = -math.inf, None
    for ci, c in enumerate(classes):
        v = c.rows.values(b / g, b, c.logR)                # (pairs, quilts, x_Q)
        if pad > 0:
            v = np.nextafter(v + (c.rows.nwin * pad)[None, :, None], np.inf)
        per_q = v.max(2)
        qi = np.argmin(per_q, axis=1)
        val = per_q[np.arange(per_q.shape[0]), qi]
        p = int(np.argmax(val))
        if val[p] > worst:
            worst = float(val[p])
            wit = (ci, p, int(qi[p]), int(np.argmax(v[p, qi[p]])))
    return worst, wit


def _windows_used(classes: list[_Class], b: float, g: float) -> int:
    """The most windows that meet the nearby part of a quilt chosen (the argmin) at scale b, over
    every class and pair (at least 1)."""
    m = 1
    for c in classes:
        per_q = c.rows.values(b / g, b, c.logR).max(2)
        qi = np.argmin(per_q, axis=1)
        m = max(m, int(c.rows.nwin[qi].max()))
    return m


#: the slack the quilt plans keep for lattice releases: calibrated to eps (1 - _SLACK)
_SLACK = 1e-4
#: the most grid points of a law of window parts the quilted bound computes (above: refused
#: before any work, the MQM needs no grid)
MAX_GRID = 1 << 15


def grid_points(fw: Any, D: int) -> int:
    """The most grid points of a law of window parts (the sums of the values over a quilt's
    nearby part, in grid steps) the quilted bound builds with quilt distances up to ``D``
    (whatever the windows): its size, known before any work."""
    wv = np.asarray(fw._vals, dtype=np.int64)
    span = int(wv.max() - wv.min())
    return span * min(int(fw.length), 2 * D + 1) + 1


def _bridge_bytes(fw: Any, windows: tuple[tuple[int, int], ...], D: int) -> int:
    """An upper bound of the memory of one position's bridge passes (left, right and one per
    pair of adjacent windows: float laws and boolean supports of (D, windows, k, k, S))."""
    starts = np.array([a for a, _ in windows])
    near = max(int(np.searchsorted(starts, b + 2 * D, side="left")) - j for j, (_, b) in enumerate(windows))
    near = max(1, min(near, len(windows)))
    k = int(fw._k)
    return (2 + near) * max(D, 1) * near * k * k * grid_points(fw, D) * 9


def grid_problem(fw: Any, D: int, windows: tuple[tuple[int, int], ...] | None = None) -> str | None:
    """Why the quilted bound cannot run on these state values (their common grid so fine that a
    law of window parts would exceed :data:`MAX_GRID` points, e.g. values 0, 1, pi, or that the
    bridge passes of one position would take more than 1 GiB), or None."""
    S = grid_points(fw, D)
    vals = [float(v) for v in np.asarray(fw.state_values, dtype=np.float64)]
    grid = (f"the state values {vals} share the grid step {float(fw._step):.6g} (grid values "
            f"{[int(x) for x in fw._vals]})")
    if S > MAX_GRID:
        return f"{grid}, so the laws of the window sums would have {S} grid points (at most {MAX_GRID})"
    if windows is not None:
        m = _bridge_bytes(fw, windows, D)
        if m > _MAX_BYTES:
            return (f"{grid}: laws of {S} grid points for {int(fw._k)} states and quilt distances up to {D}, so "
                    f"the bridge laws of one position would take about {m / 2 ** 30:.1f} GiB (at most "
                    f"{_MAX_BYTES / 2 ** 30:.0f})")
    return None


def check_grid(fw: Any, D: int, windows: tuple[tuple[int, int], ...] | None = None) -> None:
    """Refuse, before any work, state values the quilted bound cannot run on (:func:`grid_problem`)."""
    why = grid_problem(fw, D, windows)
    if why is not None:
        vals = [float(v) for v in np.asarray(fw.state_values, dtype=np.float64)]
        raise ParameterError("fw.state_values", vals, f"state values on a common grid for the quilted bound: {why}. "
                             "Round the values to a common step (e.g. numpy.round(values, 2), step 0.01), or plan "
                             "with theorem='mqm' (the Markov Quilt Mechanism works on any values)")


def _cap(fw: Any, cap: int | None) -> int:
    from .. import _validate as V

    T = int(fw.length)
    if cap is None:
        return max(1, min(T - 1, 32))
    return V.integer("cap", cap, lo=1, hi=max(T - 1, 1))


def series_epsilon(fw: Any, windows: Any, scale: float, *, cap: int | None = None, progress: Any = None,
                   lattice_sensitivity: float = 0.0, label: str = "series quilts") -> float:
    """The certified eps of the whole series (all windows together) with Laplace noise of the
    common ``scale`` on each window, by the quilted bound of this module (an upper bound, rounded
    up; quilt distances up to ``cap``, default min(T - 1, 32)). With ``lattice_sensitivity``
    Delta > 0, the eps of the lattice releases padded with Delta (docs page "series", Lemma 3
    (b): each quilt's bound plus Delta / b per window meeting its nearby part), which also bounds
    the plain releases. ``label``: the progress line's.

    >>> import puffer
    >>> fw = puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=12)
    >>> e = series_epsilon(fw, 4, 5.2)
    >>> 0.98 < e <= 1.0        # the exact loss at 5.2 is 0.989
    True
    """
    from .. import _validate as V
    from ._windows import check_windows

    ws = check_windows(windows, fw.length)
    b = V.positive("scale", scale)
    lat = V.nonneg("lattice_sensitivity", lattice_sensitivity)
    D = _cap(fw, cap)
    check_grid(fw, D, ws)
    pad = _up(lat / b) if lat > 0 else 0.0
    return _eps_of(_build(fw, ws, D, [], 0, progress, label=label), b, float(fw._step), pad)[0]


def quilt_candidate(fw: Any, windows: tuple[tuple[int, int], ...], eps: float, *, cap: int | None = None,
                    keep: int = 6, progress: Any = None) -> Candidate:
    """The least common scale the quilted bound certifies for ``eps``: bisection on the scale
    (erring toward more noise), then the certified check eps_total(b) <= eps. Long horizons keep
    the ``keep`` best quilts of each class at a first guess of the scale (a subset of quilts:
    the bound stays valid)."""
    D = _cap(fw, cap)
    check_grid(fw, D, tuple(windows))
    g = float(fw._step)
    T = int(fw.length)
    eps_cal = eps * (1 - _SLACK)    # the slack pays for lattice snapping (docs page "series", Lemma 3)
    b0 = None
    if T > 64:
        # a first guess from a coarse quilt set, then every class keeps its best quilts around it
        coarse = _build(fw, windows, D, [], keep, progress, dists=_dists(D, coarse=True), eps=eps_cal)
        b0 = max(c.scale for c in coarse) if coarse else None
        b0 = b0 if b0 is not None and math.isfinite(b0) else None
    classes = _build(fw, windows, D, [] if b0 is None else [0.75 * b0, b0, 1.33 * b0], keep, progress,
                     eps=eps_cal)
    if not classes:
        raise ParameterError("fw", fw.name, "a chain with at least one possible secret pair")
    # eps_total(b) = max over classes: the least common scale is the largest of the classes' own
    hi = max(c.scale for c in classes)
    if not math.isfinite(hi):
        return Candidate("quilt", math.inf, math.inf, {}, QUILT_REFS, "quilted bound: no finite scale")
    b = _up(hi, 4)
    val, wit = _eps_of(classes, b, g)
    while val > eps_cal:      # the certified check: more noise until it holds
        b = _up(b * (1 + 1e-9), 4)
        val, wit = _eps_of(classes, b, g)
    # lattice padding: Delta = (eps - eps_certified) b / m, rounded down (Lemma 3)
    m_used = _windows_used(classes, b, g)
    # (1 - 1e-6): headroom for the re-check of a loaded plan (SeriesPlan.verify), whose quilt set
    # may be larger and whose rounding may differ in the last bits
    lat = math.nextafter(math.nextafter((eps - val) * b / m_used * (1 - 1e-6), 0.0), 0.0)
    assert wit is not None
    c = classes[wit[0]]
    s, s2 = c.rows.pairs[wit[1]]
    qa, qb = c.rows.quilts[wit[2]]
    k = c.rows.k
    u, w = divmod(wit[3], k)
    names = fw.state_names
    binding = {"prior": _label(fw.priors[c.prior]), "t": int(c.t), "pair": [names[s], names[s2]],
               "quilt": {"a": qa, "b": qb}, "x_Q": [None if qa is None else names[u], None if qb is None else names[w]],
               "positions_alike": c.members}
    summary = (f"quilt decomposition of a series of window sums with the exact local loss (puffer docs, 'Series "
               f"plans: what the plan certifies', Thm 1, Lemmas 1-2): common Laplace scale {b!r}, quilt distances up "
               f"to {D}")
    return Candidate("quilt", b, val, binding, QUILT_REFS, summary, lat)


def _bisect(classes: list[_Class], eps: float, g: float, start: float | None) -> float:
    """The least scale (to 1e-7 relative, from above) with eps_total <= eps, inf if none below 1e15."""
    pts: list[tuple[float, float]] = []

    def f(b: float) -> float:
        for x, y in pts:
            if x == b:
                return y
        y = _eps_of(classes, b, g)[0]
        pts.append((b, y))
        return y

    hi = max(start or 1.0, 1e-6)
    fhi = f(hi)
    while fhi > eps:
        hi *= 2.0
        if hi > 1e15:
            return math.inf
        fhi = f(hi)
    lo = hi / 2.0
    flo = f(lo)
    while lo > 1e-9 and flo <= eps:
        hi, fhi, lo = lo, flo, lo / 2.0
        flo = f(lo)
    # f(lo) > eps >= f(hi). eps(b) is decreasing and piecewise smooth: the secant root r of the
    # last two points (else of the bracket), tried just past r on the side that did not move
    # last (so both ends close on the root: a few evaluations where halving needs ~25); a halving
    # step when the point is not inside the bracket, a value is not finite, or the bracket did
    # not halve in two steps. The bracket only shrinks and f(hi) <= eps always.
    tol = 1e-7
    widths = [hi - lo]
    moved_hi = True
    while hi - lo > tol * hi:
        w = hi - lo
        m = 0.5 * (lo + hi)
        stalled = len(widths) >= 3 and w > 0.5 * widths[-3]
        if not stalled:
            (b0, f0), (b1, f1) = pts[-2], pts[-1]
            for (x0, y0), (x1, y1) in (((b0, f0), (b1, f1)), ((lo, flo), (hi, fhi))):
                if math.isfinite(y0) and math.isfinite(y1) and y0 != y1:
                    r = x1 - (y1 - eps) * (x1 - x0) / (y1 - y0)
                    c = r - 0.4 * tol * hi if moved_hi else r + 0.4 * tol * hi
                    if lo < c < hi:
                        m = c
                        break
        else:
            widths = []
        fm = f(m)
        if fm <= eps:
            hi, fhi, moved_hi = m, fm, True
        else:
            lo, flo, moved_hi = m, fm, False
        widths.append(hi - lo)
    return hi
