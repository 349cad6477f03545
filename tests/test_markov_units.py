"""Markov frameworks with real state values: every mechanism reports in the units of the values.

Regression (found when the Markov C++ paths of Kantorovich Thm 2 / DAGWM met real-valued states):
both kernels read the integer grid handed to the core, so states valued (0, 2.5) gave the noise of
states valued (0, 1), 2.5 times too little. Scaling the values by g must scale every distance by
g exactly: Laplace's b (Ding 2022, Thm 2) by g, and DAGWM's epsilon is that of Gaussian noise
sigma / g on the unscaled chain (Pierquin et al. 2024, DAGWM)."""
import pytest

import puffer
from puffer.errors import ParameterError
from puffer.mechanisms import DistributionAwareWasserstein, Kantorovich, Wasserstein
from puffer.noise import Gaussian

TRANS = [[[0.9, 0.1], [0.2, 0.8]], [[0.7, 0.3], [0.4, 0.6]]]


@pytest.mark.parametrize("g", [2.5, 0.5, 3.0])
def test_thm2_scales_with_the_state_values(g):
    base = Kantorovich(puffer.models.markov_chain(TRANS, T=12), eps=1.0, method="thm2")
    scaled = Kantorovich(puffer.models.markov_chain(TRANS, T=12, values=[0.0, g]), eps=1.0, method="thm2")
    b0, b1 = base.noise.b, scaled.noise.b
    assert b1 >= g * b0 * (1 - 1e-9)          # never less noise than the exact scaling
    assert b1 <= g * b0 * (1 + 1e-6)


def test_thm1_and_wasserstein_scale_too():
    fw = puffer.models.markov_chain(TRANS, T=12, values=[0.0, 2.5])
    w = Wasserstein(fw, eps=1.0).noise.b
    w0 = Wasserstein(puffer.models.markov_chain(TRANS, T=12), eps=1.0).noise.b
    assert w >= 2.5 * w0 * (1 - 1e-15) and w <= 2.5 * w0 * (1 + 1e-12)   # both rounded up once


@pytest.mark.parametrize("alpha", [2.0, 8.0])
def test_dagwm_scales_with_the_state_values(alpha):
    g, sigma = 2.5, 1.3
    m0 = DistributionAwareWasserstein(puffer.models.markov_chain(TRANS, T=10), Gaussian(sigma))
    m1 = DistributionAwareWasserstein(puffer.models.markov_chain(TRANS, T=10, values=[0.0, g]), Gaussian(g * sigma))
    e0, e1 = m0.epsilon(alpha), m1.epsilon(alpha)
    assert e1 >= e0 * (1 - 1e-9) and e1 <= e0 * (1 + 1e-6)


def test_values_off_their_grid_are_refused_by_law_based_mechanisms():
    """0.1 / 0.25 / 0.4 are not exactly on a common binary grid: the laws would be off by ~1e-17
    with no margin, so the law-based mechanisms refuse (w_inf-based ones add the margin)."""
    fw = puffer.models.markov_chain([[[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]], T=6,
                                    values=[0.1, 0.25, 0.4])
    assert fw.grid_error > 0
    assert "values=[0.1, 0.25, 0.4]" in repr(fw)   # a repr computes nothing and never raises
    with pytest.raises(ParameterError, match="values"):
        Kantorovich(fw, eps=1.0, method="thm2")
    with pytest.raises(ParameterError, match="values"):
        DistributionAwareWasserstein(fw, Gaussian(1.0))
    assert Wasserstein(fw, eps=1.0).noise.b > 0


def test_rounded_atoms_are_refused_too():
    """0.1 / 0.2 / 0.4 lie exactly on the grid 0.1 n (as doubles), but sums such as 6 * 0.1 + 0.1 s
    round: the law-based mechanisms refuse rather than work on rounded atoms; w_inf is exact."""
    fw = puffer.models.markov_chain([[[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]], T=6,
                                    values=[0.1, 0.2, 0.4])
    assert fw.grid_error == 0
    with pytest.raises(ParameterError, match="exact doubles"):
        Kantorovich(fw, eps=1.0, method="thm2")
    assert Wasserstein(fw, eps=1.0).noise.b > 0
