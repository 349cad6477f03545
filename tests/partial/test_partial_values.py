"""Reference values of Seeman, Reimherr & Slavkovic (derived oracles of the reconstruction:
Figure 4 table, Example 1 and 2 sensitivities, discrete Laplace and Dirichlet-multinomial masses,
the tiny WEM enumeration of the case study, the Algorithm 1/2 posterior oracle) and the epsilon-TP
guarantee algebra."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import puffer
import puffer.partial as P
from oracles import FIG4, Z0, Z1  # Seeman et al. 2024, Figure 4 (tests/oracles.py)
from puffer.errors import ParameterError, UnboundedSensitivityError
from puffer.partial import distributions as D


@pytest.mark.parametrize("n", sorted(FIG4))
def test_figure4_table(n):
    got = [[P.delta_correlated_counts(n, z0, z1) for z1 in Z1] for z0 in Z0]
    assert got == FIG4[n]


@pytest.mark.parametrize("n,z0,z1,want", [(100, 0.01, 0.99, 99), (100, 0.45, 0.55, 11), (100, 0.25, 0.75, 51),
                                          (100, 0.5, 0.2, 32), (5, 0.3, 0.7, 3), (5, 0.1, 0.9, 5), (5, 0.5, 0.2, 1),
                                          # the naive float trap: cumsum gives 84 and 48
                                          (100, 0.0, 0.5, 100), (50, 0.5, 1.0, 50)])
def test_figure4_extra_and_log_space_cells(n, z0, z1, want):
    assert P.delta_correlated_counts(n, z0, z1) == want


def _winf_exact(n, z0, z1):
    """Independent oracle: exact rational binomial CDFs and the integer shift criterion."""
    def pmf(m, p, shift):
        p = Fraction(p).limit_denominator(1000)
        return {k + shift: math.comb(m, k) * p ** k * (1 - p) ** (m - k) for k in range(m + 1)}
    a, b = pmf(n - 1, z1, 1), pmf(n - 1, z0, 0)
    F = lambda d, k: sum((v for kk, v in d.items() if kk <= k), Fraction(0))  # noqa: E731
    for tau in range(n + 1):
        if all(F(a, k) <= F(b, k + tau) and F(b, k) <= F(a, k + tau) for k in range(-1, n + 1)):
            return tau
    return n + 1


@pytest.mark.parametrize("n,z0,z1", [(7, 0.2, 0.6), (9, 0.35, 0.35), (12, 0.05, 0.95), (8, 0.6, 0.3), (6, 0.0, 0.3)])
def test_figure4_against_exact_rationals(n, z0, z1):
    assert P.delta_correlated_counts(n, z0, z1) == _winf_exact(n, z0, z1)


def test_figure4_anchors():
    for n in (3, 17, 40):
        assert P.delta_correlated_counts(n, 0.3, 0.3) == 1  # the DP value (Lemma 12)
        assert P.delta_correlated_counts(n, 0.0, 0.2) == n


@pytest.mark.parametrize("kappa,rho,c1", [(0.0, 0.0, Fraction(1, 10)), (0.3, 0.3, Fraction(1, 91)),
                                          (0.5, -0.2, Fraction(4, 15))])
def test_example1_gaussian_c1(kappa, rho, c1):
    assert P.gaussian_c1(10, 1.0, 1.0, kappa, rho) == pytest.approx(float(c1), rel=1e-12)
    d = P.delta_gaussian_conditional(2.0, 10, kappa=kappa, rho=rho)
    assert d >= 2.0 * float(c1) and d == pytest.approx(2.0 * float(c1), rel=1e-14)


def test_example1_non_psd_rejected_and_independent_case():
    with pytest.raises(ParameterError, match="PSD"):
        P.gaussian_c1(10, 1.0, 1.0, 0.9, -0.05)
    with pytest.raises(ParameterError, match="kappa"):
        P.gaussian_c1(10, 1.0, 1.0, 1.0, 0.0)
    assert P.delta_gaussian_conditional(1.0, 10) == pytest.approx(0.1, rel=1e-14)  # Delta/n (Example 1a)
    grid = [dict(kappa=0.0, rho=0.0), dict(kappa=0.5, rho=-0.2)]
    assert P.delta_gaussian_conditional(1.0, 10, grid=grid) == pytest.approx(4 / 15, rel=1e-14)


@pytest.mark.parametrize("n", [10, 20])
@pytest.mark.parametrize("p", [0.5, 0.2])
@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_example2_k_anonymity(n, p, k):
    assert P.delta_sdl_counts(n, p, k_anonymity=k) == 1


def test_example2_t_closeness_and_pinned_count():
    assert P.delta_sdl_counts(10, 0.5, t_closeness=(0.5, 0.1)) == 1
    assert P.delta_sdl_counts(20, 0.2, t_closeness=(0.5, 0.1)) == 1
    assert P.delta_sdl_counts(10, 0.5, t_closeness=(0.3, 0.05)) == 0  # S_n = 3 is public


def test_discrete_laplace_masses():
    assert float(D.discrete_laplace_pmf(0, 0.5)) == pytest.approx(0.244919, abs=5e-7)
    assert float(D.discrete_laplace_pmf(1, 0.5)) == pytest.approx(0.148551, abs=5e-7)
    assert float(D.discrete_laplace_pmf(-1, 0.5)) == pytest.approx(0.148551, abs=5e-7)
    k = np.arange(-200, 201)
    assert D.discrete_laplace_pmf(k, 0.5).sum() == pytest.approx(1.0, abs=1e-12)
    assert np.allclose(D.discrete_laplace_cdf(k, 0.5), np.cumsum(D.discrete_laplace_pmf(k, 0.5)), atol=1e-12)


def test_dirichlet_multinomial_mass():
    assert math.exp(float(D.dirichlet_multinomial_logpmf([3, 1], [2.0, 2.0]))) == pytest.approx(8 / 35, rel=1e-12)
    ys = np.array([[k, 4 - k] for k in range(5)])
    assert np.exp(D.dirichlet_multinomial_logpmf(ys, [2.0, 2.0])).sum() == pytest.approx(1.0, rel=1e-12)


TINY = {  # (eps, base) -> P(Y = x_t), E[Y] (spec's exact enumeration, J = 2)
    (1.0, "b"): (0.052051, (2.288139, 1.711861, 1.083949, 0.785639)),
    (1.0, "c"): (0.054862, (2.241207, 1.758793, 1.069259, 0.808103)),
    (0.01, "b"): (0.028758, (2.003264, 1.996736, 1.001106, 0.997507)),
    (0.01, "c"): (0.031080, (2.002707, 1.997293, 1.000907, 0.997801)),
}


def tiny_support():
    pts = [(c1, 4 - c1, d1, d2) for c1 in range(5) for d1 in range(c1 + 1) for d2 in range(4 - c1 + 1)]
    return np.array(pts, dtype=np.float64)


def tiny_wem(eps, base):
    sup = tiny_support()
    lb = None if base == "b" else D.dirichlet_multinomial_logpmf(sup[:, :2], [2.0, 2.0])
    return P.WassersteinExponential(eps, delta_z=2.0, support=sup, loss="l2", log_base=lb)


@pytest.mark.parametrize("key", sorted(TINY))
def test_tiny_wem_enumeration(key):
    sup = tiny_support()
    assert sup.shape[0] == 35
    m = tiny_wem(*key)
    p = np.exp(m.log_density(sup, [3, 1, 1, 0]))
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    px, ey = TINY[key]
    assert float(np.exp(m.log_density([3, 1, 1, 0], [3, 1, 1, 0]))) == pytest.approx(px, abs=5e-7)
    assert np.allclose(p @ sup, ey, atol=5e-7)
    assert m.guarantee.eps == key[0] and "Delta_z assumed, not derived" in m.guarantee.assumptions


def test_example1_wem_is_the_dp_exponential_mechanism():
    """Eq. 13: with Z independent of the records (Example 1(a)) Delta_z = Delta / n, and WEM on the
    interval [-Delta/2, Delta/2] with the absolute loss is the DP exponential mechanism
    f(y) = c exp(-n eps |y - xbar| / (2 Delta)); its normaliser in closed form, with s = 2 Delta / (n eps):
    c = 1 / (s (2 - exp(-(xbar + Delta/2)/s) - exp(-(Delta/2 - xbar)/s))). The draws follow that law
    (Kolmogorov-Smirnov at level 1e-4 on 200,000 draws; the same test rejects a scale 3 % off)."""
    from scipy import stats

    n, Delta, eps, xbar = 10, 2.0, 0.7, 0.3
    fw = P.TPFramework.gaussian_conditional(Delta, n)
    m = P.WassersteinExponential(eps, fw, interval=(-Delta / 2, Delta / 2))
    assert m.delta_z == pytest.approx(Delta / n, rel=1e-12) and m.delta_z >= Delta / n
    assert any(r.item == "Eq. 13" for r in m.guarantee.provenance.refs)
    s = 2 * Delta / (n * eps)
    c = 1.0 / (s * (2 - math.exp(-(xbar + Delta / 2) / s) - math.exp(-(Delta / 2 - xbar) / s)))
    y = np.linspace(-1, 1, 2001)
    ref = c * np.exp(-n * eps * np.abs(y - xbar) / (2 * Delta))
    assert np.allclose(np.exp(m.log_density(y, xbar)), ref, rtol=1e-9)

    def cdf(t: np.ndarray, scale: float) -> np.ndarray:     # the same law, integrated in closed form
        lo = -Delta / 2
        left = scale * (np.exp((np.minimum(t, xbar) - xbar) / scale) - math.exp((lo - xbar) / scale))
        right = np.where(t > xbar, scale * (1 - np.exp(-(t - xbar) / scale)), 0.0)
        total = scale * (2 - math.exp(-(xbar + Delta / 2) / scale) - math.exp(-(Delta / 2 - xbar) / scale))
        return (left + right) / total

    draws = np.sort(m.release(xbar, size=200_000, rng=13))
    i = np.arange(1, draws.size + 1)
    for scale, accept in ((s, True), (1.03 * s, False)):
        F = cdf(draws, scale)
        d = max(float(np.max(i / draws.size - F)), float(np.max(F - (i - 1) / draws.size)))
        assert (stats.kstwo.sf(d, draws.size) > 1e-4) == accept, scale


def test_posterior_oracle_closed_form():
    """The §5.3 oracle from its closed form (independent of the samplers)."""
    w = [math.exp(-abs(12 - x)) for x in range(21)]
    post = sum(wi * (x + 1) / 22 for x, wi in enumerate(w)) / sum(w)
    assert post == pytest.approx(0.5908708128, abs=1e-10)
    M = (1 - math.exp(-1)) / (1 + math.exp(-1))
    acc = sum(wi * M / 21 for wi in w) / M  # P(y | z) / M with P(x) = 1/21
    assert acc == pytest.approx(0.1030359, abs=5e-8)


def test_tp_algebra_and_loader():
    g1 = P.TP(0.3, z="z", family="F", secret_pairs="S", delta_z=2.0, mechanism="A")
    g2 = P.TP(0.4, z="z", family="F", secret_pairs="S", delta_z=2.0, mechanism="B")
    s = P.compose_sequential(g1, g2)
    assert s.eps >= 0.7 and s.eps == pytest.approx(0.7, rel=1e-15) and s.children == (g1, g2)
    par = P.compose_parallel([g1, g2], [[0, 1], [2]])
    assert par.eps == 0.4 and any("max" in a for a in par.assumptions)
    with pytest.raises(ParameterError, match="disjoint"):
        P.compose_parallel([g1, g2], [[0, 1], [1, 2]])
    with pytest.raises(ParameterError, match="z"):
        P.compose_sequential(g1, P.TP(0.1, z="other", family="F", secret_pairs="S"))
    with pytest.raises(ParameterError, match="independent"):
        P.compose_sequential(g1, g2, independent=False)
    assert P.post_process(g1).eps == 0.3
    r = P.restrict(0.5)
    assert r.eps >= 1.0 and r.eps == pytest.approx(1.0)
    lo, hi = P.posterior_odds_bounds(2.0, 1.0)
    assert lo <= 2 * math.exp(-1) <= 2 * math.exp(1) <= hi
    assert P.tv_bound(1.0) >= math.e - 1
    back = puffer.guarantee_from_json(s.to_json())
    assert back == s and isinstance(back, P.TP)
    with pytest.raises(ParameterError):
        puffer.guarantee_from_dict({**g1.to_dict(), "epsilon": 1.0})


def test_delta_zero_and_infinite():
    m = P.WassersteinExponential(1.0, delta_z=0.0, support=np.arange(5.0), loss="abs")
    assert m.release(3, size=10, rng=0).tolist() == [3.0] * 10
    with pytest.raises(UnboundedSensitivityError):
        P.WassersteinExponential(1.0, delta_z=math.inf, support=np.arange(5.0))


def test_tp_framework_from_conditionals_drops_certain_secrets():
    """Eq. 10: a pair whose secret has probability 0 under theta_z is skipped, not an error."""
    cond = {"th1": {"X=0": puffer.DiscreteDist([0, 1], [0.5, 0.5]), "X=1": puffer.DiscreteDist([1, 2], [0.5, 0.5])},
            "th2": {"X=0": puffer.DiscreteDist([0], [1.0]), "X=1": None}}
    fw = P.TPFramework.from_conditionals("z", cond, [("X=0", "X=1")])
    assert fw.delta_z == 1.0
    rest = fw.restrict(lambda s: s <= 1, description="S <= 1")
    assert rest.delta_z == 1.0
    assert P.delta_z(fw, rich=True) == 1.0
