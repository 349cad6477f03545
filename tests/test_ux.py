"""Issue 22 section 4: answers a new user found silent or misleading. Each test failed before
its fix (the issue's reproduction)."""
from __future__ import annotations

import pytest

import puffer
from puffer.errors import ParameterError


def test_markov_w_inf_refuses_a_norm_like_the_base_class():
    fw = puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=5)
    assert fw.w_inf().value == 5.0
    for norm in (1, 2, 3, float("inf")):
        with pytest.raises(ParameterError, match="norm"):
            fw.w_inf(norm=norm)
    # the base class gives the same answer
    with pytest.raises(ParameterError, match="1-D query"):
        puffer.models.correlated_pair().w_inf(norm=3)


def test_general_wasserstein_never_ignores_a_given_scale():
    from puffer.mechanisms import ApproximateWasserstein, GeneralWasserstein
    from puffer.noise import Gaussian, GenGaussian, Laplace

    fw = puffer.models.correlated_pair()           # Delta_G = 2
    # a scale and a target: the target would replace the scale silently -> refused, naming both paths
    with pytest.raises(ParameterError, match=r"5\.0 would be ignored.*leave out eps"):
        GeneralWasserstein(fw, Gaussian(5.0), eps=1.0, delta=1e-5)
    with pytest.raises(ParameterError, match="would be ignored"):
        GeneralWasserstein(fw, Gaussian(5.0), alpha=2.0, eps=1.0)
    with pytest.raises(ParameterError, match="would be ignored"):
        ApproximateWasserstein(fw, Laplace(3.0), 1e-3, eps=1.0)
    # the "given sigma, what eps" path: R_2 = alpha Delta^2 / (2 sigma^2) = 2 * 4 / 50, never below
    g = GeneralWasserstein(fw, Gaussian(5.0))
    assert g.noise.scale == 5.0
    assert 0.16 <= g.guarantee.at(2.0).eps <= 0.16 * (1 + 1e-12)
    # families (class, name, unit instance with shape parameters) still calibrate
    for fam in (Gaussian, "gaussian", Gaussian(1.0)):
        m = GeneralWasserstein(fw, fam, alpha=2.0, eps=1.0)
        assert m.noise.scale == pytest.approx(2.0, rel=1e-9)
    m = GeneralWasserstein(fw, GenGaussian(1.5, 1.0), alpha=2.0, eps=1.0)
    assert m.noise.beta == 1.5 and m.epsilon(2.0) <= 1.0
