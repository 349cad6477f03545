"""Exact restricted Rényi values against an independent mpmath computation (30 digits).

For lin, mpmath maximises the ratio form (Chaudhuri et al. 2019, Lemma 3 with the scale
optimised out) D = alpha*·log sup_t (s + t)/||Y + t||_{alpha*} over the intercept t, with
E|Y + t|^r from the semi-closed forms (Gaussian: Kummer 1F1; Laplace: incomplete Gamma) —
no shared code with the compiled solver. For poly_k, mpmath evaluates the ratio at the
returned adversary h* and at random perturbations of it: every feasible h gives a *lower*
bound on the true value, so a reported value below any of them would be an under-report.

Grid: random (alpha, s, k) from a fixed seed. Under-reports allowed: 0. Over-reports bounded
by 1e-7 (lin, where the mpmath maximum is itself accurate to ~1e-12).
"""
import mpmath as mp
import numpy as np
import pytest

from puffer.capacity.restricted import standardized_renyi

MPMATH_DPS = 30  # set around each test by conftest's _mpmath_precision


def e_abs_gauss(t, r):
    t, r = mp.mpf(t), mp.mpf(r)
    return 2 ** (r / 2) * mp.gamma((r + 1) / 2) / mp.sqrt(mp.pi) * mp.hyp1f1(-r / 2, mp.mpf(1) / 2, -t * t / 2)


def e_abs_laplace(t, r):
    t, r = abs(mp.mpf(t)), mp.mpf(r)
    inner = mp.quad(lambda w: w ** r * mp.exp(w), [0, t]) if t > 0 else mp.mpf(0)
    return (mp.exp(-t) * mp.gamma(r + 1) + mp.exp(-t) * inner + mp.exp(t) * mp.gammainc(r + 1, t)) / 2


def mp_lin(family, s, alpha):
    r = mp.mpf(alpha) / (mp.mpf(alpha) - 1)
    E = e_abs_laplace if family == "laplace" else e_abs_gauss

    def f(th):  # h = cos(th) x + sin(th): bounded search, th = pi/2 is the constant adversary
        c, sn = mp.cos(th), mp.sin(th)
        t = sn / c
        return mp.log((s + t) / E(t, r) ** (1 / r))
    # golden-section on th in (0, pi/2) (the ratio is quasi-concave in t)
    a, b = mp.mpf("1e-6"), mp.pi / 2 - mp.mpf("1e-9")
    g = (mp.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(70):
        if fc > fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    best = max(fc, fd, mp.mpf(0))
    return float(r * best)


def mp_ratio(family, s, alpha, coef):
    """alpha*·log(E_P h / ||h||_{L^alpha*(Q)}) for h = sum coef_j x^j, by mpmath quadrature."""
    r = mp.mpf(alpha) / (mp.mpf(alpha) - 1)
    cs = [mp.mpf(c) for c in coef]
    def h(x):
        v = mp.mpf(0)
        for c in reversed(cs):
            v = v * x + c
        return v
    if family == "laplace":
        dens = lambda x: mp.exp(-abs(x)) / 2  # noqa: E731
    else:
        dens = lambda x: mp.npdf(x)  # noqa: E731
    # real roots of h as breakpoints (numpy is enough for their location; mpmath integrates)
    roots = [float(z.real) for z in np.roots(np.asarray(coef, dtype=float)[::-1]) if abs(z.imag) < 1e-9]
    pts = sorted(set([-mp.inf, 0, mp.inf] + [mp.mpf(x) for x in roots]))
    norm = mp.quad(lambda x: abs(h(x)) ** r * dens(x), pts) ** (1 / r)
    ep = mp.quad(lambda x: h(x + s) * dens(x), [-mp.inf, 0, mp.inf])
    return float(r * mp.log(ep / norm)) if ep > 0 else 0.0


RNG = np.random.default_rng(20261123)
LIN_CASES = [(fam, float(RNG.uniform(0.05, 3.0)), float(np.exp(RNG.uniform(np.log(1.15), np.log(12)))))
             for fam in ("laplace", "gaussian") for _ in range(6)]
POLY_CASES = [(fam, float(RNG.uniform(0.1, 2.5)), float(RNG.uniform(1.3, 6.0)), int(RNG.integers(2, 4)))
              for fam in ("laplace", "gaussian") for _ in range(4)]


@pytest.mark.parametrize("family,s,alpha", LIN_CASES)
def test_lin_vs_mpmath(family, s, alpha):
    r = standardized_renyi(family, s, alpha, 1)
    ref = mp_lin(family, mp.mpf(s), alpha)
    assert r["d_hi"] >= ref, "under-report"
    assert r["d_hi"] - ref < 1e-7
    assert r["d_lo"] <= ref + 1e-9
    assert 0.0 <= r["d_lo"] <= r["d_hi"] <= r["unrestricted"]


@pytest.mark.parametrize("family,s,alpha,k", POLY_CASES)
def test_poly_never_below_a_feasible_adversary(family, s, alpha, k):
    r = standardized_renyi(family, s, alpha, k)
    assert 0.0 <= r["d_lo"] <= r["d_hi"] <= r["unrestricted"]
    at_opt = mp_ratio(family, s, alpha, r["coef"])
    assert r["d_hi"] >= at_opt and abs(r["d_hi"] - at_opt) < 1e-7
    rng = np.random.default_rng(int(1e6 * s))
    for _ in range(4):
        c = np.asarray(r["coef"]) * (1 + 0.05 * rng.standard_normal(k + 1))
        assert r["d_hi"] >= mp_ratio(family, s, alpha, c), "a perturbed adversary beats the reported value"
    # the class is monotone: poly_k >= lin
    assert r["d_hi"] >= standardized_renyi(family, s, alpha, 1)["d_lo"]
