"""Issue 9 items 1 and 10: secure mode's lattice must not depend on the data, and noise scales
below what the exact samplers can hold are clear errors.

Before the fix the lattice was coarsened from max|x|: [2**42 - 0.5] was released on 2^-10 Z
(odd multiples of 2^-10 in about half the outputs) and [2**42 + 0.5] on 2^-8 Z (never), so one
release told the two neighbours apart."""
import numpy as np
import pytest

import puffer
from puffer.errors import ParameterError
from puffer.noise import Gaussian, Laplace
from puffer.secure import secure_plan

NEIGHBOURS = [(2.0**42 - 0.5, 2.0**42 + 0.5), (2.0**20 - 0.25, 2.0**20 + 0.25), (-(2.0**30) + 0.5, -(2.0**30) - 0.5)]


@pytest.mark.parametrize("x0,x1", NEIGHBOURS)
@pytest.mark.parametrize("noise", [Laplace(1.0), Gaussian(1.0)])
def test_neighbours_across_a_power_of_two_share_the_output_set(x0, x1, noise):
    bound = 2.0**43
    outs = []
    for x in (x0, x1):
        y, plan = puffer.secure.secure_add_noise(np.full(4000, x), noise, sensitivity=1.0, bound=bound,
                                                 norm="coordinate", return_plan=True)
        outs.append((y, plan))
    (y0, p0), (y1, p1) = outs
    assert p0 == p1                      # the same lattice, whatever the value
    g = p0.granularity
    for y in (y0, y1):
        k = y / g
        assert np.all(k == np.round(k))  # on the lattice
        # both residues mod 2g occur for both inputs (noise of scale >= 2^7 lattice units:
        # P(all 4000 even) ~ 2^-4000, no false alarm)
        assert set(np.mod(k, 2).astype(int)) == {0, 1}


def test_inputs_beyond_the_declared_bound_are_refused_not_clipped():
    with pytest.raises(ParameterError, match="bound"):
        puffer.add_noise(np.array([10.0, 1e6]), Laplace(1.0), secure=True, sensitivity=1.0, bound=100.0)
    # no bound: inputs that do not fit the sensitivity's lattice exactly are refused, with a hint
    with pytest.raises(ParameterError, match="bound="):
        puffer.add_noise(np.array([2.0**42 + 0.5]), Laplace(1.0), secure=True, sensitivity=1.0)
    with pytest.raises(ParameterError, match="bound"):
        puffer.add_noise(np.array([1.0]), Laplace(1.0), bound=10.0)     # only with secure=True


def test_plan_depends_only_on_declared_quantities():
    a = secure_plan(Laplace(1.0), 3, sensitivity=1.0, bound=2.0**43)
    b = secure_plan(Laplace(1.0), 3, sensitivity=1.0, bound=2.0**43)
    assert a == b and a.granularity == 2.0**-8   # 2^44 / 2^52: every |x| <= bound on the lattice


@pytest.mark.parametrize("b", [0.05, 0.3, 1e-9])
def test_laplace_below_one_lattice_unit_is_a_clear_error_or_works(b):
    """b = 0.05 with granularity 1 raised a pybind11 TypeError (den >= 2^64), b = 0.3 an
    internal 'numerator and denominator < 2^62' error."""
    try:
        y = puffer.add_noise(np.array([1.0, 2.0]), Laplace(b), secure=True, sensitivity=1.0, granularity=1.0)
    except ParameterError as exc:
        assert "granularity" in str(exc)
    else:
        assert np.all(y == np.round(y))


def test_discrete_laplace_with_a_wide_fraction_is_rounded_up_not_a_crash():
    """A Fraction scale whose numerator or denominator needs more than 62 bits is rounded up to
    num/2^m (found by mypy: the call lacked an argument and raised a bare TypeError)."""
    from fractions import Fraction

    from puffer.secure import _round_up_dyadic, discrete_laplace

    sc = Fraction(2**63 + 1, 2**63)
    num, den = _round_up_dyadic(sc, 62, "scale")
    assert Fraction(num, den) >= sc and Fraction(num, den) - sc < Fraction(1, 2**60)
    z = discrete_laplace(sc, 1000)
    assert z.dtype.kind == "i" and z.shape == (1000,)
    with pytest.raises(ParameterError, match="scale"):
        discrete_laplace(Fraction(2**70 + 1, 3), 5)   # beyond 2^62 lattice units: refused, named
