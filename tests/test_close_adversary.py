"""Close adversaries (Pierquin et al. 2024, App. A.4: Thms A.3-A.5, Cor A.1) and the Cauchy
mechanism's eps (Cor 4.1 / Lemma D.1), against closed forms computed independently here (exact
fractions; the Gaussian R_alpha(z) = alpha z^2 / (2 sigma^2); the Cauchy R_2(z) = log(1 + z^2/(2 gamma^2)))."""
from __future__ import annotations

import math
from fractions import Fraction as F

import pytest

import puffer
from puffer.mechanisms.cauchy import cauchy_epsilon
from puffer.mechanisms.close_adversary import close_adversary_additive, close_adversary_pp, close_adversary_rpp
from puffer.noise import Gaussian


def above(got: float, want: float, rel: float = 1e-9) -> None:
    assert want <= got <= want * (1 + rel) + 1e-15, (got, want)


def test_thm_a3_pp_adds_twice_the_distance():
    above(close_adversary_pp(1.0, 0.05).eps, 1.1)
    assert 0.0 <= close_adversary_pp(0.0, 0.0).eps < 1e-300       # rounded up: never below the exact 0
    with pytest.raises(puffer.ParameterError, match="d_inf"):
        close_adversary_pp(1.0, -0.1)


def test_thm_a4_rpp_formula_exact_fractions():
    # alpha = 2, p = q = r = 3: (1 + 1/3) eps + (1 + 2/3) D1 + D2 with eps = 1/2, D1 = 1/10, D2 = 1/5
    want = F(4, 3) * F(1, 2) + F(5, 3) * F(1, 10) + F(1, 5)
    g = close_adversary_rpp(2.0, 0.5, 0.1, 0.2, hp=3, hq=3, hr=3)
    assert g.alpha == 2.0
    above(g.eps, float(want))
    with pytest.raises(puffer.ParameterError, match="hr"):
        close_adversary_rpp(2.0, 0.5, 0.1, 0.2, hp=2, hq=2, hr=2)      # 1/p + 1/q + 1/r != 1


def test_thm_a5_cor_a1_gaussian_value():
    # Cor A.1: sigma^2 = 2.5, Delta_G = 1, Delta_theta' = 0.1, alpha = 2, p = q = r = 3.
    sigma2 = 2.5
    R = lambda o, z: o * z * z / (2 * sigma2)
    inner = 3 * (2 - F(1, 3))                                  # q (alpha - 1/p) = 5
    eps = R(float(inner), 1.0)                                  # = 1: the mechanism's eps on Theta at order 5
    K = (1 + (F(1, 3) + F(1, 3)) / 1) * F(6, 1) * F(1, 100) / (2 * F(5, 2)) + F(4) * F(1, 100) / (2 * F(5, 2))
    want = F(4, 3) * F(1) + K                                   # = 1.36133...
    assert abs(float(K) - 0.028) < 1e-15
    g = Gaussian(math.sqrt(sigma2))
    r = close_adversary_additive(2.0, lambda o: float(g.R(o, 1.0)), lambda o, z: float(g.R(o, z)), 0.1,
                                 hp=3, hq=3, hr=3)
    above(r.eps, float(want), rel=1e-8)
    assert abs(eps - 1.0) < 1e-15
    assert "Thm A.5" in r.provenance.theorem


def test_mechanism_close_adversary_method_uses_thm_a3():
    fw = puffer.models.markov_chain([[[.9, .1], [.2, .8]]], T=8)
    m = puffer.mechanisms.Wasserstein(fw, eps=1.0)
    g = m.close_adversary(d_inf=0.05)
    above(g.eps, 1.1)
    assert "Thm A.3" in g.provenance.theorem


def test_cauchy_epsilon_cor_4_1_closed_forms():
    # d = 1, k = 2 (Cauchy), gamma = 1, alpha = 2: R_2(z) = log(1 + z^2 / 2): z = 1 -> log 1.5
    above(cauchy_epsilon(2.0, 1.0, gamma=1.0), math.log(1.5))
    above(cauchy_epsilon(2.0, 2.0, gamma=1.0), math.log(3.0))
    # d = 3, shift (1, 1, 1) (W_2 = sqrt 3): d log(1 + 3 / (2 d)) = 3 log 1.5; the printed d^2 form is smaller (unsafe)
    above(cauchy_epsilon(2.0, math.sqrt(3.0), gamma=1.0, d=3), 3 * math.log(1.5))
    assert cauchy_epsilon(2.0, math.sqrt(3.0), gamma=1.0, d=3, paper_variant=True) < 3 * math.log(1.5)
