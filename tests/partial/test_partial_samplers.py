"""Statistical acceptance tests of the partially-private-data samplers (the approach of
tests/test_sampling_stats.py).

Every check is run at level ALPHA = 1e-4 (false-alarm rate 1e-4 per check): Kolmogorov-Smirnov
against an exact CDF (exact asymptotic Kolmogorov p-value) for continuous laws, Pearson chi^2 against
the exact pmf (cells with expected count >= 20, tails merged) for discrete ones. Power: the same
sample is tested against the law with its scale multiplied by 1.03 and must be rejected at the same
level. With N = 10^6 draws a 3 % scale error moves every CDF below by more than 0.005 (the KS
critical value at 1e-4 is 0.0022) and gives chi^2 noncentralities above 100 (critical values < 60),
so a miss has probability < 1e-8; the assertions on the mis-scaled statistics show it on the sample.
Reproducibility: identical output for the same rng and for 1 or 2 threads.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import puffer.partial as P
from puffer.partial import distributions as D

ALPHA = 1e-4
N = 1_000_000


def ks_pvalue(x: np.ndarray, cdf) -> float:
    xs = np.sort(x)
    n = xs.size
    c = cdf(xs)
    i = np.arange(1, n + 1)
    d = max(float(np.max(i / n - c)), float(np.max(c - (i - 1) / n)))
    return float(stats.kstwo.sf(d, n))


def chi2_pvalue(counts: np.ndarray, probs: np.ndarray, n: int) -> float:
    """Pearson chi^2 with cells merged (left to right) until the expected count is >= 20."""
    exp = probs * n
    obs_m, exp_m, acc_o, acc_e = [], [], 0.0, 0.0
    for o, e in zip(counts, exp):
        acc_o += o
        acc_e += e
        if acc_e >= 20:
            obs_m.append(acc_o)
            exp_m.append(acc_e)
            acc_o = acc_e = 0.0
    obs_m[-1] += acc_o
    exp_m[-1] += acc_e
    o, e = np.array(obs_m), np.array(exp_m)
    e = e * o.sum() / e.sum()
    stat = float(((o - e) ** 2 / e).sum())
    return float(stats.chi2.sf(stat, o.size - 1))


def test_discrete_laplace():
    rate = 0.4
    x = D.discrete_laplace_sample(rate, N, rng=11)
    k = np.arange(-80, 81)
    counts = np.array([np.count_nonzero(x == v) for v in k])
    assert counts.sum() == N  # tail beyond 80/rate*... has mass < 1e-13
    assert chi2_pvalue(counts, D.discrete_laplace_pmf(k, rate), N) > ALPHA
    assert chi2_pvalue(counts, D.discrete_laplace_pmf(k, rate / 1.03), N) < ALPHA  # scale x 1.03
    assert np.array_equal(x, D.discrete_laplace_sample(rate, N, rng=11, threads=1))
    assert np.array_equal(D.discrete_laplace_sample(rate, N, rng=11, threads=2), x)
    y = D.discrete_laplace_sample(rate, values=np.arange(5), rng=3)
    assert np.array_equal(y - np.arange(5), D.discrete_laplace_sample(rate, 5, rng=3))


@pytest.mark.parametrize("c,lo,hi", [(0.3, -1.0, 1.0), (5.0, -1.0, 1.0), (-40.0, 0.0, 3.0)])
def test_truncated_laplace(c, lo, hi):
    b = 0.8
    x = D.truncated_laplace_sample(c, b, lo, hi, N, rng=5)
    assert x.min() >= lo and x.max() <= hi
    assert ks_pvalue(x, lambda t: D.truncated_laplace_cdf(t, c, b, lo, hi)) > ALPHA
    assert ks_pvalue(x, lambda t: D.truncated_laplace_cdf(t, c, 1.03 * b, lo, hi)) < ALPHA


@pytest.mark.parametrize("norm", [1, 2, math.inf])
@pytest.mark.parametrize("d", [3, 100])
def test_knorm_radius_and_direction(norm, d):
    s = 0.7
    n = 200_000 if d == 100 else N
    v = D.knorm_sample(norm, d, s, n, rng=7)
    r = {1: np.abs(v).sum(1), 2: np.sqrt((v * v).sum(1)), math.inf: np.abs(v).max(1)}[norm]
    # polar decomposition: ||V||_K ~ Gamma(d, s) for every K
    assert ks_pvalue(r, stats.gamma(d, scale=s).cdf) > ALPHA
    assert ks_pvalue(r, stats.gamma(d, scale=1.03 * s).cdf) < ALPHA
    u = v[:, 0] / r
    if norm == 1:
        assert ks_pvalue(v[:, 0], stats.laplace(scale=s).cdf) > ALPHA   # iid Laplace coordinates
    elif norm == 2:
        # V / ||V|| uniform on the sphere: (U_1 + 1)/2 ~ Beta((d-1)/2, (d-1)/2)
        assert ks_pvalue((u + 1) / 2, stats.beta((d - 1) / 2, (d - 1) / 2).cdf) > ALPHA
    else:
        # cone measure of the cube: a non-maximal coordinate of V/||V||_inf is uniform on [-1, 1]
        nonmax = np.abs(u) < 1.0
        assert ks_pvalue(u[nonmax], stats.uniform(-1, 2).cdf) > ALPHA
        assert abs(np.mean(~nonmax) - 1.0 / d) < 6 * math.sqrt(1.0 / d / n)


def test_knorm_reproducible_and_centered():
    a = D.knorm_sample(2, 5, 1.0, 1000, rng=1, threads=1)
    b = D.knorm_sample(2, 5, 1.0, 1000, rng=1, threads=2)
    assert np.array_equal(a, b)
    c = D.knorm_sample(2, 5, 1.0, 1000, rng=1, center=np.arange(5.0))
    assert np.allclose(c - np.arange(5.0), a)


def test_knorm_gradient_mechanism():
    m = P.KNormGradient.for_mean(0.5, 20, 0.1, norm=2, dim=4)
    assert m.sigma_y >= 2.0 and m.scale == pytest.approx(2 * 2.0 / (0.5 * 20), rel=1e-14)
    y = m.release(np.zeros(4), size=N // 4, rng=2)
    assert ks_pvalue(np.sqrt((y * y).sum(1)), stats.gamma(4, scale=m.scale).cdf) > ALPHA
    # log density integrates the normaliser: radial density check at a point
    lp = m.log_density(np.array([0.1, 0.2, 0.0, 0.0]), np.zeros(4))
    r = math.hypot(0.1, 0.2)
    want = -r / m.scale - (4 * math.log(m.scale) + math.lgamma(5) + 2 * math.log(math.pi) - math.lgamma(3))
    assert float(lp) == pytest.approx(want, rel=1e-12)


def test_wem_finite_support_categorical():
    sup = np.arange(10_000, dtype=np.float64)
    m = P.WassersteinExponential(0.02, delta_z=1.0, support=sup, loss="abs")
    x = m.release(4321.0, size=N, rng=9)
    counts = np.bincount(x.astype(np.int64), minlength=sup.size)
    p = np.exp(m.log_density(sup, 4321.0))
    assert chi2_pvalue(counts, p, N) > ALPHA
    wrong = np.exp(P.WassersteinExponential(0.02 / 1.03, delta_z=1.0, support=sup).log_density(sup, 4321.0))
    assert chi2_pvalue(counts, wrong, N) < ALPHA
    assert np.array_equal(x, m.release(4321.0, size=N, rng=9, threads=1))


def test_wem_zero_weight_atoms_never_drawn():
    sup = np.arange(6.0)
    lb = np.array([0.0, -np.inf, 0.0, -np.inf, 0.0, 0.0])
    m = P.WassersteinExponential(1.0, delta_z=1.0, support=sup, log_base=lb)
    x = m.release(1.0, size=100_000, rng=4)
    assert not np.isin(x, [1.0, 3.0]).any()


def test_dirichlet_multinomial_sampler():
    a = np.array([2.0, 2.0, 0.5])
    y = D.dirichlet_multinomial_sample(4, a, 200_000, rng=8)
    assert (y.sum(1) == 4).all()
    pts = [(i, j, 4 - i - j) for i in range(5) for j in range(5 - i)]
    key = {p: k for k, p in enumerate(pts)}
    counts = np.bincount([key[tuple(r)] for r in y.tolist()], minlength=len(pts))
    p = np.exp(D.dirichlet_multinomial_logpmf(np.array(pts), a))
    assert chi2_pvalue(counts, p, y.shape[0]) > ALPHA
    wrong = np.exp(D.dirichlet_multinomial_logpmf(np.array(pts), a * 1.5))
    assert chi2_pvalue(counts, wrong, y.shape[0]) < ALPHA
    assert np.array_equal(y, D.dirichlet_multinomial_sample(4, a, 200_000, rng=8))


@pytest.mark.parametrize("base", ["congenial", "prior"])
def test_lattice_mh_matches_the_exact_wem(base):
    """The MCMC sampler against the exact enumeration (J = 2, x = (3, 1, 1, 0), s = 4): 40 000
    independent chains of 300 steps, chi^2 on the 35 support points; a wrong eps (x 1.5) is rejected."""
    from test_partial_values import tiny_support, tiny_wem  # same folder

    m_chains = 40_000
    mech = P.LatticeWEM(1.0, delta_z=2.0, base=base)
    xc = np.tile([3, 1], (m_chains, 1))
    xd = np.tile([1, 0], (m_chains, 1))
    conc = np.full((m_chains, 2), 2.0) if base == "prior" else None
    c, d, acc = mech.release(xc, xd, np.full(m_chains, 4), concentration=conc, steps=300, max_step=2, rng=1,
                             return_acceptance=True)
    assert ((c >= d) & (d >= 0)).all() and (c.sum(1) == 4).all()
    assert mech.guarantee.approximate
    sup = tiny_support()
    key = {tuple(p): k for k, p in enumerate(sup.astype(int).tolist())}
    counts = np.bincount([key[tuple(r)] for r in np.concatenate([c, d], 1).tolist()], minlength=35)
    b = "b" if base == "congenial" else "c"
    p = np.exp(tiny_wem(1.0, b).log_density(sup, [3, 1, 1, 0]))
    assert chi2_pvalue(counts, p, m_chains) > ALPHA
    wrong = np.exp(tiny_wem(1.5, b).log_density(sup, [3, 1, 1, 0]))
    assert chi2_pvalue(counts, wrong, m_chains) < ALPHA


def test_wem_on_r_d_and_z_d():
    """WEM with a norm loss and a translation-invariant base: K-norm noise of scale 2 sigma/eps on R^d,
    a product of discrete Laplace laws (rate eps / (2 sigma)) on Z^d with the l1 loss."""
    m = P.WassersteinExponential(0.5, delta_z=1.0, loss="l2", space="R^d", dim=3)
    y = m.release([1.0, 2.0, 3.0], size=200_000, rng=4)
    r = np.sqrt(((y - [1.0, 2.0, 3.0]) ** 2).sum(1))
    assert ks_pvalue(r, stats.gamma(3, scale=4.0).cdf) > ALPHA
    assert ks_pvalue(r, stats.gamma(3, scale=4.0 * 1.03).cdf) < ALPHA
    z = P.WassersteinExponential(1.0, delta_z=1.0, loss="l1", space="Z^d", dim=2)
    k = z.release([5, -5], size=N // 2, rng=6)
    vals, counts = np.unique(k[:, 0] - 5, return_counts=True)
    full = np.arange(vals.min(), vals.max() + 1)
    cnt = np.zeros(full.size)
    cnt[vals - full[0]] = counts
    assert chi2_pvalue(cnt, D.discrete_laplace_pmf(full, 0.5), N // 2) > ALPHA
    assert chi2_pvalue(cnt, D.discrete_laplace_pmf(full, 0.5 / 1.03), N // 2) < ALPHA
    want = 2 * float(D.discrete_laplace_logpmf(0, 0.5))
    assert float(z.log_density(np.array([5.0, -5.0]), [5, -5])) == pytest.approx(want)
    with pytest.raises(Exception, match="LatticeWEM"):
        P.WassersteinExponential(1.0, delta_z=1.0, loss="l2", space="Z^d", dim=2)
