"""The Markov Quilt Mechanism for Markov chains.

The Markov Quilt Mechanism for Markov chains (Song, Wang, Chaudhuri, "Pufferfish Privacy
Mechanisms for Correlated Data", SIGMOD 2017).

Results implemented (cited through :mod:`puffer.refs` as ``song2017``):

* the **Markov Quilt Mechanism** (MQM): for each node X_i pick a Markov quilt X_Q (a set that
  separates X_i's nearby part X_N from the remote part X_R) with max-influence
  e(X_Q | X_i) < eps; sigma_i = min over quilts of card(X_N) / (eps - e(X_Q | X_i)),
  sigma = max_i sigma_i, and F(X) + L * Laplace(sigma) is eps-Pufferfish private for every
  L-Lipschitz query F (one record changes F by at most L). The trivial quilt (X_Q empty,
  X_N = X) is always available, so sigma <= T / eps.
* **max-influence** e(X_Q | X_i) = max over secret pairs (x, x') and quilt values x_Q of
  log P(X_Q = x_Q | X_i = x) / P(X_Q = x_Q | X_i = x').
* **MQMExact**: for a chain, the quilt of X_i is {X_{i-a}, X_{i+b}} (or one side, or empty) and
  the max-influence is computed exactly from matrix powers:
  P(x_{i-a}, x_{i+b} | x) / P(x_{i-a}, x_{i+b} | x') =
  [M^a(u, x) / M^a(u, x')] * [P(X_i = x') / P(X_i = x)] * [M^b(x, w) / M^b(x', w)].
* **MQMApprox**: the max-influence bounded through the mixing of the chain,
  e <= 2 log((1 + D_a) / (1 - D_a)) + log((1 + D_b) / (1 - D_b)), D_t = sigma_2^t / pi_min
  (|M^t(x, y) / pi(y) - 1| <= D_t; valid for every initial law, which is why the upstream side
  counts twice).

Theta (a set of priors) is handled per prior: each prior theta has its own quilts and sigma_theta,
and sigma = max over theta (the privacy proof runs for one theta at a time). The guarantee
records which prior, node, quilt (a, b) and max-influence bind.

Soundness (puffer's default). Every node X_0 .. X_{T-1} is searched; the initial law is the one
given in the framework. Matrix powers of a non-negative matrix are computed with a componentwise
relative error <= a (k + 1) u (no cancellation); each ratio is formed from a numerator rounded
up and a denominator rounded down with that margin (a denominator that may be 0 gives an infinite
ratio), the log is stepped up, eps - e is stepped down and card / (eps - e) stepped up: the
max-influence is never under-reported and sigma never too small. Quilt values x_{i-a} range
over the states possible at time i - a (the others have probability 0 and do not count).
Long chains: distances are searched up to n and widened until no longer quilt can win (a quilt
with card > eps * sigma cannot); interior nodes whose upstream ratio agrees to 1e-9 are
evaluated once with the elementwise max of their ratios (an upper bound: sigma at most ~1e-9
above the node-by-node value, never below). MQMApprox uses pi_min from the rigorous lower bound
pi(x) >= min_u M^n(u, x) and sigma_2 (the second singular value of D^1/2 M D^-1/2, D = diag(pi);
= the second largest |eigenvalue| for reversible chains) plus a 1e-9 outward margin, which
covers LAPACK's backward error and the error of the computed stationary law for
well-conditioned chains (not a proof for nearly reducible ones; MQMExact has no such step).

The authors' MATLAB code (repository shs037/pufferfish) differs in three conventions, which
the private option ``_compat`` reproduces (tests only; do not use for releases):
``"synthetic"`` (their run_synthetic script: only nodes 2..T-1 of 1..T are searched, the chain
starts from the first row of M^100 and MQMApprox uses pi_min of that row with the eigen-gap
1 - |lambda_2(M)| in D_t = exp(-g t) / pi_min) and ``"realdata"`` (run_realData: nodes 2..T-1,
the upstream ratio P(X_i = x') / P(X_i = x) bounded by its worst case over the initial state,
eigen-gap (1 - lambda_2(M M*)) / 2 with M* the time reversal, quilt values over every state).
Skipping the first and last nodes is not covered by the mechanism's max over all nodes (in the
chains tested they never bind, but nothing guarantees it); pi from M^100 is not the stationary
law of a slowly mixing chain (0.49999999989814925 instead of 0.5 for M = [[0.9, 0.1], [0.1, 0.9]]).

When each mechanism wins (eps = 1, states valued 0/1, sum query, stationary start; Laplace
scales computed with ``MarkovQuilt`` and ``Wasserstein``):

=======================================  =====  ===========  ========  =========
chain M                                  T      Wasserstein  MQMExact  MQMApprox
=======================================  =====  ===========  ========  =========
[[0.5, 0.5], [0.4, 0.6]] (fast mixing)   1000   2.0          1.806     3.468
[[0.8, 0.2], [0.3, 0.7]]                 1000   4.0          10.12     14.22
[[0.9, 0.1], [0.2, 0.8]]                 1000   6.0          22.30     29.92
[[0.95, 0.05], [0.05, 0.95]]             100    20.0         68.79     94.53
[[0.99, 0.01], [0.01, 0.99]] (slow)      100    77.0         100.0     100.0
=======================================  =====  ===========  ========  =========

MQM wins when the chain mixes fast (the quilt cuts the dependence after one or two steps and
sigma approaches the i.i.d. 1/eps) and when the released statistic is not a simple sum: its sigma
holds for every L-Lipschitz query at once (a histogram, a max, any function of the whole chain),
where the Wasserstein Delta_G must be computed per query. It is also cheap for long chains (T =
1000: about 0.02 s against 6-9 s for the exact W_inf), and its sigma stops growing with T. For the sum of
a binary chain the Wasserstein mechanism wins as soon as the chain is correlated: W_inf counts
only the flips a secret can cause (6 for the third row, for every T >= 10), while a quilt must pay for
every node of X_N; for slowly mixing chains MQM falls back to T / eps (no quilt helps).

>>> import puffer
>>> fw = puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=100)
>>> m = puffer.mechanisms.MarkovQuilt(fw, eps=1.0)
>>> round(m.noise.scale, 6), (m.quilt["a"], m.quilt["b"])
(22.298361, (9, 9))
"""
from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError
from ..framework import Sensitivity
from ..guarantees import PP
from ..refs import Ref
from ._base import Mechanism, scale_up

if TYPE_CHECKING:
    # families.Laplace in annotations: puffer.capacity.restricted has a Laplace too
    from ..noise import families

#: a node's best quilt, (sigma, a, b, card, max-influence, index of the binding pair among the
#: possible ones); a / b None: no quilt node on that side
_Best = tuple[float, int | None, int | None, int, float, int | None]

__all__ = ["MarkovQuilt", "QuiltChoice", "mqm_sigma", "quilt_influence"]

_U = 2.0 ** -53          # unit roundoff of float64
_ABS = 2.0 ** -1060      # absolute error floor per operation (covers subnormal results)
_COMPAT = (None, "synthetic", "realdata")


@dataclass(frozen=True)
class QuiltChoice:
    """The binding quilt of one prior: node (0-based index t of X_t), distances a (left) and b
    (right; None = no quilt node on that side), card(X_N), its max-influence (an upper bound,
    natural log) and sigma = card / (eps - influence) (rounded up)."""

    node: int
    a: int | None
    b: int | None
    card: int
    influence: float
    sigma: float
    pair: tuple[int, int] | None

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "a": self.a, "b": self.b, "card": self.card,
                "influence": self.influence, "sigma": self.sigma,
                "pair": None if self.pair is None else list(self.pair)}


# ---------------------------------------------------------------- rounding helpers

def _up(x: np.ndarray, n: int = 1) -> np.ndarray:
    for _ in range(n):
        x = np.nextafter(x, np.inf)
    return x


def _down(x: np.ndarray, n: int = 1) -> np.ndarray:
    for _ in range(n):
        x = np.nextafter(x, -np.inf)
    return x


def _powers(M: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """M^1 .. M^n (shape (n, k, k)), their exact positivity pattern and the componentwise
    relative error bound of each power (a (k + 1) u, with slack)."""
    k = M.shape[0]
    P = np.empty((max(n, 1), k, k))
    B = np.empty((max(n, 1), k, k), dtype=bool)
    P[0], B[0] = M, M > 0
    Bm = (M > 0).astype(np.int64)
    for a in range(1, n):
        P[a] = P[a - 1] @ M
        B[a] = (B[a - 1].astype(np.int64) @ Bm) > 0
    rel = 1.01 * (np.arange(1, max(n, 1) + 1) * (k + 1) + 2) * _U
    return P[:n], B[:n], rel[:n]


def _ratio_max(num: np.ndarray, den: np.ndarray, pos_n: np.ndarray, pos_d: np.ndarray,
               rel: np.ndarray, axis: int) -> np.ndarray:
    """Upper bound of max over ``axis`` of num/den, ignoring entries where both are exactly 0;
    inf where a positive numerator meets a denominator that may be 0."""
    r = rel.reshape((-1,) + (1,) * (num.ndim - 1))
    hi = np.where(pos_n, num * (1 + r) + _ABS, 0.0)
    lo = np.where(pos_d, den * (1 - r) - _ABS, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(lo > 0, _up(hi / np.where(lo > 0, lo, 1.0)), np.inf)
    q = np.where(pos_n, q, 0.0)
    q = np.where(~pos_n & ~pos_d, -np.inf, q)
    return cast(np.ndarray, q.max(axis=axis))


def _pairs(k: int) -> list[tuple[int, int]]:
    return [(s, t) for s in range(k) for t in range(k) if s != t]


@dataclass
class _Tables:
    """Influence factors for quilt distances 1..n (bounds, rounded outward).

    U[g, h, a-1, p] >= max over u in support-pattern g of Pi(u, s) / Pi(u, t) with Pi the
    product of the a step matrices from X_{t-a} to X_t of a node t of phase h (upstream, pair
    p = (s, t); M^a for a time-homogeneous chain); pid[i]: the pattern of the support of
    P(X_i = .), so node t at distance a uses U[pid[t - a], h(t), a - 1] (states u with
    P(X_{t-a} = u) = 0 are not quilt values); D[h, b-1, p] >= max_w Pi'(s, w) / Pi'(t, w) with
    Pi' the product of the b step matrices from X_t to X_{t+b} (downstream); R[i, p] >=
    P(X_i = t) / P(X_i = s); ok[i, p]: both secrets X_i = s and X_i = t are possible. The phase
    of node t is h(t) = t mod phases: phases = 1 for a time-homogeneous chain, P for a periodic
    one (the tables of a phase hold for every node of that phase), T for a matrix per step."""

    U: np.ndarray
    D: np.ndarray
    R: np.ndarray
    ok: np.ndarray
    pid: np.ndarray
    n: int
    prs: list[tuple[int, int]]
    phases: int = 1

    def up(self, t: int, a: np.ndarray) -> np.ndarray:
        return cast(np.ndarray, self.U[self.pid[t - a], t % self.phases, a - 1])

    def down(self, t: int, b: np.ndarray) -> np.ndarray:
        return cast(np.ndarray, self.D[t % self.phases, b - 1])


def _exact_tables(M: np.ndarray, init: np.ndarray, T: int, worst_upstream: bool, n: int | None = None) -> _Tables:
    """The MQMExact factors for distances 1..n (default T - 1); ``worst_upstream``: the MATLAB
    realdata conventions (every u, P(X_i = t) / P(X_i = s) bounded over the initial state)."""
    k = M.shape[0]
    n = max(T - 1, 1) if n is None else max(min(n, T - 1), 1)
    P, B, rel = _powers(M, n)
    prs = _pairs(k)
    S = np.array([s for s, _ in prs])
    Tt = np.array([t for _, t in prs])
    # forward laws P(X_i = .) with their positivity pattern and error bound
    law = np.empty((T, k))
    pos = np.empty((T, k), dtype=bool)
    law[0], pos[0] = init, init > 0
    Bm = (M > 0).astype(np.int64)
    for i in range(1, T):
        law[i] = law[i - 1] @ M
        pos[i] = (pos[i - 1].astype(np.int64) @ Bm) > 0
    if worst_upstream:
        pats, pid = np.ones((1, k), dtype=bool), np.zeros(T, dtype=np.int64)
    else:
        pats, pid = np.unique(pos, axis=0, return_inverse=True)
        pid = np.asarray(pid).reshape(-1)
    U = np.empty((pats.shape[0], n, len(prs)))
    D = np.empty((n, len(prs)))
    step = max(1, int(2e6 // max(1, k * len(prs))))     # distances per chunk (bounded temporaries)
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        Pc, Bc, rc = P[lo:hi], B[lo:hi], rel[lo:hi]
        for g, pat in enumerate(pats):
            # upstream: ratio of columns s, t over the rows u in the pattern
            U[g, lo:hi] = _ratio_max(Pc[:, pat][:, :, S], Pc[:, pat][:, :, Tt], Bc[:, pat][:, :, S],
                                     Bc[:, pat][:, :, Tt], rc, axis=1)
        # downstream: ratio of rows s, t over the columns w
        D[lo:hi] = _ratio_max(Pc[:, S, :], Pc[:, Tt, :], Bc[:, S, :], Bc[:, Tt, :], rc, axis=2)
    U = np.maximum(U, 0.0)
    D = np.maximum(D, 0.0)
    lrel = 1.01 * (np.arange(T) * (k + 1) + 2) * _U
    ok = pos[:, S] & pos[:, Tt]
    if worst_upstream:
        # P(X_i = t) / P(X_i = s) <= max_u M^i(u, t) / M^i(u, s), whatever the initial law
        # (needs M^i for every i < T: the realdata mode is for the short MATLAB ranges)
        Pf, Bf, rf = _powers(M, max(T - 1, 1))
        R = np.full((T, len(prs)), np.nan)
        if T > 1:
            R[1:] = _ratio_max(Pf[:, :, Tt], Pf[:, :, S], Bf[:, :, Tt], Bf[:, :, S], rf, axis=1)[:T - 1]
        ok = np.ones_like(ok)
    else:
        num = law[:, Tt] * (1 + lrel[:, None]) + _ABS
        den = law[:, S] * (1 - lrel[:, None]) - _ABS
        with np.errstate(divide="ignore", invalid="ignore"):
            R = np.where(den > 0, _up(num / np.where(den > 0, den, 1.0)), np.inf)
    return _Tables(U[:, None], D[None], R, ok, pid, n, prs)


def _varying_tables(Ms: np.ndarray, periodic: bool, init: np.ndarray, T: int, n: int | None = None) -> _Tables:
    """The MQMExact factors of a time-varying chain for distances 1..n (default T - 1): ``Ms``
    of shape (S, k, k), the step X_t -> X_{t+1} using Ms[t mod S] (``periodic``) or Ms[t] (a
    matrix per step, S = T - 1). The products of a matrices carry the same componentwise error
    bound as a power M^a (a (k + 1) u: sums of products of non-negative terms), so the ratios
    are bounded exactly as in :func:`_exact_tables`; the tables are built per phase (t mod S for
    a periodic chain, t for a matrix per step)."""
    S_, k = Ms.shape[0], Ms.shape[-1]
    n = max(T - 1, 1) if n is None else max(min(n, T - 1), 1)
    H = S_ if periodic else T          # phases
    prs = _pairs(k)
    S = np.array([s for s, _ in prs])
    Tt = np.array([t for _, t in prs])
    from ..models import _check_memory
    _check_memory("framework", 8.0 * (H * n * len(prs) * 3 + 4 * H * k * k),
                  "MarkovQuilt on a long time-varying chain: a periodic chain (period=P) needs tables per phase "
                  "only; a matrix per step needs them per node")

    def mat(idx: np.ndarray) -> np.ndarray:
        # the matrices of the steps idx (clipped: entries outside [0, T - 2] are never read)
        j = np.mod(idx, S_) if periodic else np.clip(idx, 0, S_ - 1)
        return cast(np.ndarray, Ms[j])

    # forward laws P(X_i = .) with their positivity pattern
    law = np.empty((T, k))
    pos = np.empty((T, k), dtype=bool)
    law[0], pos[0] = init, init > 0
    for i in range(1, T):
        Mi = mat(np.array(i - 1))
        law[i] = law[i - 1] @ Mi
        pos[i] = (pos[i - 1].astype(np.int64) @ (Mi > 0).astype(np.int64)) > 0
    pats, pid = np.unique(pos, axis=0, return_inverse=True)
    pid = np.asarray(pid).reshape(-1)
    U = np.empty((pats.shape[0], H, n, len(prs)))
    D = np.empty((H, n, len(prs)))
    h = np.arange(H)
    eye = np.broadcast_to(np.eye(k), (H, k, k))
    up, dn = eye.copy(), eye.copy()                  # products over the last / next a steps
    bup, bdn = eye > 0, eye > 0
    for a in range(1, n + 1):
        Ma, Mb = mat(h - a), mat(h + a - 1)          # prepend the step t-a -> t-a+1, append t+a-1 -> t+a
        up = Ma @ up
        bup = (((Ma > 0).astype(np.int64)) @ bup.astype(np.int64)) > 0
        dn = dn @ Mb
        bdn = (bdn.astype(np.int64) @ (Mb > 0).astype(np.int64)) > 0
        rel = np.array([1.01 * (a * (k + 1) + 2) * _U])
        for g, pat in enumerate(pats):
            U[g, :, a - 1] = _ratio_max(up[:, pat][:, :, S], up[:, pat][:, :, Tt], bup[:, pat][:, :, S],
                                        bup[:, pat][:, :, Tt], np.broadcast_to(rel, (H,)), axis=1)
        D[:, a - 1] = _ratio_max(dn[:, S, :], dn[:, Tt, :], bdn[:, S, :], bdn[:, Tt, :], np.broadcast_to(rel, (H,)),
                                 axis=2)
    U = np.maximum(U, 0.0)
    D = np.maximum(D, 0.0)
    # the forward laws: i steps, each a sum of k products (the same bound as law[i] = init M^i)
    lrel = 1.01 * (np.arange(T) * (k + 1) + 2) * _U
    ok = pos[:, S] & pos[:, Tt]
    num = law[:, Tt] * (1 + lrel[:, None]) + _ABS
    den = law[:, S] * (1 - lrel[:, None]) - _ABS
    with np.errstate(divide="ignore", invalid="ignore"):
        R = np.where(den > 0, _up(num / np.where(den > 0, den, 1.0)), np.inf)
    return _Tables(U, D, R, ok, pid, n, prs, H)


def _log_up(x: np.ndarray) -> np.ndarray:
    """An upper bound of log(x) (x >= 1 here): numpy's log is within 1 ulp, step up 2 ulps."""
    with np.errstate(divide="ignore"):
        return cast(np.ndarray, np.maximum(_up(np.log(x), 2), 0.0))


def _node_sigma(t: int, T: int, eps: float, tab: _Tables, Rt: np.ndarray | None, ok: np.ndarray,
                cap: int | None = None, two_sided_only: bool = False) -> _Best | None:
    """sigma_t = min over the quilts of node t (0-based) of card / (eps - influence).

    ``tab``: the factors (upstream ones multiplied by ``Rt``, the node's upstream ratio; Rt may
    be replaced by an elementwise larger one); ``ok``: the pairs whose two secrets are possible
    at t. Quilts whose card is >= eps * sigma of a quilt already found cannot win and are not
    evaluated; distances are at most ``tab.n`` and ``cap``; ``two_sided_only`` leaves out the
    one-sided quilts (kept: the trivial quilt). Leaving candidates out can only make sigma
    larger (never unsound)."""
    lim = tab.n if cap is None else min(tab.n, cap)
    nl, nr = min(t, lim), min(T - 1 - t, lim)     # distances available on the left / right
    if not ok.any():
        return None
    okc = np.flatnonzero(ok)

    def up_rows(a: np.ndarray) -> np.ndarray:
        rows = tab.up(t, a)[:, okc]
        return rows if Rt is None else _up(rows * Rt[okc][None, :])

    # the trivial quilt (X_Q empty, X_N = all T nodes, influence 0)
    best: _Best = (float(_up(np.float64(T) / eps)), None, None, T, 0.0, None)

    def consider(a_rng: np.ndarray, b_rng: np.ndarray, best: _Best) -> _Best:
        # rows: a in a_rng plus "no left"; cols: b in b_rng plus "no right"
        extra = 0 if two_sided_only else 1
        A = np.concatenate([up_rows(a_rng), np.ones((extra, okc.size))])
        Bv = np.concatenate([tab.down(t, b_rng)[:, okc], np.ones((extra, okc.size))])
        if A.shape[0] == 0 or Bv.shape[0] == 0:
            return best
        prod = _up(A[:, None, :] * Bv[None, :, :])
        j = prod.argmax(axis=2)
        infl = _log_up(np.take_along_axis(prod, j[..., None], axis=2)[..., 0])
        ca = np.concatenate([a_rng.astype(np.float64), [t + 1.0] * extra])
        cb = np.concatenate([b_rng.astype(np.float64), [T - t + 0.0] * extra])
        card = ca[:, None] + cb[None, :] - 1.0
        lam = _down(eps - infl)
        with np.errstate(divide="ignore", invalid="ignore"):
            sig = np.where(lam > 0, _up(card / np.where(lam > 0, lam, 1.0)), np.inf)
        idx = np.unravel_index(int(np.argmin(sig)), sig.shape)
        s = float(sig[idx])
        if s < best[0]:
            ia, ib = int(idx[0]), int(idx[1])
            a = None if ia == len(a_rng) else int(a_rng[ia])
            b = None if ib == len(b_rng) else int(b_rng[ib])
            best = (s, a, b, int(card[idx]), float(infl[idx]), int(okc[j[idx]]))
        return best

    # quilts with a == b first: a cheap upper bound, hence a search radius
    m = min(nl, nr)
    if m:
        diag = np.arange(1, m + 1)
        A = up_rows(diag) * tab.down(t, diag)[:, okc]
        jd = A.argmax(axis=1)
        infl = _log_up(_up(A[np.arange(m), jd]))
        lam = _down(eps - infl)
        with np.errstate(divide="ignore", invalid="ignore"):
            sig = np.where(lam > 0, _up((2.0 * diag - 1) / np.where(lam > 0, lam, 1.0)), np.inf)
        q = int(np.argmin(sig))
        if sig[q] < best[0]:
            best = (float(sig[q]), int(diag[q]), int(diag[q]), int(2 * diag[q] - 1), float(infl[q]), int(okc[jd[q]]))
    # a useful quilt has card < eps * sigma (card / (eps - e) >= card / eps)
    radius = int(math.floor(eps * best[0])) + 1 if math.isfinite(best[0]) else T
    best = consider(np.arange(1, min(nl, radius) + 1), np.arange(1, min(nr, radius) + 1), best)
    return best


def _search(nodes: list[int], T: int, eps: float, tab: _Tables) -> tuple[_Best, int] | None:
    """max over ``nodes`` of the node's sigma, and where it is attained.

    Nodes far from both ends (>= r nodes on each side, r a bound on any useful quilt distance,
    and the support of the law constant over the r steps before) differ only through their
    upstream ratio R_t; those whose R_t is within 1e-9 (relative) of the most mixed interior
    node's are evaluated once with the elementwise max of their R_t, an upper bound on each of
    their influences (so sigma is at most ~1e-9 looser than the node by node maximum, and never
    smaller). The other nodes are evaluated one by one."""
    if not nodes:
        return None
    R, ok = tab.R, tab.ok
    inner = [t for t in nodes if t >= 1]
    Rz = np.where(ok, R, 0.0)
    r = T
    last = inner[-1] if inner else 0
    if inner and ok[last].any():
        # the search radius from the most mixed node (the last one): only a heuristic, the
        # group below is evaluated with its own (capped, two-sided) candidates
        m = np.arange(1, min(last, tab.n) + 1)
        if m.size:
            c = ok[last]
            A = _up(_up(tab.up(last, m)[:, c] * Rz[last][c][None, :]) * tab.down(last, m)[:, c]).max(axis=1)
            lam = _down(eps - _log_up(A))
            with np.errstate(divide="ignore", invalid="ignore"):
                sig = np.where(lam > 0, _up((2.0 * m - 1) / np.where(lam > 0, lam, 1.0)), np.inf)
            sub = float(sig.min())
            if math.isfinite(sub):
                r = min(T, tab.n, int(math.floor(eps * sub * (1 + 1e-6))) + 2)
    # the support pattern is constant from s0 on
    change = np.flatnonzero(tab.pid[1:] != tab.pid[:-1])
    s0 = int(change[-1]) + 1 if change.size else 0
    interior = np.array([t for t in nodes if r <= t <= T - 1 - r and t - r >= s0], dtype=np.int64)
    # one group per phase (the quilt tables of a phase are those of every node of that phase); a
    # chain with a matrix per step has a phase per node: every node on its own
    groups: list[list[int]] = []
    if interior.size and tab.phases < T:
        for h in range(tab.phases):
            mem = interior[interior % tab.phases == h]
            if not mem.size:
                continue
            ref = int(mem[-1])
            Rr, okr = Rz[ref], ok[ref]
            close = (ok[mem] == okr).all(axis=1) & (np.abs(Rz[mem] - Rr) <= 1e-9 * Rr).all(axis=1)
            groups.append([int(t) for t in mem[close]])
    gset = {t for g in groups for t in g}
    best: tuple[_Best, int] | None = None
    for t in [t for t in nodes if t not in gset]:
        res = _node_sigma(t, T, eps, tab, R[t] if t > 0 else None, ok[t])
        if res is not None and (best is None or res[0] > best[0][0]):
            best = (res, t)
    for group in groups:
        if not group:
            continue
        Rg = Rz[group].max(axis=0)
        # every member has >= r nodes on both sides, the same phase and the same support pattern
        # r steps back: the two-sided quilts with a, b <= r (and the trivial one) are quilts of
        # each member, with influence <= the one computed from Rg
        res = _node_sigma(group[0], T, eps, tab, Rg, ok[group[0]], cap=r, two_sided_only=True)
        if res is not None and (best is None or res[0] > best[0][0]):
            best = (res, group[0])
    return best


def _varying(M: np.ndarray, T: int, period: int | None) -> bool | None:
    """None for one (k, k) matrix; for a time-varying chain (S, k, k) whether it is periodic
    (``period`` = S) or has a matrix per step (S = T - 1)."""
    if M.ndim == 2:
        if period is not None:
            raise ParameterError("period", period, "None for a single (k, k) matrix (a periodic chain gives one "
                                 "period of matrices, shape (P, k, k))")
        return None
    if period is not None:
        P = V.integer("period", period, lo=1)
        if M.shape[0] != P:
            raise ParameterError("trans", f"shape {M.shape}", f"one period of {P} matrices, shape ({P}, k, k)")
        return True
    if M.shape[0] != T - 1:
        raise ParameterError("trans", f"shape {M.shape}", f"a matrix per step, shape ({T - 1}, k, k) for T = {T} "
                             "(or one period of matrices with period=P)")
    return False


def mqm_sigma(trans: Any, init: Any, T: int, eps: float, *, method: str = "exact",
              period: int | None = None, _compat: str | None = None) -> tuple[float, QuiltChoice]:
    """sigma (the Laplace scale for a 1-Lipschitz query) of MQMExact / MQMApprox for one prior
    (transition matrix ``trans`` (k, k), initial law ``init``, length ``T``), and the binding
    quilt. Upper bounds, rounded up (see the module docstring).

    Time-varying chains (MQMExact only): ``trans`` of shape (T - 1, k, k), the step
    X_t -> X_{t+1} using trans[t], or one period (P, k, k) with ``period=P`` (trans[t mod P]).
    The max-influence of a quilt is then computed from the products of the step matrices
    between the node and its quilt nodes (for a homogeneous chain, matrix powers). MQMApprox
    bounds the influence through the spectral gap of one matrix and is refused for them.

    >>> s, q = mqm_sigma([[0.9, 0.1], [0.1, 0.9]], [0.5, 0.5], 100, 1.0)
    >>> round(s, 6), (q.a, q.b)      # the authors' MATLAB: 31.737788616902648
    (31.737789, (12, 12))
    """
    M = V.float_array("trans", trans, ndim=(2, 3))
    k = M.shape[-1]
    if M.shape[-2] != k or k < 2:
        raise ParameterError("trans", f"shape {M.shape}", "a square transition matrix with k >= 2 states")
    T = V.integer("T", T, lo=1, hi=100_000)
    eps = V.positive("eps", eps)
    if method not in ("exact", "approx"):
        raise ParameterError("method", method, "'exact' (MQMExact) or 'approx' (MQMApprox)")
    if _compat not in _COMPAT:
        raise ParameterError("_compat", _compat, "None, 'synthetic' or 'realdata'")
    periodic = _varying(M, T, period)
    if periodic is not None:
        if method != "exact" or _compat is not None:
            raise ParameterError("method", method, "'exact' for a time-varying chain (MQMApprox bounds the "
                                 "max-influence through the spectral gap of one transition matrix)")
        pi0 = V.float_array("init", init, ndim=1)
        if pi0.shape != (k,):
            raise ParameterError("init", f"shape {pi0.shape}", f"an initial law over the {k} states")
        n = min(T - 1, 64)
        while True:
            tab = _varying_tables(M, periodic, pi0, T, n=n)
            best = _search(list(range(T)), T, eps, tab)
            if best is None or n >= T - 1 or n >= math.floor(eps * best[0][0]):
                break
            n = min(T - 1, max(2 * n, int(math.floor(eps * best[0][0])) + 1))
        if best is None:
            raise ParameterError("init", "no node with two possible states", "a chain with at least one secret pair")
        (s, a, b, card, infl, pj), t = best
        if pj is None:
            pj = int(np.flatnonzero(tab.ok[t])[0])
        return s, QuiltChoice(t, a, b, card, infl, s, tab.prs[pj])
    if _compat == "synthetic":
        init = np.linalg.matrix_power(M, 100)[0]
    pi0 = V.float_array("init", init, ndim=1)
    if pi0.shape != (k,):
        raise ParameterError("init", f"shape {pi0.shape}", f"an initial law over the {k} states")
    nodes = range(1, T - 1) if _compat is not None else range(T)
    if _compat is not None and T < 3:
        raise ParameterError("T", T, "T >= 3 with _compat (the MATLAB code searches nodes 2..T-1)")
    if method == "exact":
        # distances up to n first; a quilt reaching further has card > n, which cannot beat a
        # sigma with eps * sigma <= n: otherwise widen and redo (each pass is an upper bound)
        n = min(T - 1, 64)
        while True:
            tab = _exact_tables(M, pi0, T, worst_upstream=_compat == "realdata", n=n)
            best = _search(list(nodes), T, eps, tab)
            if best is None or n >= T - 1 or n >= math.floor(eps * best[0][0]):
                break
            n = min(T - 1, max(2 * n, int(math.floor(eps * best[0][0])) + 1))
        prs = tab.prs
    else:
        q = _approx_ratio(M, T, _compat)
        prs = [(0, 1)]
        # the approximate influences do not depend on the pair (one column) nor on the node; the
        # upstream side counts twice: ((1 + D_a) / (1 - D_a))^2
        tab = _Tables(_up(q * q)[None, None, :, None], q[None, :, None], np.ones((T, 1)),
                      np.ones((T, 1), dtype=bool), np.zeros(T, dtype=np.int64), q.size, prs)
        best = _search(list(nodes), T, eps, tab)
    if best is None:
        raise ParameterError("init", "no node with two possible states", "a chain with at least one secret pair")
    (s, a, b, card, infl, pj), t = best
    if pj is None:      # the trivial quilt: influence 0 for every pair; name a possible one
        pj = int(np.flatnonzero(tab.ok[t])[0])
    pair = prs[pj]
    return s, QuiltChoice(t, a, b, card, infl, s, pair)


def quilt_influence(trans: Any, init: Any, T: int, node: int, a: int | None, b: int | None, *,
                    period: int | None = None) -> float:
    """An upper bound (rounded up, natural log) of the max-influence e(X_Q | X_node) of the quilt
    X_Q = {X_{node-a}, X_{node+b}} (a or b None: no quilt node on that side) in the chain
    (``trans``, ``init``, length ``T``), as MQMExact uses it: the max over the secret pairs
    (x, x') possible at ``node`` and over x_Q of log P(X_Q = x_Q | X_node = x) / P(X_Q = x_Q |
    X_node = x'); quilt values x_Q range over every state (exact when all are reachable).
    ``trans`` (T - 1, k, k) or one period (P, k, k) with ``period=P``: a time-varying chain (as
    in :func:`mqm_sigma`).

    >>> e = quilt_influence([[0.9, 0.1], [0.2, 0.8]], [2 / 3, 1 / 3], 10, 5, 1, None)
    >>> import math; 0 <= e - math.log(8) < 1e-14      # P(X_4 = 1 | X_5 = 1) / P(X_4 = 1 | X_5 = 0) = 8
    True
    """
    M = V.float_array("trans", trans, ndim=(2, 3))
    pi0 = V.float_array("init", init, ndim=1)
    T = V.integer("T", T, lo=1, hi=100_000)
    periodic = _varying(M, T, period)
    t = V.integer("node", node, lo=0, hi=T - 1)
    if a is not None:
        a = V.integer("a", a, lo=1, hi=max(t, 1))
        if a > t:
            raise ParameterError("a", a, f"a distance <= node = {t} (X_(node - a) must exist)")
    if b is not None:
        b = V.integer("b", b, lo=1, hi=max(T - 1 - t, 1))
        if b > T - 1 - t:
            raise ParameterError("b", b, f"a distance <= T - 1 - node = {T - 1 - t}")
    tab = _exact_tables(M, pi0, T, worst_upstream=False) if periodic is None else _varying_tables(M, periodic, pi0, T)
    ok = tab.ok[t]
    if not ok.any():
        raise ParameterError("node", node, "a node with two possible states")
    f = np.ones(int(ok.sum()))
    if a is not None:
        f = _up(_up(tab.up(t, np.array([a]))[0][ok] * tab.R[t][ok]) * f)
    if b is not None:
        f = _up(tab.down(t, np.array([b]))[0][ok] * f)
    return float(_log_up(f.max()))


def _stationary_lower(M: np.ndarray) -> float:
    """A rigorous lower bound of min_x pi(x): pi = pi M^n gives pi(x) >= min_u M^n(u, x); M^n by
    repeated squaring (componentwise relative error <= n (k + 1) u)."""
    k = M.shape[0]
    P = M.copy()
    n = 1
    best = 0.0
    for _ in range(30):
        P = P @ P
        n *= 2
        rel = 1.01 * (n * (k + 1) + 2) * _U
        lo = float(P.min(axis=0).min()) * (1 - rel) - _ABS
        best = max(best, lo)
        col = P.max(axis=0) - P.min(axis=0)
        if (col <= 1e-15 * P.max(axis=0)).all():
            break
    return best


def _approx_ratio(M: np.ndarray, T: int, compat: str | None) -> np.ndarray:
    """(1 + D_t) / (1 - D_t) for t = 1..T-1 (inf where D_t >= 1), rounded up."""
    t = np.arange(1, max(T, 2), dtype=np.float64)
    if compat is None:
        from ..models import stationary_distribution
        pi_min = _stationary_lower(M)
        if pi_min <= 0:
            return np.full(t.size, np.inf)       # no mixing bound: only the trivial quilt
        try:
            pi = stationary_distribution(M)
        except ParameterError:
            return np.full(t.size, np.inf)
        s = np.sqrt(pi)
        A = s[:, None] * M / s[None, :]
        s2 = float(np.linalg.svd(A - np.outer(s, s), compute_uv=False)[0])
        s2 = min(1.0, s2 + 1e-9)
        if s2 >= 1.0:
            return np.full(t.size, np.inf)
        logD = _up(t * math.log(s2), 2) - math.log(pi_min)
        logD = _up(logD + 1e-15 * np.abs(logD) + 4 * _U * t * abs(math.log(s2)), 2)
    else:
        pi_min = float(np.linalg.matrix_power(M, 100)[0].min())
        if compat == "synthetic":
            g = 1.0 - float(np.sort(np.abs(np.linalg.eigvals(M)))[::-1][1])
        else:
            pi = stationary_distribution_compat(M)
            Mrev = (M.T * pi[None, :]) / pi[:, None]
            g = (1.0 - float(np.sort(np.abs(np.linalg.eigvals(M @ Mrev)))[::-1][1])) / 2.0
        logD = _up(-g * t - math.log(pi_min), 2)
    Dt = _up(np.exp(logD), 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(Dt < 1, _up(_up(1 + Dt) / _down(1 - Dt)), np.inf)
    return out


def stationary_distribution_compat(M: np.ndarray) -> np.ndarray:
    """The stationary law as the MATLAB code's time reversal uses it (first row of M^4096)."""
    return cast(np.ndarray, np.linalg.matrix_power(M, 4096)[0])


class MarkovQuilt(Mechanism):
    """The Markov Quilt Mechanism (Song et al. 2017) on a :func:`puffer.models.markov_chain`
    framework: Laplace noise of scale L * sigma, eps-Pufferfish private for every L-Lipschitz
    query (one record changes the query by at most L).

    ``method="exact"`` is MQMExact (max-influence from matrix powers), ``"approx"`` MQMApprox
    (bounded through pi_min and the spectral gap). ``lipschitz``: L; default the framework's sum
    query, L = max - min of the state values. ``sensitivity.value`` is the equivalent
    sensitivity eps * L * sigma (so noise.scale = sensitivity / eps as for Wasserstein) and
    ``quilt`` the binding quilt (prior, node, a, b, card, max-influence).

    >>> import puffer
    >>> fw = puffer.models.markov_chain([[0.5, 0.5], [0.4, 0.6]], T=48)
    >>> m = puffer.mechanisms.MarkovQuilt(fw, eps=1.0)
    >>> round(m.noise.scale, 6), m.guarantee
    (1.80599, PP(eps=1.0, delta=0.0))

    Parameters
    ----------
    framework : MarkovChainFramework
        A framework from :func:`puffer.models.markov_chain` (the priors are its chains).
    eps : float
        The target eps > 0 of eps-Pufferfish privacy.
    method : str
        ``"exact"`` (MQMExact, default) or ``"approx"`` (MQMApprox).
    lipschitz : float, optional
        L: how much one record can change the query (default: the sum query's max - min of the
        state values).
    """
    guarantee: PP   # narrows Mechanism.guarantee
    #: Laplace(L sigma, rounded upward); None for a constant query (L = 0: no noise needed)
    noise: families.Laplace | None

    theorem = ("Song et al. 2017, Markov Quilt Mechanism for Markov chains "
               "(MQMExact / MQMApprox): F(X) + L Lap(sigma_max) is eps-Pufferfish private")
    refs: tuple[Ref, ...] = (Ref("song2017", "Markov Quilt Mechanism"),
                             Ref("song2017", "max-influence of a Markov quilt"))

    def __init__(self, framework: Any, eps: float, *, method: str = "exact", lipschitz: float | None = None,
                 _compat: str | None = None):
        from ..models import MarkovChainFramework
        from ..noise import Laplace

        if not isinstance(framework, MarkovChainFramework):
            raise ParameterTypeError("framework", framework, "a framework from puffer.models.markov_chain")
        self.framework = framework
        self.eps = V.positive("eps", eps)
        if method not in ("exact", "approx"):
            raise ParameterError("method", method, "'exact' (MQMExact) or 'approx' (MQMApprox)")
        self.method = method
        # the instance cites the variant it ran
        self.refs = type(self).refs + ((Ref("song2017", "MQMExact"),) if method == "exact"
                                       else (Ref("song2017", "MQMApprox"),))
        from ..models import _theta_only

        _theta_only(framework, "the Markov Quilt mechanism")
        vals = np.asarray(framework.state_values, dtype=np.float64)
        if lipschitz is None:
            # the difference of two floats, rounded upward exactly
            from fractions import Fraction
            d = Fraction(float(vals.max())) - Fraction(float(vals.min()))
            L = float(d)
            L = math.nextafter(L, math.inf) if Fraction(L) < d else L
        else:
            L = V.nonneg("lipschitz", lipschitz)
        self.lipschitz = L
        M, P0 = framework.transitions, framework.initial_laws
        worst: tuple[float, Hashable, QuiltChoice] | None = None
        self.per_prior: dict[Hashable, QuiltChoice] = {}
        if framework.time_varying and method != "exact":
            raise ParameterError("method", method, "'exact' for a time-varying chain (MQMApprox bounds the "
                                 "max-influence through the spectral gap of one transition matrix)")
        from .._progress import resolve

        beat = resolve(None, label=f"Markov quilts (T={framework.length})")   # many priors: minutes
        for j, th in enumerate(framework.priors):
            s, q = mqm_sigma(M[j], P0[j], framework.length, self.eps, method=method, _compat=_compat,
                             period=framework.period)
            self.per_prior[th] = q
            if worst is None or s > worst[0]:
                worst = (s, th, q)
            if beat is not None:
                beat(j + 1, len(framework.priors))
        assert worst is not None
        sigma, th, q = worst
        self.sigma = sigma
        scale = scale_up(L * sigma) if L > 0 else 0.0
        self.noise = Laplace(scale) if scale > 0 else None
        names = framework.state_names
        pair = None if q.pair is None else (f"X{q.node}={names[q.pair[0]]}", f"X{q.node}={names[q.pair[1]]}")
        self.quilt = {"prior": th, **q.to_dict()}
        self.sensitivity = Sensitivity(scale_up(self.eps * scale) if scale > 0 else 0.0, "markov_quilt",
                                       (th, pair if pair is not None else (f"X{q.node}",)),
                                       params={"method": method, "lipschitz": L, "sigma": sigma,
                                               "quilt": {k: v for k, v in q.to_dict().items() if k != "pair"},
                                               **({"compat": _compat} if _compat else {})})
        def side(d: int | None) -> str:
            return "none" if d is None else str(d)

        notes = (f"MQM{'Exact' if method == 'exact' else 'Approx'}: binding prior {th!r}, node X{q.node}, "
                 f"quilt a={side(q.a)}, b={side(q.b)} (card X_N = {q.card}), max-influence {q.influence!r}, "
                 f"sigma = {sigma!r}, L = {L!r}")
        if _compat:
            notes += f"; MATLAB compatibility conventions '{_compat}' (not the sound default)"
        self.guarantee = PP(self.eps, 0.0, self._provenance(notes))
        self.group = self._group(scale, lambda g: scale_up(g / self.eps))

    def lattice_sensitivity(self) -> float:
        """L: snapping the released F(X) to g Z changes F(X) - F(X') by at most g, and every
        quilt's bound card L / (L sigma) + influence <= eps then holds with (card L + g) over
        the noise L sigma (1 + g / L) >= L sigma (card L + g) / (card L), since card >= 1: the
        padding is (L + g) / L (not eps times the scale, which under-pads)."""
        return float(self.lipschitz)
