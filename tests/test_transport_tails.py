"""Tail-driven W_inf: Seeman et al. 2024 Figure 4 table (exact), the naive-float precision trap
(84 instead of 100), log-space binomial / Poisson-binomial laws, and continuous laws with ppf."""
import math
from fractions import Fraction as F

import numpy as np
import pytest
from scipy import stats

from oracles import FIG4, Z0, Z1  # Seeman et al. 2024, Figure 4 (tests/oracles.py)
from puffer import DiscreteDist, NumericalError, ParameterError, ParameterTypeError
from puffer import transport as T


def delta_z(n, z0, z1):
    """W_inf between 1 + Bin(n-1, z1) (secret X_j = 1) and Bin(n-1, z0) (X_j = 0)."""
    return T.w_inf(T.binomial_law(n - 1, z1, shift=1), T.binomial_law(n - 1, z0))


@pytest.mark.parametrize("n", sorted(FIG4))
def test_spec003_figure4_table(n):
    got = [[delta_z(n, z0, z1) for z1 in Z1] for z0 in Z0]
    assert got == FIG4[n]


def test_spec003_extra_points_and_traps():
    assert delta_z(100, 0.01, 0.99) == 99
    assert delta_z(100, 0.45, 0.55) == 11
    assert delta_z(100, 0.25, 0.75) == 51
    assert delta_z(100, 0.5, 0.2) == 32
    assert delta_z(5, 0.3, 0.7) == 3 and delta_z(5, 0.1, 0.9) == 5 and delta_z(5, 0.5, 0.2) == 1
    # precision traps: a naive cumsum of float pmfs reports 84 and 48
    assert delta_z(100, 0.0, 0.5) == 100
    assert delta_z(50, 0.5, 1.0) == 50


def test_naive_float_method_really_fails_here():
    """The trap is real: the textbook method (scipy float pmfs, cumsum, searchsorted on the
    union of levels) under-reports W_inf(1 + Bin(99, 1/2), Bin(99, 0)) = 100."""
    from scipy.stats import binom

    n = 100
    k = np.arange(n)
    p1, p0 = binom.pmf(k, n - 1, 0.5), binom.pmf(k, n - 1, 0.0)
    F1, F0 = np.cumsum(p1), np.cumsum(p0)
    u = np.union1d(F1, F0)
    u = u[u <= min(F1[-1], F0[-1])]
    naive = np.max(np.abs((k + 1.0)[np.minimum(np.searchsorted(F1, u), n - 1)]
                          - k[np.minimum(np.searchsorted(F0, u), n - 1)]))
    assert naive < 100 and delta_z(n, 0.0, 0.5) == 100


def test_log_laws_match_exact_rationals_in_deep_tails():
    # Bin(n, p) with p = 1/4 exactly: exact Fractions give an independent oracle.
    rng = np.random.default_rng(7)
    for _ in range(12):
        n0, n1 = int(rng.integers(150, 260)), int(rng.integers(150, 260))
        p0, p1 = F(int(rng.integers(1, 4)), 4), F(int(rng.integers(1, 4)), 4)
        s = int(rng.integers(0, 3))

        def exact_binom(n, p, shift):
            return DiscreteDist([k + shift for k in range(n + 1)],
                                [math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(n + 1)])
        want = T.w_inf(exact_binom(n0, p0, s), exact_binom(n1, p1, 0))
        got = T.w_inf(T.binomial_law(n0, float(p0), shift=s), T.binomial_law(n1, float(p1)))
        assert got == want


def test_underflow_rule_of_to_dist():
    tiny = T.binomial_law(200, 0.01)           # P(X = 200) = 1e-400 underflows a double
    assert tiny.probs[-1] == 0.0 and np.isfinite(tiny.log_probs[-1])
    with pytest.raises(NumericalError, match="2\\^-1022"):
        tiny.to_dist()
    ok = T.binomial_law(24, 0.7).to_dist()
    assert isinstance(ok, DiscreteDist) and len(ok) == 25
    # the log law keeps the far tail: it still counts for W_inf
    assert T.w_inf(tiny, T.binomial_law(0, 0.5)) == 200.0
    # a DiscreteDist against a log law
    assert T.w_inf(DiscreteDist([0], [1.0]), tiny) == 200.0


def test_poisson_binomial_law_and_plans():
    ps = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.5]   # Ding 2022 test vector
    rest = T.poisson_binomial_law(ps[1:])
    one = T.poisson_binomial_law(ps[1:], shift=1)
    plan = T.quantile_coupling(rest, one)
    assert np.all(plan.target - plan.source == 1) and plan.sensitivity() == 1.0
    np.testing.assert_allclose(plan.mass, rest.probs, rtol=1e-9)
    bot = T.poisson_binomial_law(ps)
    assert T.w_inf(rest, bot) == 1.0
    # DP convolution vs closed-form binomial
    np.testing.assert_allclose(T.poisson_binomial_law([0.3] * 20).probs, stats.binom.pmf(range(21), 20, 0.3),
                               rtol=1e-12)
    deg = T.poisson_binomial_law([0.0, 1.0, 1.0])
    assert deg.atoms.tolist() == [2.0]
    with pytest.raises(ParameterError):
        T.poisson_binomial_law([0.5, 1.5])
    with pytest.raises(ParameterError):
        T.binomial_law(-1, 0.5)
    with pytest.raises(ParameterError):
        T.binomial_law(3, 1.5)
    with pytest.raises(ParameterError):
        T.LogDiscreteDist([0, 1], [0.0, 0.0])              # sums to 2
    with pytest.raises(ParameterError):
        T.LogDiscreteDist([0, 1], [np.nan, 0.0])
    with pytest.raises(ParameterError):
        T.w_inf(tiny_law(), tiny_law(), exact=True)


def tiny_law():
    return T.binomial_law(3, 0.5)


# ------------------------------------------------------------------ continuous laws
def test_continuous_location_pairs_closed_form():
    r = T.w_inf_continuous(stats.norm(0, 1), stats.norm(2.5, 1))
    assert r.value == 2.5 and "location pair" in r.reason
    assert T.w_inf(stats.laplace(1, 2), stats.laplace(-1, 2)) == 2.0
    assert T.w_inf(stats.t(3, 0, 1), stats.t(3, 0.5, 1)) == 0.5


def test_continuous_unbounded_cases_report_inf_with_reason():
    r = T.w_inf_continuous(stats.norm(0, 1), stats.norm(0, 2))        # different variances
    assert r.value == math.inf and "grows" in r.reason
    r = T.w_inf_continuous(stats.expon(), stats.norm())
    assert r.value == math.inf and "bounded on the lower side" in r.reason
    r = T.w_inf_continuous(stats.expon(scale=1), stats.expon(scale=2))
    assert r.value == math.inf and "upper tail" in r.reason
    assert T.w_inf(stats.norm(0, 1), stats.norm(0, 2)) == math.inf


def test_continuous_bounded_supports_certified():
    # U[0, 1] vs U[0.5, 2.5] (scipy: loc, scale): max(|0 - 0.5|, |1 - 2.5|) = 1.5 (Seeman et al. 2024)
    r = T.w_inf_continuous(stats.uniform(0, 1), stats.uniform(0.5, 2))
    assert r.lower <= 1.5 <= r.value <= 1.5 * (1 + 1e-8)
    # Beta(2, 3) vs Beta(3, 2): the certified value bounds a dense-grid estimate from above
    P, Q = stats.beta(2, 3), stats.beta(3, 2)
    u = np.linspace(0, 1, 200001)
    dense = np.max(np.abs(P.ppf(u) - Q.ppf(u)))
    r = T.w_inf_continuous(P, Q)
    assert r.lower <= dense + 1e-12 and dense <= r.value <= dense + 1e-6


def test_continuous_bad_inputs():
    with pytest.raises(ParameterTypeError):
        T.w_inf_continuous(stats.norm(), 3.0)
    with pytest.raises(ParameterTypeError):
        T.w_inf(stats.norm(), DiscreteDist([0], [1.0]))
    with pytest.raises(ParameterError):
        T.w_inf(stats.norm(), stats.norm(), return_plan=True)
    with pytest.raises(ParameterError):
        T.w_inf_continuous(stats.norm(), stats.norm(1), tol=2.0)
