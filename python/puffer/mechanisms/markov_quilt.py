"""The Markov Quilt Mechanism for Markov chains (Song, Wang, Chaudhuri, "Pufferfish Privacy
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
max-influence is never under-reported and sigma never too small. MQMApprox uses pi_min from the
rigorous lower bound pi(x) >= min_u M^n(u, x) and sigma_2 (the second singular value of
D^1/2 M D^-1/2, D = diag(pi); = the second largest |eigenvalue| for reversible chains) with a
1e-9 outward margin for the LAPACK error.

The authors' MATLAB code (repository shs037/pufferfish) differs in three conventions, which
the private option ``_compat`` reproduces (tests only; do not use for releases):
``"synthetic"`` (their run_synthetic script: only nodes 2..T-1 of 1..T are searched, the chain
starts from the first row of M^100 and MQMApprox uses pi_min of that row with the eigen-gap
1 - |lambda_2(M)| in D_t = exp(-g t) / pi_min) and ``"realdata"`` (run_realData: nodes 2..T-1,
the upstream ratio P(X_i = x') / P(X_i = x) bounded by its worst case over the initial state,
eigen-gap (1 - lambda_2(M M*)) / 2 with M* the time reversal). Skipping the first and last nodes
can under-report sigma; pi from M^100 is not the stationary law of a slowly mixing chain.

When each mechanism wins (eps = 1, sum of a binary chain, stationary start; numbers from
``puffer.mechanisms.MarkovQuilt`` and ``puffer.mechanisms.Wasserstein``): the Wasserstein
mechanism's Delta_G grows with the correlation length but is capped by T, while MQM's sigma
stops growing with T once the quilt cuts the dependence. For M = [[0.9, 0.1], [0.2, 0.8]]:
T = 48 gives Laplace scale 6.0 (Wasserstein) vs 8.30 (MQMExact); T = 1000 still 6.0 vs 8.30 —
W_inf is small here because the sum moves by at most the number of flips the secret causes.
For a fast-mixing chain M = [[0.5, 0.5], [0.4, 0.6]]: Wasserstein 2.0 vs MQMExact 1.34. For a
slowly mixing one M = [[0.99, 0.01], [0.01, 0.99]], T = 48: Wasserstein 34 vs MQMExact 48
(= T / eps, no quilt helps). MQMApprox is always looser than MQMExact (it only uses pi_min
and the spectral gap). See the README section "Markov Quilt Mechanism".

>>> import puffer
>>> fw = puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=100)
>>> m = puffer.mechanisms.MarkovQuilt(fw, eps=1.0)
>>> round(m.noise.scale, 6), m.quilt["node"] in range(100)
(8.301497, True)
"""
from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError
from ..framework import Sensitivity
from ..guarantees import PP
from ..refs import Ref
from ._base import Mechanism, scale_up

__all__ = ["MarkovQuilt", "QuiltChoice", "mqm_sigma"]

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

    def to_dict(self) -> dict:
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
    return q.max(axis=axis)


def _pairs(k: int) -> list[tuple[int, int]]:
    return [(s, t) for s in range(k) for t in range(k) if s != t]


def _exact_tables(M: np.ndarray, init: np.ndarray, T: int, worst_upstream: bool):
    """U[a-1, p] >= max_u M^a(u, s) / M^a(u, t), D[b-1, p] >= max_w M^b(s, w) / M^b(t, w) and
    R[i, p] >= P(X_i = t) / P(X_i = s) (0-based i) for the ordered pairs p = (s, t), plus
    ok[i, p]: both secrets X_i = s, X_i = t possible."""
    k = M.shape[0]
    n = max(T - 1, 1)
    P, B, rel = _powers(M, n)
    prs = _pairs(k)
    S = np.array([s for s, _ in prs])
    Tt = np.array([t for _, t in prs])
    # upstream: ratio of columns s, t over the rows u
    U = _ratio_max(P[:, :, S], P[:, :, Tt], B[:, :, S], B[:, :, Tt], rel, axis=1)
    # downstream: ratio of rows s, t over the columns w
    D = _ratio_max(P[:, S, :], P[:, Tt, :], B[:, S, :], B[:, Tt, :], rel, axis=2)
    U = np.maximum(U, 0.0)
    D = np.maximum(D, 0.0)
    # forward laws P(X_i = .) with their positivity pattern and error bound
    law = np.empty((T, k))
    pos = np.empty((T, k), dtype=bool)
    law[0], pos[0] = init, init > 0
    Bm = (M > 0).astype(np.int64)
    for i in range(1, T):
        law[i] = law[i - 1] @ M
        pos[i] = (pos[i - 1].astype(np.int64) @ Bm) > 0
    lrel = 1.01 * (np.arange(T) * (k + 1) + 2) * _U
    ok = pos[:, S] & pos[:, Tt]
    if worst_upstream:
        # P(X_i = t) / P(X_i = s) <= max_u M^{i}(u, t) / M^{i}(u, s), whatever the initial law
        R = np.full((T, len(prs)), np.nan)
        if T > 1:
            R[1:] = _ratio_max(P[:, :, Tt], P[:, :, S], B[:, :, Tt], B[:, :, S], rel, axis=1)[:T - 1]
        ok = np.ones_like(ok)
    else:
        num = law[:, Tt] * (1 + lrel[:, None]) + _ABS
        den = law[:, S] * (1 - lrel[:, None]) - _ABS
        with np.errstate(divide="ignore", invalid="ignore"):
            R = np.where(den > 0, _up(num / np.where(den > 0, den, 1.0)), np.inf)
    return U, D, R, ok, prs


def _log_up(x: np.ndarray) -> np.ndarray:
    """An upper bound of log(x) (x >= 1 here): numpy's log is within 1 ulp, step up 2 ulps."""
    with np.errstate(divide="ignore"):
        return np.maximum(_up(np.log(x), 2), 0.0)


def _node_sigma(t: int, T: int, eps: float, Ua: np.ndarray, Db: np.ndarray, ok: np.ndarray):
    """sigma_t = min over the quilts of node t (0-based) of card / (eps - influence).

    ``Ua``: (T-1, P) upstream factor U(a) * R_t per distance a, ``Db``: (T-1, P) downstream
    factor; ``ok``: the pairs whose two secrets are possible at t. Quilts whose card is
    >= eps * sigma of a quilt already found cannot win and are not evaluated."""
    nl, nr = t, T - 1 - t                  # nodes available on the left / right
    if not ok.any():
        return None
    Ua = Ua[:, ok]
    Db = Db[:, ok]
    # candidate upper bound first: quilts with a == b (and one-sided) -> a search radius
    best = (T / eps, None, None, T, 0.0, None)

    def consider(a_rng, b_rng, best):
        # rows: a in a_rng plus "no left"; cols: b in b_rng plus "no right"
        A = np.concatenate([Ua[np.asarray(a_rng, dtype=np.int64) - 1], np.ones((1, Ua.shape[1]))])
        Bv = np.concatenate([Db[np.asarray(b_rng, dtype=np.int64) - 1], np.ones((1, Db.shape[1]))])
        prod = _up(A[:, None, :] * Bv[None, :, :])
        j = prod.argmax(axis=2)
        infl = _log_up(np.take_along_axis(prod, j[..., None], axis=2)[..., 0])
        ca = np.concatenate([np.asarray(a_rng, dtype=np.float64), [t + 1.0]])
        cb = np.concatenate([np.asarray(b_rng, dtype=np.float64), [T - t + 0.0]])
        card = ca[:, None] + cb[None, :] - 1.0
        lam = _down(eps - infl)
        with np.errstate(divide="ignore", invalid="ignore"):
            sig = np.where(lam > 0, _up(card / np.where(lam > 0, lam, 1.0)), np.inf)
        idx = np.unravel_index(int(np.argmin(sig)), sig.shape)
        s = float(sig[idx])
        if s < best[0]:
            ia, ib = idx
            a = None if ia == len(a_rng) else int(a_rng[ia])
            b = None if ib == len(b_rng) else int(b_rng[ib])
            best = (s, a, b, int(card[idx]), float(infl[idx]), int(j[idx]))
        return best

    m = min(nl, nr)
    diag = np.arange(1, m + 1)
    if m:
        A = Ua[diag - 1] * Db[diag - 1]
        jd = A.argmax(axis=1)
        infl = _log_up(_up(A[np.arange(m), jd]))
        lam = _down(eps - infl)
        with np.errstate(divide="ignore", invalid="ignore"):
            sig = np.where(lam > 0, _up((2.0 * diag - 1) / np.where(lam > 0, lam, 1.0)), np.inf)
        q = int(np.argmin(sig))
        if sig[q] < best[0]:
            best = (float(sig[q]), int(diag[q]), int(diag[q]), int(2 * diag[q] - 1), float(infl[q]), int(jd[q]))
    # a useful quilt has card < eps * sigma (card / (eps - e) >= card / eps); pruning can only
    # drop candidates, i.e. make sigma larger, never smaller
    radius = int(math.floor(eps * best[0])) + 1 if math.isfinite(best[0]) else T
    a_rng = np.arange(1, min(nl, radius) + 1)
    b_rng = np.arange(1, min(nr, radius) + 1)
    best = consider(a_rng, b_rng, best)
    okidx = np.flatnonzero(ok)
    pair = None if best[5] is None else int(okidx[best[5]])
    return best[0], best[1], best[2], best[3], best[4], pair


def mqm_sigma(trans: Any, init: Any, T: int, eps: float, *, method: str = "exact",
              _compat: str | None = None) -> tuple[float, QuiltChoice]:
    """sigma (the Laplace scale for a 1-Lipschitz query) of MQMExact / MQMApprox for one prior
    (transition matrix ``trans`` (k, k), initial law ``init``, length ``T``), and the binding
    quilt. Upper bounds, rounded up (see the module docstring).

    >>> s, q = mqm_sigma([[0.9, 0.1], [0.1, 0.9]], [0.5, 0.5], 100, 1.0)
    >>> round(s, 6), (q.a, q.b)
    (31.734932, (16, 16))
    """
    M = V.float_array("trans", trans, ndim=2)
    k = M.shape[0]
    if M.shape != (k, k) or k < 2:
        raise ParameterError("trans", f"shape {M.shape}", "a square transition matrix with k >= 2 states")
    T = V.integer("T", T, lo=1, hi=100_000)
    eps = V.positive("eps", eps)
    if method not in ("exact", "approx"):
        raise ParameterError("method", method, "'exact' (MQMExact) or 'approx' (MQMApprox)")
    if _compat not in _COMPAT:
        raise ParameterError("_compat", _compat, "None, 'synthetic' or 'realdata'")
    if _compat == "synthetic":
        init = np.linalg.matrix_power(M, 100)[0]
    pi0 = V.float_array("init", init, ndim=1)
    if pi0.shape != (k,):
        raise ParameterError("init", f"shape {pi0.shape}", f"an initial law over the {k} states")
    nodes = range(1, T - 1) if _compat is not None else range(T)
    if _compat is not None and T < 3:
        raise ParameterError("T", T, "T >= 3 with _compat (the MATLAB code searches nodes 2..T-1)")
    if method == "exact":
        U, D, R, ok, prs = _exact_tables(M, pi0, T, worst_upstream=_compat == "realdata")
        best: tuple | None = None
        for t in nodes:
            Ua = U * R[t][None, :] if t > 0 else U
            Ua = _up(Ua)
            r = _node_sigma(t, T, eps, Ua, D, ok[t])
            if r is not None and (best is None or r[0] > best[0][0]):
                best = (r, t)
    else:
        q = _approx_ratio(M, T, _compat)
        prs = [(0, 1)]
        # the approximate influences do not depend on the pair (one column); the upstream side
        # counts twice: ((1 + D_a) / (1 - D_a))^2
        Ua = _up(q * q)[:, None]
        Db = q[:, None]
        best = None
        for t in nodes:
            r = _node_sigma(t, T, eps, Ua, Db, np.ones(1, dtype=bool))
            if r is not None and (best is None or r[0] > best[0][0]):
                best = (r, t)
    if best is None:
        raise ParameterError("init", "no node with two possible states", "a chain with at least one secret pair")
    (s, a, b, card, infl, pj), t = best
    pair = None if pj is None or method == "approx" else prs[pj]
    return s, QuiltChoice(t, a, b, card, infl, s, pair)


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
            return np.full(t.size, np.inf)
        pi = stationary_distribution(M)
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
    return np.linalg.matrix_power(M, 4096)[0]


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
    >>> round(m.noise.scale, 4), m.guarantee
    (1.3396, PP(eps=1.0, delta=0.0))
    """

    theorem = ("Song et al. 2017, Markov Quilt Mechanism for Markov chains "
               "(MQMExact / MQMApprox): F(X) + L Lap(sigma_max) is eps-Pufferfish private")
    refs = (Ref("song2017", "Markov Quilt Mechanism"),
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
        vals = np.asarray(framework.state_values, dtype=np.float64)
        L = float(vals.max() - vals.min()) if lipschitz is None else V.nonneg("lipschitz", lipschitz)
        if lipschitz is None:
            L = float(np.nextafter(L, np.inf))   # the difference of two floats, rounded: step up
        self.lipschitz = L
        M, P0 = framework.transitions, framework.initial_laws
        worst: tuple[float, Hashable, QuiltChoice] | None = None
        self.per_prior: dict[Hashable, QuiltChoice] = {}
        for j, th in enumerate(framework.priors):
            s, q = mqm_sigma(M[j], P0[j], framework.length, self.eps, method=method, _compat=_compat)
            self.per_prior[th] = q
            if worst is None or s > worst[0]:
                worst = (s, th, q)
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
        side = (lambda d: "none" if d is None else str(d))
        notes = (f"MQM{'Exact' if method == 'exact' else 'Approx'}: binding prior {th!r}, node X{q.node}, "
                 f"quilt a={side(q.a)}, b={side(q.b)} (card X_N = {q.card}), max-influence {q.influence!r}, "
                 f"sigma = {sigma!r}, L = {L!r}")
        if _compat:
            notes += f"; MATLAB compatibility conventions '{_compat}' (not the sound default)"
        self.guarantee = PP(self.eps, 0.0, self._provenance(notes))
        self.group = self._group(scale, lambda g: scale_up(g / self.eps))
