"""Confidence bounds of the auditor against closed forms and deterministic containment."""
import math

import numpy as np
import pytest

from puffer.audit._stats import _inner_min, clopper_pearson, pp_event_bound, renyi_partition_bound


def test_clopper_pearson_closed_forms():
    # k = 0: hi = 1 - a^(1/n); k = n: lo = a^(1/n)
    lo, hi = clopper_pearson(0, 10, 0.025)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** 0.1, rel=1e-12)
    lo, hi = clopper_pearson(10, 10, 0.025)
    assert lo == pytest.approx(0.025 ** 0.1, rel=1e-12) and hi == 1.0
    lo, hi = clopper_pearson(np.array([3, 50]), 100, 0.05)
    assert (lo < np.array([0.03, 0.5])).all() and (hi > np.array([0.03, 0.5])).all()


def test_clopper_pearson_coverage_simulated():
    """One-sided level 0.05: the lower bound exceeds the true p in <= 5 % of 4000 draws
    (binomial s.d. 0.34 %; the test allows 6.5 %: false-alarm rate of the test ~ 1e-5)."""
    rng = np.random.default_rng(0)
    k = rng.binomial(200, 0.3, size=4000)
    lo, hi = clopper_pearson(k, 200, 0.05)
    assert np.mean(lo > 0.3) <= 0.065 and np.mean(hi < 0.3) <= 0.065


def test_pp_event_bound_values():
    lo, est, se = pp_event_bound(500, 184, 1000, 1000, 0.0, 0.01)
    assert est == pytest.approx(math.log(500 / 184)) and 0 < lo < est and se > 0
    lo_d, est_d, _ = pp_event_bound(500, 184, 1000, 1000, 0.1, 0.01)
    assert est_d == pytest.approx(math.log(0.4 / 0.184)) and lo_d < lo
    assert pp_event_bound(5, 500, 1000, 1000, 0.0, 0.01)[0] == 0.0


def _renyi(p, q, alpha):
    return math.log(float(np.sum(p ** alpha * q ** (1 - alpha)))) / (alpha - 1)


@pytest.mark.parametrize("alpha", [1.5, 2.0, 5.0])
def test_renyi_bound_below_the_plugin_of_the_counts(alpha):
    """The frequencies lie in the Clopper-Pearson box and on the simplex, so the minimum over the
    box (and its dual bound) can never exceed their divergence: deterministic, for any counts."""
    rng = np.random.default_rng(1)
    for _ in range(20):
        K = int(rng.integers(2, 12))
        p, q = rng.dirichlet(np.ones(K)), rng.dirichlet(np.ones(K))
        n = int(rng.integers(100, 100_000))
        cp, cq = rng.multinomial(n, p), rng.multinomial(n, q)
        if (cq == 0).any():
            continue
        b = renyi_partition_bound(cp, cq, alpha, 0.01)
        assert 0.0 <= b <= _renyi(cp / n, cq / n, alpha) + 1e-12


def test_renyi_bound_tight_for_huge_counts_and_dual_beats_relaxation():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    true = _renyi(p, q, 2.0)
    b = renyi_partition_bound(p * 1e10, q * 1e10, 2.0, 0.01)
    assert true * (1 - 1e-3) <= b <= true
    # moderate counts: the dual bound is above the box relaxation without the sum constraints
    from puffer.audit._stats import clopper_pearson as cpb
    n = 20_000
    cp, cq = p * n, q * n
    pa, _ = cpb(cp, n, 0.01 / 12)
    _, qd = cpb(cq, n, 0.01 / 12)
    relax = math.log(float(np.sum(pa ** 2 / qd)))
    assert renyi_partition_bound(cp, cq, 2.0, 0.01) > relax


def test_inner_minimum_matches_brute_force():
    """The closed-form boundary minimum of p^a q^(1-a) - lam p - mu q over a box equals a dense
    grid minimum (the function is convex and 1-homogeneous)."""
    rng = np.random.default_rng(2)
    for _ in range(30):
        a_, c_ = rng.uniform(0.01, 0.4, 2)
        b_, d_ = a_ + rng.uniform(0.01, 0.3), c_ + rng.uniform(0.01, 0.3)
        alpha = float(rng.uniform(1.2, 4))
        lam, mu = float(rng.uniform(-1, 4)), float(rng.uniform(-4, 1))
        got = float(_inner_min(np.array([a_]), np.array([b_]), np.array([c_]), np.array([d_]), lam, mu, alpha)[0])
        P, Q = np.meshgrid(np.linspace(a_, b_, 801), np.linspace(c_, d_, 801))
        grid = float(np.min(P ** alpha * Q ** (1 - alpha) - lam * P - mu * Q))
        assert got <= grid + 1e-12 and got >= grid - 1e-4 * (1 + abs(grid))
