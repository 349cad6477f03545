"""Confidence bounds used by the empirical auditor (pure functions on counts).

* :func:`clopper_pearson` — exact binomial interval (Clopper and Pearson 1934).
* :func:`pp_event_bound` — lower confidence bound on eps from one event E: under (eps, delta)-PP,
  P(E) <= e^eps Q(E) + delta, so eps >= log((P(E) - delta) / Q(E)); with P(E) >= p_lo and
  Q(E) <= q_hi (each at level a/2, union bound) eps >= log((p_lo - delta) / q_hi) with
  probability >= 1 - a (the DP-Sniper statistic of Bichsel et al. 2021, with exact intervals).
* :func:`renyi_partition_bound` — lower confidence bound on D_alpha(P || Q) from the cell counts
  of a finite partition. Data processing: D_alpha(P || Q) >= D_alpha(P o pi^-1 || Q o pi^-1) for
  any partition pi fixed before the counts are seen. The cell probabilities p, q lie in a
  simultaneous Clopper-Pearson box (Bonferroni over the 2K cells) with probability >= 1 - a,
  so the minimum of sum_k p_k^alpha q_k^(1-alpha) over {box, sum p = sum q = 1} is a lower
  confidence bound on exp((alpha - 1) D_alpha). The minimum is bounded below by the Lagrangian
  dual (valid for any multipliers; the problem is convex, so the best multipliers close the
  gap) and by the relaxation without the sum constraints (each cell at p_lo, q_hi).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["clopper_pearson", "pp_event_bound", "renyi_partition_bound", "renyi_plugin"]


def _beta() -> Any:
    import scipy.stats
    return scipy.stats.beta


def clopper_pearson(k: ArrayLike, n: int, a: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """One-sided Clopper-Pearson bounds at level ``a`` per side: (lo, hi) with
    P(p < lo) <= a and P(p > hi) <= a. ``k`` may be an array."""
    kf = np.asarray(k, dtype=np.float64)
    B = _beta()
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(kf > 0, B.ppf(a, kf, n - kf + 1), 0.0)
        hi = np.where(kf < n, B.ppf(1.0 - a, kf + 1, n - kf), 1.0)
    lo = np.nan_to_num(lo, nan=0.0)
    hi = np.nan_to_num(hi, nan=1.0)
    return lo, hi


def pp_event_bound(kp: ArrayLike, kq: ArrayLike, n_p: int, n_q: int, delta: float, a: float
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(lower confidence bound, plug-in estimate, delta-method s.e.) of the eps that the event
    with counts ``kp`` of ``n_p`` (under P) and ``kq`` of ``n_q`` (under Q) certifies; level ``a``
    in total (a/2 per side). Vectorised over events. Bounds are floored at 0 (eps >= 0)."""
    kpf = np.asarray(kp, dtype=np.float64)
    kqf = np.asarray(kq, dtype=np.float64)
    p_lo, _ = clopper_pearson(kpf, n_p, a / 2.0)
    _, q_hi = clopper_pearson(kqf, n_q, a / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lower = np.where(p_lo > delta, np.log(np.maximum(p_lo - delta, 1e-300) / q_hi), 0.0)
        p, q = kpf / n_p, kqf / n_q
        est = np.where((p > delta) & (q > 0), np.log(np.maximum(p - delta, 1e-300) / np.maximum(q, 1e-300)),
                       np.where(p > delta, np.inf, 0.0))
        se = np.sqrt(p * (1 - p) / n_p / np.maximum(p - delta, 1e-300) ** 2 + (1 - q) / (n_q * np.maximum(q, 1e-300)))
    return np.maximum(lower, 0.0), np.maximum(est, 0.0), se


def renyi_plugin(cp: NDArray[np.float64], cq: NDArray[np.float64], alpha: float) -> tuple[float, float]:
    """(plug-in D_alpha of the cell frequencies, delta-method s.e.); cells with no Q count get
    half a count so the estimate stays finite (an estimate only, never a bound)."""
    n_p, n_q = float(cp.sum()), float(cq.sum())
    p = cp / n_p
    q = np.maximum(cq, 0.5) / (n_q + 0.5 * np.count_nonzero(cq == 0))
    r = p / q
    S = float(np.sum(p * r ** (alpha - 1.0)))
    if not S > 0:
        return 0.0, math.inf
    gp = alpha * r ** (alpha - 1.0)
    gq = (1.0 - alpha) * r ** alpha
    var = (np.sum(gp * gp * p) - np.sum(gp * p) ** 2) / n_p + (np.sum(gq * gq * q) - np.sum(gq * q) ** 2) / n_q
    return max(math.log(S) / (alpha - 1.0), 0.0), math.sqrt(max(var, 0.0)) / (S * (alpha - 1.0))


def _phi(p: NDArray[np.float64], q: NDArray[np.float64], lam: float, mu: float, alpha: float
         ) -> NDArray[np.float64]:
    """p^alpha q^(1-alpha) - lam p - mu q, with 0 at p = 0 and +inf at q = 0 < p."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        f = np.where(p > 0, p * (p / q) ** (alpha - 1.0), 0.0)
    f = np.where(np.isnan(f), np.inf, f)
    return f - lam * p - mu * q


def _inner_min(a: NDArray[np.float64], b: NDArray[np.float64], c: NDArray[np.float64], d: NDArray[np.float64],
               lam: float, mu: float, alpha: float) -> NDArray[np.float64]:
    """Exact min over p in [a, b], q in [c, d] of phi = p^alpha q^(1-alpha) - lam p - mu q, per cell.

    phi is convex and positively homogeneous of degree 1, so its minimum over a box lies on the
    boundary (an interior point x with phi(x) < 0 improves along t x, t > 1, and one with
    phi(x) >= 0 along t x, t < 1, until the boundary); on each edge the convex 1-D minimiser
    has a closed form, clipped to the edge."""
    am1 = alpha - 1.0
    cands = []
    for P0 in (a, b):                         # p fixed, q in [c, d]
        if mu < 0:
            with np.errstate(divide="ignore", over="ignore"):
                qs = (am1 * P0 ** alpha / (-mu)) ** (1.0 / alpha)
            qs = np.clip(qs, c, d)
        else:
            qs = d
        cands.append(_phi(P0, qs, lam, mu, alpha))
    r = (lam / alpha) ** (1.0 / am1) if lam > 0 else 0.0
    for Q0 in (c, d):                         # q fixed, p in [a, b]
        ps = np.clip(Q0 * r, a, b)
        cands.append(_phi(ps, Q0, lam, mu, alpha))
    out: NDArray[np.float64] = np.min(np.stack(cands), axis=0)
    return out


def renyi_partition_bound(cp: ArrayLike, cq: ArrayLike, alpha: float, a: float) -> float:
    """Lower confidence bound (level ``a``) on D_alpha(P || Q) from the counts of a partition
    fixed independently of them (see the module docstring). ``alpha`` in (1, inf)."""
    cpf = np.asarray(cp, dtype=np.float64)
    cqf = np.asarray(cq, dtype=np.float64)
    K = cpf.size
    n_p, n_q = int(round(cpf.sum())), int(round(cqf.sum()))
    per = a / (4.0 * K)          # 2K cells, two sides each
    pa, pb = clopper_pearson(cpf, n_p, per)
    qc, qd = clopper_pearson(cqf, n_q, per)
    am1 = alpha - 1.0
    with np.errstate(divide="ignore", over="ignore"):
        relax = float(np.sum(np.where(pa > 0, pa * (pa / qd) ** am1, 0.0)))

    def dual(x: NDArray[np.float64]) -> float:
        lam, mu = float(x[0]), float(x[1])
        v = lam + mu + float(np.sum(_inner_min(pa, pb, qc, qd, lam, mu, alpha)))
        return v if math.isfinite(v) else -math.inf

    best = max(relax, 1.0)
    if K > 1:
        from scipy.optimize import minimize

        x0 = np.array([alpha, 1.0 - alpha])
        res = minimize(lambda x: -dual(x), x0, method="Nelder-Mead",
                       options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 400})
        v = dual(res.x)
        # closed-form inner minima: only rounding error; keep a margin of 1e-12 relative
        v -= 1e-12 * (1.0 + abs(v))
        best = max(best, v)
    return max(math.log(best) / am1, 0.0)
