"""Algorithms 1-2 against the exact posterior of a conjugate model (Seeman et al. §5.3 oracle):
theta ~ Beta(1, 1), X | theta ~ Bin(20, theta), Y = X + discrete Laplace of rate 1, y = 12;
E[theta | y] = 0.5908708128, Algorithm 1 acceptance 0.1030359 with M = max pmf. Tolerances are
5 Monte Carlo standard errors (false alarm < 1e-6 per check); the printed (inverted) acceptance
rule would give ~0.49, 16 standard errors away. Thm 15: exact size of the MLR test and a weakly
monotone likelihood ratio."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import puffer.partial as P
from puffer.errors import NumericalError, ParameterError
from puffer.partial import distributions as D

POST = 0.5908708128
ACC = 0.1030359
LOG_M = float(D.discrete_laplace_logpmf(0, 1.0))


def post_sd():
    w = np.array([math.exp(-abs(12 - x)) for x in range(21)])
    w /= w.sum()
    x = np.arange(21)
    m2 = (w * (x + 1) * (x + 2) / (22 * 23)).sum()  # E[theta^2 | x] for Beta(x+1, 21-x)
    return math.sqrt(m2 - POST ** 2)


def model():
    return dict(prior_sampler=lambda g, k: g.random(k), data_sampler=lambda g, th: g.binomial(20, th),
                log_likelihood=lambda y, x: D.discrete_laplace_logpmf(y - x, 1.0))


def test_algorithm1_exact_posterior():
    n = 20_000
    res = P.posterior_rejection_sampler(12, **model(), log_M=LOG_M, n=n, rng=2026)
    assert res.n_accepted == n
    assert abs(res.theta.mean() - POST) < 5 * post_sd() / math.sqrt(n)
    se_acc = math.sqrt(ACC * (1 - ACC) / res.n_proposals)
    assert abs(res.acceptance_rate - ACC) < 5 * se_acc
    # the posterior law itself: KS against the exact mixture of Beta(x+1, 21-x)
    w = np.array([math.exp(-abs(12 - x)) for x in range(21)])
    w /= w.sum()
    cdf = lambda t: sum(wi * stats.beta(x + 1, 21 - x).cdf(t) for x, wi in enumerate(w))  # noqa: E731
    xs = np.sort(res.theta)
    i = np.arange(1, n + 1)
    dstat = max(np.max(i / n - cdf(xs)), np.max(cdf(xs) - (i - 1) / n))
    assert stats.kstwo.sf(dstat, n) > 1e-4


def test_algorithm1_bound_and_cap():
    with pytest.raises(NumericalError, match="not a global bound"):
        P.posterior_rejection_sampler(12, **model(), log_M=LOG_M - 0.5, n=10, rng=1)
    with pytest.raises(NumericalError, match="acceptance rate"):
        P.posterior_rejection_sampler(12, **model(), log_M=LOG_M, n=10_000, max_proposals=1000, rng=1)


def test_algorithm2_prior_and_beta_proposal():
    m = 200_000
    res = P.posterior_importance_sampler(12, proposal_sampler=lambda g, k: g.random(k),
                                         data_sampler=lambda g, th: g.binomial(20, th),
                                         log_likelihood=lambda y, x: D.discrete_laplace_logpmf(y - x, 1.0), m=m, rng=3)
    assert abs(res.estimate - POST) < 5 * post_sd() / math.sqrt(res.ess)
    prop = stats.beta(6, 4)
    res2 = P.posterior_importance_sampler(
        12, proposal_sampler=lambda g, k: prop.rvs(size=k, random_state=g), proposal_logpdf=prop.logpdf,
        prior_logpdf=lambda th: np.zeros_like(th), data_sampler=lambda g, th: g.binomial(20, th),
        log_likelihood=lambda y, x: D.discrete_laplace_logpmf(y - x, 1.0), m=m, rng=4)
    assert abs(res2.estimate - POST) < 5 * post_sd() / math.sqrt(res2.ess)
    with pytest.raises(ParameterError, match="prior_logpdf"):
        P.posterior_importance_sampler(12, proposal_sampler=lambda g, k: g.random(k), proposal_logpdf=prop.logpdf,
                                       data_sampler=lambda g, th: g.binomial(20, th),
                                       log_likelihood=lambda y, x: x * 0.0, m=10)


def test_mlr_test_size_power_and_monotone_ratio():
    k = np.arange(31)
    lp = lambda th: stats.binom.logpmf(k, 30, th)  # noqa: E731
    for rate in (0.25, 1.0):
        t = P.MLRTest(0.4, 0.05, t_support=k, t_logpmf=lp, noise_rate=rate)
        assert t.size() == pytest.approx(0.05, abs=1e-12)
        assert t.power(0.3) <= 0.05 + 1e-12 <= t.power(0.5) <= t.power(0.6)
        y = np.arange(-40, 71)
        lr = (P.inference.log_marginal_likelihood(y, k, lp(0.6), rate)
              - P.inference.log_marginal_likelihood(y, k, lp(0.4), rate))
        assert (np.diff(lr) >= -1e-9).all()  # weakly monotone (Thm 15 (i)); flat in the tails
    # Blackwell (Lemma 14): the test on Y is at least as powerful as the same-size test on the
    # post-processed Y* = max(Y, 0) (a function of Y), here by construction of the UMP test.
    assert t.power(0.6) > 0.05
