"""Reference values for capacity bounded DP (Chaudhuri, Imola, Machanavajjhala 2019): the
paper's stated numbers, the figure curves at eps = 1 / sigma = 1, the alpha = 2 Gram closed
forms, other exact lin values, the sound bounds, and the counterexamples to the printed
Thm 13 / Cor 2 bound (asserted as failures of ``paper_bound``).

Optimisation-based values are compared to 1e-6 absolute (the oracle tables are rounded to
6 decimals); every exact value must also be >= the table value - 1e-6 (never under-report).
"""
import math

import numpy as np
import pytest
from scipy.optimize import brentq, minimize_scalar

from puffer import capacity as C
from puffer.capacity import bounds as B
from puffer.capacity.restricted import standardized_renyi

TOL = 1e-6


def exact(family, s, alpha, k=1):
    r = standardized_renyi(family, s, alpha, k)
    assert 0.0 <= r["d_lo"] <= r["d_hi"] <= r["unrestricted"]  # sandwich
    return r["d_hi"]


# ---- §11.2 figure curves --------------------------------------------------------------------------
LAP = [  # alpha, lin, quad, cubic, renyi (4), paper lin UB
    (1.10, 0.254587, 0.282589, 0.287699, 0.400018, 7.284050),
    (1.25, 0.294911, 0.311671, 0.332606, 0.445350, 3.134158),
    (1.50, 0.352533, 0.353650, 0.391162, 0.512884, 1.762747),
    (1.75, 0.388597, 0.395192, 0.438094, 0.570533, 1.315314),
    (2.00, 0.405465, 0.438255, 0.474911, 0.619124, 1.098612),
    (2.50, 0.415179, 0.515318, 0.528273, 0.693951, 0.894969),
    (3.00, 0.415187, 0.568685, 0.569288, 0.746828, 0.804719),
    (3.50, 0.413049, 0.603510, 0.606546, 0.785109, 0.758259),
    (4.00, 0.410577, 0.626858, 0.640728, 0.813689, 0.732408),
    (4.50, 0.408247, 0.643195, 0.669435, 0.835685, 0.717347),
    (5.00, 0.406170, 0.655095, 0.692764, 0.853078, 0.708303),
    (5.10, 0.405786, 0.657088, 0.696875, 0.856126, 0.706971),
]
GAU = [
    (1.10, 0.547424, 0.549991, 0.550000, 0.55, 7.401493),
    (1.25, 0.608435, 0.624604, 0.624994, 0.625, 3.258389),
    (1.50, 0.679453, 0.742983, 0.749621, 0.75, 1.898084),
    (1.75, 0.698603, 0.842454, 0.870617, 0.875, 1.461314),
    (2.00, 0.693147, 0.916291, 0.980829, 1.0, 1.254655),
    (2.50, 0.670548, 0.993784, 1.148081, 1.25, 1.068756),
    (3.00, 0.650959, 1.021295, 1.242360, 1.5, 0.992784),
    (3.50, 0.636070, 1.031188, 1.292028, 1.75, 0.957254),
    (4.00, 0.624714, 1.034399, 1.320370, 2.0, 0.939458),
    (4.50, 0.615860, 1.034847, 1.337772, 2.25, 0.930173),
    (5.00, 0.608795, 1.034102, 1.349092, 2.5, 0.925192),
    (5.10, 0.607552, 1.033878, 1.350868, 2.55, 0.924510),
]


def _close(got, ref, tol=TOL):
    assert ref - tol <= got <= ref + tol, (got, ref)


@pytest.mark.parametrize("family,rows,fig", [("laplace", LAP, "1"), ("gaussian", GAU, "2")])
def test_figure_curves(family, rows, fig):
    alphas = [r[0] for r in rows]
    da = C.figure_data(fig + "a", alphas)
    db = C.figure_data(fig + "b", alphas)
    for i, (_a, lin, quad, cub, ren, ub) in enumerate(rows):
        _close(da["lin"][i], lin)
        _close(db["lin"][i], lin)
        _close(db["quad"][i], quad)
        _close(db["cubic"][i], cub)
        _close(da["renyi"][i], ren)
        _close(da["paper_ub"][i], ub)
        # monotone in the class and below the unrestricted value
        assert 0 <= db["lin"][i] <= db["quad"][i] + 1e-9 <= db["cubic"][i] + 2e-9 <= db["renyi"][i] + 3e-9


def test_mpmath_spot_values():
    # 25-30 digit mpmath checks quoted with the tables
    assert abs(exact("laplace", 1.0, 1.5, 2) - 0.3536502326) < 1e-9
    assert abs(exact("laplace", 1.0, 3.0, 2) - 0.5686849285) < 1e-9


def test_peaks():
    for fam, a_ref, v_ref in (("laplace", 2.7206, 0.415691), ("gaussian", 1.7705, 0.698671)):
        res = minimize_scalar(lambda a, fam=fam: -exact(fam, 1.0, a), bounds=(1.3, 4.0), method="bounded",
                              options={"xatol": 1e-5})
        assert abs(res.x - a_ref) < 2e-3
        _close(-res.fun, v_ref)


@pytest.mark.parametrize("alpha,lap,gau", [(6, 0.402760, 0.598272), (8, 0.398099, 0.585304),
                                           (10, 0.395137, 0.577649), (20, 0.388942, 0.562668),
                                           (50, 0.385098, 0.553909)])
def test_large_alpha(alpha, lap, gau):
    _close(exact("laplace", 1.0, alpha), lap)
    _close(exact("gaussian", 1.0, alpha), gau)
    # above the alpha = inf limit (0.382498 / 0.548170), which they approach
    assert exact("laplace", 1.0, alpha) > 0.382498 and exact("gaussian", 1.0, alpha) > 0.548170


@pytest.mark.parametrize("alpha,lap,gau", [(1.02, 0.231815, 0.509899), (1.05, 0.240453, 0.524365)])
def test_near_one(alpha, lap, gau):
    _close(exact("laplace", 1.0, alpha), lap)
    _close(exact("gaussian", 1.0, alpha), gau)
    # and above the lin-KL limits 0.225987 / 0.5
    assert C.laplace_lin_kl(1.0).eps < exact("laplace", 1.0, alpha)


# ---- §11.1 numbers stated in the paper and crossings ----------------------------------------------
def _ub(family, e, a):
    return B.paper_bound(family, [e], a)


@pytest.mark.parametrize("e,ref", [(1.0, 3.3147481), (0.5, 2.6347003), (2.0, 3.0124012), (5.0, 1.7413626)])
def test_laplace_crossing_eq4(e, ref):
    root = brentq(lambda a: _ub("laplace", e, a) - C.laplace_renyi(e, 1.0, a), 1.2, 10, xtol=1e-10)
    assert abs(root - ref) < 2e-6


def test_laplace_crossing_cor1():
    root = brentq(lambda a: _ub("laplace", 1.0, a) - (1.0 - math.log(2) / (a - 1)), 2, 10, xtol=1e-10)
    assert abs(root - 3.7195258) < 2e-6


@pytest.mark.parametrize("sigma,ref", [(1.0, 2.2668237), (0.5, 1.5714038), (2.0, 2.6479237)])
def test_gaussian_crossing(sigma, ref):
    root = brentq(lambda a: _ub("gaussian", 1 / sigma, a) - a / (2 * sigma**2), 1.05, 10, xtol=1e-10)
    assert abs(root - ref) < 2e-6


def test_cor2_constant():
    assert abs(math.sqrt(2 / math.pi) - 0.7978846) < 1e-7
    # Cor 2's Gaussian K is min_{1<=g<=2} E|Z|^g = E|Z| = sqrt(2/pi)
    assert abs(B.abs_moment("gaussian", 1.0) - 0.7978846) < 1e-7


# ---- §11.3 alpha = 2 closed forms ------------------------------------------------------------------
def lap_gram(s, k):
    return [None, math.log(1 + s**2 / 2), math.log(1 + s**2 / 2 + s**4 / 20),
            math.log(1 + 7 * s**2 / 12 + s**4 / 45 + s**6 / 432),
            math.log(1 + 7 * s**2 / 12 + 265 * s**4 / 5364 - 13 * s**6 / 64368 + 5 * s**8 / 85824)][k]


def gau_gram(s, k):
    return math.log(sum(s ** (2 * j) / math.factorial(j) for j in range(k + 1)))


def test_gram_at_one():
    for k, ref in zip(range(1, 5), [0.4054651081, 0.4382549309, 0.4749105521, 0.4901695843]):
        assert abs(lap_gram(1.0, k) - ref) < 1e-10
        _close(exact("laplace", 1.0, 2.0, k), ref, 1e-9)
    for k, ref in zip(range(1, 5), [0.6931471806, 0.9162907319, 0.9808292530, 0.9963334395]):
        _close(exact("gaussian", 1.0, 2.0, k), ref, 1e-9)
    assert abs(math.log((2 * math.e + math.exp(-2)) / 3) - 0.6191236300) < 1e-10
    assert abs(C.laplace_renyi(1.0, 1.0, 2.0) - 0.6191236300) < 1e-9


@pytest.mark.parametrize("s", [0.05, 0.3, 0.8, 1.7, 3.0])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_gram_closed_forms(s, k):
    for fam, f in (("laplace", lap_gram), ("gaussian", gau_gram)):
        ref = f(s, k)
        r = C.restricted_renyi((C.Laplace if fam == "laplace" else C.Gaussian)(s, 1.0),
                               (C.Laplace if fam == "laplace" else C.Gaussian)(0.0, 1.0), C.Poly(k), 2.0, "gram")
        assert ref - 1e-12 <= r.value <= ref + 1e-9 * (1 + ref)
        v = exact(fam, s, 2.0, k)
        assert ref - 1e-12 <= v <= ref + 1e-8 * (1 + ref)


def test_lin_alpha2_checks():
    for e, ref in ((0.5, math.log(1.125)), (2.0, math.log(3.0))):
        _close(C.laplace_lin_renyi(e, 1.0, 2.0).eps, ref, 1e-9)
    for s, ref in ((0.5, math.log(5)), (2.0, math.log(1.25))):
        _close(C.gaussian_lin_renyi(s, 1.0, 2.0).eps, ref, 1e-9)


# ---- §11.4 other exact lin values ------------------------------------------------------------------
LAP_TAB = {0.5: [0.092340, 0.117783, 0.141038, 0.151937, 0.156129],
           1.0: [0.352533, 0.405465, 0.415187, 0.406170, 0.395137],
           2.0: [1.140963, 1.098612, 0.999785, 0.920869, 0.866499]}
GAU_TAB = {0.5: [1.959029, 1.609438, 1.355160, 1.201764, 1.107563],
           1.0: [0.679453, 0.693147, 0.650959, 0.608795, 0.577649],
           2.0: [0.182121, 0.223144, 0.252719, 0.261155, 0.261578]}
ALPHAS = [1.5, 2, 3, 5, 10]


@pytest.mark.parametrize("e", sorted(LAP_TAB))
def test_laplace_lin_table(e):
    for a, ref in zip(ALPHAS, LAP_TAB[e]):
        g = C.laplace_lin_renyi(e, 1.0, a, method="exact")
        _close(g.eps, ref)
        assert g.kind == "exact" and g.sound


@pytest.mark.parametrize("sigma", sorted(GAU_TAB))
def test_gaussian_lin_table(sigma):
    for a, ref in zip(ALPHAS, GAU_TAB[sigma]):
        _close(C.gaussian_lin_renyi(sigma, 1.0, a, method="exact").eps, ref)


def test_small_shift_asymptotics():
    v = exact("laplace", 0.001, 2.2)
    assert abs(v - 5.49999e-7) < 1e-11 and v >= 2.2e-6 / 4 * (1 - 1e-5)


@pytest.mark.parametrize("e,lin,kl", [(0.1, 0.002496885368, 0.004837418036), (0.5, 0.060692874691, 0.106530659713),
                                      (1, 0.225987155913, 0.367879441171), (2, 0.754856152440, 1.135335283237),
                                      (5, 2.984038671369, 4.006737946999)])
def test_kl_closed_forms(e, lin, kl):
    g = C.laplace_lin_kl(e, 1.0)
    # the table is rounded to 12 decimals (half an ulp of the 12th decimal: 5e-13)
    assert lin - 5e-13 <= g.eps <= lin * (1 + 1e-11) + 1e-12
    assert kl - 5e-13 <= C.laplace_kl(e, 1.0) <= kl * (1 + 1e-11) + 1e-12
    # and the value is never below the mpmath value
    import mpmath as mp
    mp.mp.dps = 40
    x = mp.mpf(e)
    assert g.eps >= float(mp.sqrt(1 + x * x) - 1 + mp.log(2 / (1 + mp.sqrt(1 + x * x))))
    assert C.laplace_kl(e, 1.0) >= float(x - 1 + mp.exp(-x))
    # Thm 9's printed form agrees with the cancellation-free one
    printed = math.log(1 - ((1 - math.sqrt(1 + e * e)) / e) ** 2) + math.sqrt(1 + e * e) - 1
    assert abs(printed - g.eps) < 1e-10 * (1 + g.eps)
    # sensitivity scaling: eps*sens
    assert abs(C.laplace_lin_kl(e / 2, 2.0).eps - g.eps) < 1e-12 * (1 + g.eps)


@pytest.mark.parametrize("a,ren,cor1", [(1.5, 0.512884, None), (2, 0.619124, 0.306853), (3, 0.746828, 0.653426),
                                        (5, 0.853078, 0.826713), (10, 0.928683, 0.922984)])
def test_renyi_eq4_and_cor1(a, ren, cor1):
    r = C.laplace_renyi(1.0, 1.0, a)
    _close(r, ren)
    if cor1 is not None:
        lb = 1.0 - math.log(2) / (a - 1)
        _close(lb, cor1)
        assert r >= lb


def test_alpha_inf_limits():
    # alpha = inf lin value: log sup_t (1+t)/E|Y+t| with the closed forms of E|Y + t|
    from scipy.stats import norm
    lap = -minimize_scalar(lambda t: -math.log((1 + t) / (t + math.exp(-t))), bounds=(0, 5), method="bounded").fun
    gau = -minimize_scalar(lambda t: -math.log((1 + t) / (t * (2 * norm.cdf(t) - 1) + 2 * norm.pdf(t))),
                           bounds=(0, 5), method="bounded").fun
    _close(lap, 0.382498)
    _close(gau, 0.548170)
    assert exact("laplace", 1.0, 200.0) >= lap - 1e-7 and exact("laplace", 1.0, 200.0) < lap + 0.01


# ---- §11.5 counterexamples: the printed bound FAILS ------------------------------------------------
CEX = [("laplace", 5, 0.5, 0.151937, 0.101366), ("laplace", 3, 0.3, 0.058749, 0.051278),
       ("laplace", 2.5, 0.1, 0.0062067, 0.0059363), ("laplace", 10, 0.1, 0.0156432, 5.69e-9),
       ("laplace", 2.2, 0.001, 5.49999e-7, 4.80900e-7), ("gaussian", 2.2, 0.01, 1.09992e-4, 0.99931e-4),
       ("gaussian", 2.2, 0.001, 1.09999e-6, 0.63056e-6)]


@pytest.mark.parametrize("family,alpha,s,ex,ub", CEX)
def test_paper_bound_is_violated(family, alpha, s, ex, ub):
    if family == "laplace":
        g_ex = C.laplace_lin_renyi(s, 1.0, alpha, "exact")
        g_p = C.laplace_lin_renyi(s, 1.0, alpha, "paper")
        g_s = C.laplace_lin_renyi(s, 1.0, alpha, "sound")
    else:
        g_ex = C.gaussian_lin_renyi(1 / s, 1.0, alpha, "exact")
        g_p = C.gaussian_lin_renyi(1 / s, 1.0, alpha, "paper")
        g_s = C.gaussian_lin_renyi(1 / s, 1.0, alpha, "sound")
    assert abs(g_ex.eps - ex) <= max(1e-6 * ex, 1e-5 * ex + 1e-12) + 5e-7 * (ex > 1e-3)
    assert abs(g_p.eps - ub) <= 1e-3 * ub  # the table has 3-6 significant digits
    # the printed "upper bound" is below the certified lower end of the exact value
    r = standardized_renyi(family, s, alpha, 1)
    assert g_p.eps < r["d_lo"]
    assert g_p.kind == "paper_bound" and g_p.sound is False
    assert g_s.sound and g_s.eps >= g_ex.eps


S_MIN = {"laplace": {2.5: 0.1093, 3: 0.3409, 4: 0.5290, 5: 0.5949, 7: 0.6354, 10: 0.6445},
         "gaussian": {2.5: 0.2185, 3: 0.4261, 4: 0.5467, 5: 0.5763, 7: 0.5831, 10: 0.5735}}


@pytest.mark.parametrize("family", ["laplace", "gaussian"])
def test_validity_threshold(family):
    for a, smin in S_MIN[family].items():
        def f(s, a=a):
            return B.paper_bound(family, [s], a) - exact(family, s, a)
        assert f(smin * 0.98) < 0 < f(smin * 1.02)
        assert abs(brentq(f, smin * 0.9, smin * 1.1, xtol=1e-6) - smin) < 2e-4


def test_paper_bound_holds_at_figure_settings_for_alpha_le_2():
    for a in (1.1, 1.5, 2.0):
        for s in (0.01, 0.1, 1.0, 5.0):
            assert B.paper_bound("laplace", [s], a) >= exact("laplace", s, a)


# ---- §11.6 sound bounds ----------------------------------------------------------------------------
SOUND = [(1.5, 1.315386, 0.729216, 1.854855), (2, 1.069600, 0.605467, 1.386294), (3, 0.904123, 0.519174, 1.117003),
         (5, 0.805557, 0.466578, 0.969982), (10, 0.745021, 0.433818, 0.883886)]
CORR = [(1.1, 2.295047, 7.624619, 4.395656, 7.738152), (1.5, 1.377840, 2.079442, 1.859384, 2.195522),
        (2, 1.098612, 1.386294, 1.386294, 1.505549), (3, 0.917373, 1.039721, 1.120771, 1.165255),
        (5, 0.811715, 0.866434, 0.985351, 1.003999), (10, 0.747616, 0.770164, 0.924779, 0.932622)]


@pytest.mark.parametrize("a,l1,l05,g1", SOUND)
def test_sound_bound_table(a, l1, l05, g1):
    _close(B.sound_bound("laplace", [1.0], a), l1)
    _close(B.sound_bound("laplace", [0.5], a), l05)
    _close(B.sound_bound("gaussian", [1.0], a), g1)


@pytest.mark.parametrize("a,le,lc,ge,gc", CORR)
def test_corrected_bound_table(a, le, lc, ge, gc):
    _close(B.corrected_bound("laplace", [1.0], a, "exact"), le)
    _close(B.corrected_bound("laplace", [1.0], a, "cor2"), lc)
    _close(B.corrected_bound("gaussian", [1.0], a, "exact"), ge)
    _close(B.corrected_bound("gaussian", [1.0], a, "cor2"), gc)


def test_sound_bounds_dominate_exact_on_grid():
    m1, m2 = np.inf, np.inf
    for a in (1.1, 1.5, 2, 3, 5, 10):
        for s in (0.01, 0.1, 0.5, 1, 2, 5, 10):
            for fam in ("laplace", "gaussian"):
                ex = exact(fam, s, a)
                m1 = min(m1, B.sound_bound(fam, [s], a) - ex)
                m2 = min(m2, B.corrected_bound(fam, [s], a, "exact") - ex)
                assert B.corrected_bound(fam, [s], a, "cor2") >= ex
                # with the same K the corrected bound dominates the printed one: 2^{d(a-1)}(1+x) >= 1 + 2^{d(a-1)}x
                assert B.corrected_bound(fam, [s], a, "cor2") >= B.paper_bound(fam, [s], a) - 1e-12
    assert m1 > 0.0103 - 1e-4 and m2 > 0.347 - 1e-3


# ---- Cor 1 (corrected): a lower bound on the Laplace mechanism's Rényi divergence ----------------
def test_cor1_lower_bound_corrected():
    """eps ||v||_1 - d log 2 / (alpha - 1) <= Thm 11's exact divergence for every shift and order;
    the printed eps ||v||_1 is not a lower bound (the exact value falls below it)."""
    for alpha, want in ((2.0, 0.306853), (3.0, 0.653426), (5.0, 0.826713), (10.0, 0.922984)):
        got = C.laplace_renyi_lower_bound(1.0, 1.0, alpha)
        assert got <= 1.0 - math.log(2.0) / (alpha - 1.0) and abs(got - want) < 1e-6
    rng = np.random.default_rng(30)
    for _ in range(200):
        d = int(rng.integers(1, 5))
        v = rng.uniform(-3.0, 3.0, d)
        eps, alpha = float(rng.uniform(0.05, 4.0)), float(rng.uniform(1.01, 20.0))
        lower = C.laplace_renyi_lower_bound(eps, v, alpha)
        exact_value = C.laplace_renyi(eps, v, alpha)
        # exact F(x) = [alpha e^{(alpha-1)x} + (alpha-1) e^{-alpha x}] / (2 alpha - 1), one coordinate at a time
        x = eps * np.abs(v)
        direct = float(np.sum(np.log((alpha * np.exp((alpha - 1) * x) + (alpha - 1) * np.exp(-alpha * x))
                                     / (2 * alpha - 1)))) / (alpha - 1)
        assert lower <= direct * (1 + 1e-12) and lower <= exact_value
    # the printed form eps ||v||_1 exceeds the exact divergence: it is no lower bound
    assert C.laplace_renyi(1.0, 1.0, 2.0) < 1.0
    assert C.laplace_renyi_lower_bound(1.0, 1.0, 2.0) < C.laplace_renyi(1.0, 1.0, 2.0) < 1.0
    # the same bound is the note of Table 1's Laplace Rényi row
    assert "0.306853" in C.table1(1.0, 1.0, 2.0)[2]["unrestricted_note"]
