"""The Thm 5.2 accountant: closed forms, Lemma F.1 = Feldman et al. Thm 23, the allocations'
ordering, guarantee objects with the soundness caveat, and the Figure 5/6 table (spec §3.5)."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import puffer
from puffer.errors import ParameterError, ParameterTypeError
from puffer.iteration import PABI, SOUNDNESS_CAVEAT, feldman_thm23, lemma_f1, pabi, pabi_curve
from puffer.iteration.figures import correlations, figure_series, privacy_loss
from puffer.noise import Gaussian, Laplace


def test_gaussian_closed_form_and_fixture():
    b = pabi([1, 0.5, 0.25, 0.1], Gaussian(1.0), 2.0)
    assert b == pytest.approx(4 * 2 * 0.4625 ** 2 / 2, rel=1e-14)
    assert b >= 4 * 2 * 0.4625 ** 2 / 2                       # never below the exact value
    assert b.eps == float(b) and b.alpha == 2.0
    assert isinstance(b.guarantee, puffer.RPP) and b.guarantee.eps == float(b)
    assert SOUNDNESS_CAVEAT in b.provenance.notes
    rng = np.random.default_rng(0)
    for _ in range(50):
        s = rng.random(int(rng.integers(1, 50)))
        sig, alpha = rng.uniform(0.3, 3), rng.uniform(1.1, 20)
        for alloc in ("optimal", "paper"):
            acc = PABI(s, Gaussian(sig), alloc)
            exact = alpha * math.fsum((acc.allocation ** 2).tolist()) / (2 * sig * sig)
            e = acc.epsilon(alpha)
            assert exact <= e <= exact * (1 + 1e-12)


def test_allocations_ordering():
    rng = np.random.default_rng(1)
    for _ in range(60):
        s = np.sort(rng.random(int(rng.integers(1, 40))))[::-1].copy()
        s[rng.random(s.size) < 0.2] *= 0.5
        s = np.sort(s)[::-1]
        for noise in (Gaussian(1.3), Laplace(0.7)):
            o = pabi(s, noise, 3.0, "optimal")
            assert o <= pabi(s, noise, 3.0, "paper") * (1 + 1e-12)
            assert o <= pabi(s, noise, 3.0, "uniform") * (1 + 1e-12)


@pytest.mark.parametrize("alpha", [1.5, 2.0, 7.0])
def test_lemma_f1_equals_feldman_thm23(alpha):
    """Independent records, secret in record i of T: shift 2 eta L at step i only, noise std
    nu eta; the optimal allocation gives 2 alpha L^2 / (nu^2 (T - i + 1)) (Feldman et al. 2018 Thm 23)."""
    for T in (1, 2, 5, 10, 37):
        for i in range(1, T + 1):
            for L, nu, eta in ((1.0, 1.0, 0.1), (2.5, 0.7, 0.03)):
                s = np.zeros(T)
                s[i - 1] = 2 * eta * L
                ours = pabi(s, Gaussian(nu * eta), alpha)
                exact = Fraction(2) * Fraction(alpha) * Fraction(L) ** 2 / (Fraction(nu) ** 2 * (T - i + 1))
                assert float(exact) <= ours <= float(exact) * (1 + 1e-12)
                assert lemma_f1(alpha, L, nu, T, i) == pytest.approx(float(exact), rel=1e-14)
                assert feldman_thm23(alpha, L, nu, T, i) == pytest.approx(float(exact), rel=1e-13)
                assert lemma_f1(alpha, L, nu, T, i) >= float(exact)
    assert lemma_f1(2.0, 1.0, 1.0, 10, 1) == pytest.approx(0.4, rel=1e-15)   # spec §3.6


def test_time_varying_gaussian_and_family_lists():
    s = np.array([0.0, 1.0, 0.0, 0.0])
    sig = [1.0, 1.0, 2.0, 0.5]
    acc = PABI(s, [Gaussian(x) for x in sig])
    # reparametrised time: a_t proportional to sigma_t^2 after step 2
    w = np.array(sig) ** 2
    a = np.r_[0.0, w[1:] / w[1:].sum()]
    np.testing.assert_allclose(acc.allocation, a, rtol=1e-14)
    assert acc.epsilon(2.0) == pytest.approx(2.0 * 1.0 / (2 * w[1:].sum()), rel=1e-13)
    mixed = pabi([1.0, 0.5], [Gaussian(1.0), Laplace(1.0)], 2.0)
    a = mixed.allocation
    want = float(Gaussian(1.0).R(2.0, a[0])) + float(Laplace(1.0).R(2.0, a[1]))
    assert want <= mixed <= want * (1 + 1e-12)


def test_curve_and_conversion():
    c = pabi_curve([1, 0.5, 0.25, 0.1], Gaussian(1.0))
    assert isinstance(c, puffer.RPPCurve)
    assert c.provenance.theorem.startswith("Pierquin") and "Thm 5.2" in c.provenance.theorem
    assert SOUNDNESS_CAVEAT in c.provenance.notes
    k = 0.4625 ** 2 * 4 / 2           # eps(alpha) = k alpha
    assert c.at(3.0).eps == pytest.approx(3 * k, rel=1e-13)
    pp = c.to_pp(1e-5, method="prop2.2")
    assert pp.eps == pytest.approx(k + 2 * math.sqrt(k * math.log(1e5)), rel=1e-6)
    assert pp.eps >= k + 2 * math.sqrt(k * math.log(1e5)) * (1 - 1e-12)
    assert c.to_pp(1e-5).eps < pp.eps        # the default: the tightest cited conversion


def test_laplace_reaches_pure_pp():
    b = pabi([0.0, 1.0, 0.0], Laplace(1.0), math.inf)
    assert b == pytest.approx(1.0, rel=1e-13)    # 2 steps of R_inf(0.5) = 0.5


def test_errors():
    with pytest.raises(ParameterError, match="one noise family per step"):
        pabi([1.0, 2.0], [Gaussian(1.0)], 2.0)
    with pytest.raises(ParameterTypeError):
        pabi([1.0], "gaussian", 2.0)
    with pytest.raises(ParameterError, match="allocation"):
        pabi([1.0], Gaussian(1.0), 2.0, allocation="greedy")
    with pytest.raises(ParameterError, match="alpha"):
        pabi([1.0], Gaussian(1.0), 1.0)
    with pytest.raises(ParameterError, match="prefix sums"):
        pabi([0.0, 1.0], Gaussian(1.0), 2.0, allocation=[1.0, 0.0])


# --- spec §3.5: Figures 5 and 6 --------------------------------------------------------------
ROWS = ["0", "0.1", "0.2", "0.8", "1", "1/t", "1/t^2"]


def _closed_forms(name: str, T: int) -> tuple[Fraction, Fraction]:
    """(formula (1), formula (2)) in exact arithmetic for L = sigma = eta = C = ||a-b|| = 1, alpha = 2."""
    if name in ("1/t", "1/t^2"):
        p = 1 if name == "1/t" else 2
        rho = [Fraction(1)] + [Fraction(1, t ** p) for t in range(2, T + 1)]
    else:
        rho = [Fraction(1)] + [Fraction(name)] * (T - 1)
    m = [min(Fraction(2), abs(r)) for r in rho]
    return sum(m) ** 2 / T, sum(x * x for x in m)


def test_figure_table_all_rows_all_T():
    """Every row of the spec table, T = 1..1000, formula (1) (uniform) and (2) (paper) against
    exact rational closed forms; and the optimal allocation never above either."""
    for name in ROWS:
        f1 = figure_series(name, 1000, "uniform")
        f2 = figure_series(name, 1000, "paper")
        # exact references, incrementally
        if name in ("1/t", "1/t^2"):
            p = 1 if name == "1/t" else 2
            m = [Fraction(1)] + [Fraction(1, t ** p) for t in range(2, 1001)]
        else:
            m = [Fraction(1)] + [min(Fraction(2), Fraction(name))] * 999
        S1 = S2 = Fraction(0)
        for T in range(1, 1001):
            S1 += m[T - 1]
            S2 += m[T - 1] ** 2
            e1, e2 = float(S1 * S1 / T), float(S2)
            assert e1 <= f1[T - 1] <= e1 * (1 + 1e-11) + 1e-300, (name, T, f1[T - 1], e1)
            assert e2 <= f2[T - 1] <= e2 * (1 + 1e-11) + 1e-300, (name, T, f2[T - 1], e2)
        # spot-check the incremental references against the closed forms
        for T in (1, 7, 1000):
            a, b = _closed_forms(name, T)
            assert float(a) == pytest.approx(f1[T - 1], rel=1e-11)
            assert float(b) == pytest.approx(f2[T - 1], rel=1e-11)
        opt = figure_series(name, 200, "optimal")
        assert (opt <= f1[:200] * (1 + 1e-12)).all() and (opt <= f2[:200] * (1 + 1e-12)).all()


# the printed table (spec §3.5), to its printed precision
TABLE = {
    ("0", 1): [1, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 0.001],
    ("0", 2): [1, 1, 1, 1, 1, 1, 1, 1],
    ("0.1", 1): [1, 0.605, 0.392, 0.361, 0.4205, 0.6962, 1.1881, 10.1808],
    ("0.1", 2): [1, 1.01, 1.04, 1.09, 1.19, 1.49, 1.99, 10.99],
    ("0.2", 1): [1, 0.72, 0.648, 0.784, 1.152, 2.3328, 4.3264, 40.3206],
    ("0.8", 1): [1, 1.62, 3.528, 6.724, 13.122, 32.3208, 64.3204, 640.32],
    ("1", 1): [1, 2, 5, 10, 20, 50, 100, 1000],
    ("1", 2): [1, 2, 5, 10, 20, 50, 100, 1000],
    ("1/t", 1): [1, 1.125, 1.04272, 0.857886, 0.647187, 0.404857, 0.269089, 0.0560323],
    ("1/t", 2): [1, 1.25, 1.46361, 1.54977, 1.59616, 1.62513, 1.63498, 1.64393],
    ("1/t^2", 1): [1, 0.78125, 0.428431, 0.240178, 0.127387, 0.0528211, 0.0267317, 0.00270252],
    ("1/t^2", 2): [1, 1.0625, 1.08035, 1.08204, 1.08228, 1.08232, 1.08232, 1.08232],
}
TS = [1, 2, 5, 10, 20, 50, 100, 1000]


@pytest.mark.parametrize("key", sorted(TABLE))
def test_figure_table_printed_values(key):
    name, formula = key
    rho = correlations(name, 1000)
    for T, want in zip(TS, TABLE[key]):
        got = privacy_loss(rho[:T], "uniform" if formula == 1 else "paper")
        assert got == pytest.approx(want, rel=6e-6, abs=1e-9), (key, T, got, want)


def test_plot_figures(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    from puffer.iteration.plot import plot_figure

    ax = plot_figure(5, T_max=30)
    assert len(ax.lines) == 15                         # 5 profiles x (1), (2), optimal
    ax.figure.savefig(tmp_path / "fig5.png")
    ax6 = plot_figure(6, T_max=30, optimal=False)
    assert len(ax6.lines) == 8
    y = ax6.lines[0].get_ydata()                        # rho = 0 (DP), formula (1): 1/T
    np.testing.assert_allclose(y, 1.0 / np.arange(1, 31), rtol=1e-12)
    with pytest.raises(ParameterError):
        plot_figure(4)
