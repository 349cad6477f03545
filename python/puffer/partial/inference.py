"""Inference from partially private releases: exact posteriors and importance sampling.

Inference from partially private data (Seeman, Reimherr & Slavkovic, "Formal privacy for
partially private data", §5: Lemma 14, Thm 15-17, Algorithms 1-2).

* :func:`posterior_rejection_sampler` -- Algorithm 1 (Thm 16): theta* ~ pi(theta | z),
  X* ~ pi(. | theta*, z), accept when U <= pi(y | X*, z) / M. The printed rule ("ratio <= U") is
  inverted and is corrected here; M must be a global bound sup_{x, y'} pi(y' | x, z) (the paper's
  C = sup_y' pi(y' | X*, z) is valid only when it does not depend on X*). Batched, with an
  iteration cap and the acceptance rate reported; a likelihood above M raises.
* :func:`posterior_importance_sampler` -- Algorithm 2 (Thm 17): theta ~ g (the printed "theta ~
  pi(theta | z)" contradicts the weights), w = pi(y | X, z) pi(theta | z) / g(theta), log-space
  weights, effective sample size reported.
* :func:`log_marginal_likelihood`, :class:`MLRTest` -- Thm 15: m_theta(y) = sum_t g(y - t)
  P_theta(T = t) for additive discrete-Laplace noise, and the one-sided uniformly most powerful test
  of theta <= theta0 (rejects for large y, randomised at the boundary) that uses (Y, Z) instead of
  the post-processed Y*. The likelihood ratio is monotone only in the weak sense.

The mechanism density passed in must include its x-dependent normaliser.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from scipy.special import logsumexp

from .. import _validate as V
from ..errors import NumericalError, ParameterError, ParameterTypeError
from ..refs import Ref
from . import distributions as D

__all__ = ["RejectionResult", "ImportanceResult", "posterior_rejection_sampler", "posterior_importance_sampler",
           "log_marginal_likelihood", "MLRTest"]


def _gen(rng: Any) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (int, np.integer, np.random.SeedSequence)):
        return np.random.default_rng(rng)
    raise ParameterTypeError("rng", rng, "None, an int, a SeedSequence or a numpy Generator")


def _callable(name: str, f: Any) -> None:
    if not callable(f):
        raise ParameterTypeError(name, f, "a callable")


@dataclass(frozen=True)
class RejectionResult:
    """Accepted draws of theta | y, z (and the matching X* if kept), with the acceptance report."""

    theta: np.ndarray
    data: np.ndarray | None
    n_proposals: int
    n_accepted: int
    refs: tuple[Ref, ...] = ()

    @property
    def acceptance_rate(self) -> float:
        return self.n_accepted / self.n_proposals if self.n_proposals else math.nan

    def __repr__(self) -> str:
        return (f"RejectionResult(n_accepted={self.n_accepted}, n_proposals={self.n_proposals}, "
                f"acceptance_rate={self.acceptance_rate:.6g})")


def posterior_rejection_sampler(y: Any, *, prior_sampler: Callable[[np.random.Generator, int], Any],
                                data_sampler: Callable[[np.random.Generator, np.ndarray], Any],
                                log_likelihood: Callable[[Any, np.ndarray], Any], log_M: float, n: int = 1000, batch: int = 10_000,
                                max_proposals: int = 10_000_000, keep_data: bool = False,
                                rng: Any = None) -> RejectionResult:
    """Algorithm 1 (corrected acceptance): exact draws from theta | Y = y, Z = z.

    prior_sampler(rng, size) -> thetas; data_sampler(rng, thetas) -> datasets (one per theta);
    log_likelihood(y, datasets) -> log pi(y | x, z) per dataset (normaliser included);
    log_M >= sup_{x, y'} log pi(y' | x, z) (a constant). Stops after ``n`` acceptances or raises
    NumericalError after ``max_proposals`` proposals (reporting the acceptance rate seen).

    >>> import numpy as np
    >>> from puffer.partial import distributions as D
    >>> res = posterior_rejection_sampler(
    ...     12, prior_sampler=lambda g, k: g.random(k), data_sampler=lambda g, th: g.binomial(20, th),
    ...     log_likelihood=lambda y, x: D.discrete_laplace_logpmf(y - x, 1.0),
    ...     log_M=float(D.discrete_laplace_logpmf(0, 1.0)), n=200, rng=1)
    >>> res.n_accepted
    200
    """
    for nm, f in (("prior_sampler", prior_sampler), ("data_sampler", data_sampler), ("log_likelihood", log_likelihood)):
        _callable(nm, f)
    log_M = V.real("log_M", log_M)
    n = V.integer("n", n, lo=1)
    batch = V.integer("batch", batch, lo=1)
    max_proposals = V.integer("max_proposals", max_proposals, lo=1)
    g = _gen(rng)
    thetas, datas = [], []
    got = proposals = 0
    while got < n:
        if proposals >= max_proposals:
            rate = got / proposals
            raise NumericalError(f"Algorithm 1: {got} of {n} acceptances after {proposals} proposals "
                                 f"(acceptance rate {rate:.3g}); raise max_proposals or use Algorithm 2")
        k = min(batch, max_proposals - proposals)
        th = np.asarray(prior_sampler(g, k))
        x = np.asarray(data_sampler(g, th))
        ll = np.asarray(log_likelihood(y, x), dtype=np.float64).reshape(-1)
        if ll.shape[0] != k or np.isnan(ll).any():
            raise ParameterError("log_likelihood", f"{ll.shape[0]} values (NaN: {bool(np.isnan(ll).any())})",
                                 f"{k} log-likelihoods, one per dataset, no NaN")
        if (ll > log_M + 1e-12 * max(1.0, abs(log_M))).any():
            raise NumericalError(f"Algorithm 1: log pi(y | x, z) = {ll.max():.17g} exceeds log_M = {log_M!r}: M is "
                                 "not a global bound (it must not depend on X*)")
        acc = np.log(g.random(k)) <= ll - log_M          # U <= pi(y | X*, z) / M
        idx = np.flatnonzero(acc)[: n - got]
        thetas.append(th[idx])
        if keep_data:
            datas.append(x[idx])
        got += idx.size
        # count proposals up to the last one used, so the reported rate is unbiased
        proposals += k if got < n else int(np.flatnonzero(acc)[idx.size - 1]) + 1
    return RejectionResult(np.concatenate(thetas), np.concatenate(datas) if keep_data else None, proposals, got,
                           (Ref("seeman2024", "Algorithm 1",
                                note="acceptance U <= ratio; the printed rule is inverted"),
                            Ref("seeman2024", "Thm 16")))


@dataclass(frozen=True)
class ImportanceResult:
    """Self-normalised importance estimate with its log-weights and effective sample size."""

    estimate: Any
    log_weights: np.ndarray
    theta: np.ndarray
    ess: float
    refs: tuple[Ref, ...] = ()

    def __repr__(self) -> str:
        return f"ImportanceResult(estimate={self.estimate!r}, ess={self.ess:.6g}, m={self.log_weights.size})"


def posterior_importance_sampler(y: Any, *, proposal_sampler: Callable[[np.random.Generator, int], Any],
                                 data_sampler: Callable[[np.random.Generator, np.ndarray], Any],
                                 log_likelihood: Callable[[Any, np.ndarray], Any], m: int = 10_000,
                                 proposal_logpdf: Callable[[np.ndarray], Any] | None = None,
                                 prior_logpdf: Callable[[np.ndarray], Any] | None = None,
                                 a: Callable[[np.ndarray], Any] | None = None,
                                 rng: Any = None) -> ImportanceResult:
    """Algorithm 2: E[a(theta) | y, z] ~ sum_j w_j a(theta_j) / sum_j w_j with theta_j ~ g,
    X_j ~ pi(. | theta_j, z), log w_j = log pi(y | X_j, z) + log pi(theta_j | z) - log g(theta_j).

    With ``proposal_logpdf`` and ``prior_logpdf`` both None, g is the prior (weights = likelihoods);
    give both or neither. ``a`` defaults to the identity.
    """
    for nm, f in (("proposal_sampler", proposal_sampler), ("data_sampler", data_sampler),
                  ("log_likelihood", log_likelihood)):
        _callable(nm, f)
    if (proposal_logpdf is None) != (prior_logpdf is None):
        raise ParameterError("prior_logpdf", prior_logpdf,
                             "given together with proposal_logpdf (or both None: g = prior)")
    m = V.integer("m", m, lo=1)
    g = _gen(rng)
    th = np.asarray(proposal_sampler(g, m))
    x = np.asarray(data_sampler(g, th))
    lw = np.asarray(log_likelihood(y, x), dtype=np.float64).reshape(-1)
    if lw.shape[0] != m or np.isnan(lw).any():
        raise ParameterError("log_likelihood", f"{lw.shape[0]} values", f"{m} log-likelihoods without NaN")
    if proposal_logpdf is not None and prior_logpdf is not None:
        lp, lg = np.asarray(prior_logpdf(th), dtype=np.float64), np.asarray(proposal_logpdf(th), dtype=np.float64)
        if ((lg == -np.inf) & (lp > -np.inf)).any():
            raise ParameterError("proposal_logpdf", "zero density where the prior is positive",
                                 "a proposal whose support covers the prior's")
        lw = lw + lp - lg
    if not np.isfinite(lw).any():
        raise NumericalError("Algorithm 2: every importance weight is zero (the proposals never explain y)")
    w = np.exp(lw - lw.max())
    vals = th if a is None else np.asarray(a(th), dtype=np.float64)
    est = np.tensordot(w, vals, axes=(0, 0)) / w.sum()
    ess = float(w.sum() ** 2 / np.dot(w, w))
    return ImportanceResult(est if np.ndim(est) else float(est), lw, th, ess,
                            (Ref("seeman2024", "Algorithm 2", note="proposals from g, as the weights require"),
                             Ref("seeman2024", "Thm 17")))


def log_marginal_likelihood(y: Any, t_support: Any, t_logpmf: Any, noise_rate: float) -> np.ndarray:
    """log m_theta(y) = log sum_t g(y - t) P_theta(T = t), g the discrete Laplace of rate ``noise_rate``
    (the WEM with L(r) = r on Z and sigma = Delta: rate eps / (2 Delta); the additive mechanism: eps/Delta)."""
    t = np.asarray(t_support)
    lp = np.asarray(t_logpmf, dtype=np.float64)
    if t.shape != lp.shape or t.ndim != 1:
        raise ParameterError("t_logpmf", f"shape {lp.shape}", f"one log-mass per support point {t.shape}")
    yy = np.asarray(y)
    g = D.discrete_laplace_logpmf(yy.reshape(-1, 1) - t.reshape(1, -1), noise_rate)
    return cast(np.ndarray, logsumexp(g + lp.reshape(1, -1), axis=1).reshape(yy.shape))


class MLRTest:
    """The size-alpha test of H0: theta <= theta0 vs H1: theta > theta0 based on Y = T + N, N discrete
    Laplace (Thm 15: Y has a monotone likelihood ratio in theta when eta is increasing and the noise is
    log-concave). phi(y) = 1 for y > c, gamma for y = c, 0 below; exact sizes from closed-form tails.

    ``t_logpmf(theta)`` returns log P_theta(T = t) on ``t_support`` (finite).

    >>> from scipy import stats
    >>> import numpy as np
    >>> k = np.arange(21)
    >>> test = MLRTest(0.5, 0.05, t_support=k, t_logpmf=lambda th: stats.binom.logpmf(k, 20, th), noise_rate=0.5)
    >>> round(test.size(), 12)
    0.05
    """

    def __init__(self, theta0: float, alpha: float, *, t_support: Any, t_logpmf: Callable[[float], Any],
                 noise_rate: float):
        self.theta0 = theta0
        self.alpha = V.real("alpha", alpha, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        self.t = np.asarray(t_support)
        if self.t.ndim != 1 or not np.issubdtype(self.t.dtype, np.integer):
            raise ParameterError("t_support", t_support, "a 1-D integer support")
        _callable("t_logpmf", t_logpmf)
        self._logpmf = t_logpmf
        self.rate = V.positive("noise_rate", noise_rate)
        self.refs = (Ref("seeman2024", "Thm 15"),)
        # smallest c with P(Y > c) <= alpha, then gamma
        lo, hi = int(self.t.min()) - 1, int(self.t.max()) + 1
        while self._sf(lo) <= self.alpha:
            lo -= 2 * (hi - lo) + 1
        while self._sf(hi) > self.alpha:
            hi += 2 * (hi - lo) + 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._sf(mid) <= self.alpha:
                hi = mid
            else:
                lo = mid
        self.c = hi
        p_c = self._sf(hi - 1) - self._sf(hi)
        self.gamma = 0.0 if p_c <= 0 else min(1.0, max(0.0, (self.alpha - self._sf(hi)) / p_c))

    def _probs(self, theta: float) -> np.ndarray:
        lp = np.asarray(self._logpmf(theta), dtype=np.float64)
        if lp.shape != self.t.shape:
            raise ParameterError("t_logpmf", f"output of shape {lp.shape}", f"shape {self.t.shape}")
        return cast(np.ndarray, np.exp(lp - logsumexp(lp)))

    def _sf(self, c: int, theta: float | None = None) -> float:
        """P_theta(Y > c)."""
        p = self._probs(self.theta0 if theta is None else theta)
        return float(np.dot(p, 1.0 - D.discrete_laplace_cdf(c - self.t, self.rate)))

    def power(self, theta: float) -> float:
        """E_theta phi(Y)."""
        p_c = self._sf(self.c - 1, theta) - self._sf(self.c, theta)
        return self._sf(self.c, theta) + self.gamma * p_c

    def size(self) -> float:
        return self.power(self.theta0)

    def __call__(self, y: Any) -> np.ndarray:
        """phi(y): rejection probability for observed y."""
        yy = np.asarray(y)
        return np.where(yy > self.c, 1.0, np.where(yy == self.c, self.gamma, 0.0))

    def __repr__(self) -> str:
        return f"MLRTest(theta0={self.theta0}, alpha={self.alpha}, c={self.c}, gamma={self.gamma:.6g})"
