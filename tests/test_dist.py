"""DiscreteDist: every validation rule with its exact exception type, and the functionals
against hand-computed values."""
import math
from fractions import Fraction as F

import numpy as np
import pytest

import puffer
from puffer import DiscreteDist, ParameterError, ParameterTypeError


def test_sorts_merges_and_drops_zero_mass():
    d = DiscreteDist([2, 0, 2, 1, 5], [0.25, 0.25, 0.25, 0.25, 0.0])
    assert d.atoms.tolist() == [0.0, 1.0, 2.0]
    assert d.probs.tolist() == [0.25, 0.25, 0.5]
    assert len(d) == 3 and d.dim == 1 and not d.is_exact


def test_arrays_are_read_only():
    d = DiscreteDist([0, 1], [0.5, 0.5])
    with pytest.raises(ValueError):
        d.atoms[0] = 3.0
    with pytest.raises(ValueError):
        d.probs[0] = 1.0


def test_multidimensional_atoms_merge_lexicographic():
    d = DiscreteDist([[1, 0], [0, 1], [1, 0]], [0.2, 0.3, 0.5])
    assert d.dim == 2
    assert d.atoms.tolist() == [[0.0, 1.0], [1.0, 0.0]]
    assert d.probs.tolist() == [0.3, 0.7]
    np.testing.assert_allclose(d.mean(), [0.7, 0.3])


def test_exact_mode_keeps_fractions_over_common_denominator():
    d = DiscreteDist([3, 1, 3], [F(1, 3), F(1, 2), F(1, 6)])
    assert d.is_exact
    assert d.exact_probs == (F(1, 2), F(1, 2))
    assert d.denominator == 2 and d.numerators == (1, 1)
    d2 = DiscreteDist([0, 1, 2], ["1/3", "1/6", "1/2"])
    assert d2.exact_probs == (F(1, 3), F(1, 6), F(1, 2))
    assert d2.denominator == 6 and d2.numerators == (2, 1, 3)


def test_exact_mode_requires_exact_sum_unless_normalize():
    with pytest.raises(ParameterError, match="probs"):
        DiscreteDist([0, 1], [F(1, 3), F(1, 3)])
    d = DiscreteDist([0, 1], [F(1, 3), F(1, 3)], normalize=True)
    assert d.exact_probs == (F(1, 2), F(1, 2))
    # floats in exact mode are taken at their exact binary value: 0.1 + 0.9 != 1 exactly
    with pytest.raises(ParameterError):
        DiscreteDist([0, 1], [0.1, 0.9], exact=True)
    assert DiscreteDist([0, 1], [0.25, 0.75], exact=True).exact_probs == (F(1, 4), F(3, 4))


def test_from_counts_and_samples():
    d = DiscreteDist.from_counts([0, 1, 2], [1, 2, 3])
    assert d.exact_probs == (F(1, 6), F(1, 3), F(1, 2))
    s = DiscreteDist.from_samples([1.0, 1.0, 2.0, 4.0])
    assert s.exact_probs == (F(1, 2), F(1, 4), F(1, 4))
    assert DiscreteDist.point_mass(3.0).atoms.tolist() == [3.0]
    assert DiscreteDist.point_mass([1.0, 2.0]).atoms.tolist() == [[1.0, 2.0]]


def test_sum_tolerance_and_normalize():
    DiscreteDist([0, 1], [0.5, 0.5 + 5e-10])  # within the default 1e-9
    with pytest.raises(ParameterError, match="tol"):
        DiscreteDist([0, 1], [0.5, 0.5 + 2e-9])
    d = DiscreteDist([0, 1], [1.0, 3.0], normalize=True)
    assert d.probs.tolist() == [0.25, 0.75]
    assert puffer.dist.SUM_TOL == 1e-9


@pytest.mark.parametrize(
    "atoms, probs, exc, param",
    [
        ([0.0, np.nan], [0.5, 0.5], ParameterError, "atoms"),
        ([0.0, np.inf], [0.5, 0.5], ParameterError, "atoms"),
        ([0.0, 1.0], [0.5, np.nan], ParameterError, "probs"),
        ([0.0, 1.0], [1.5, -0.5], ParameterError, "probs"),
        ([0.0, 1.0], [np.inf, 0.5], ParameterError, "probs"),
        ([0.0, 1.0, 2.0], [0.5, 0.5], ParameterError, "probs"),
        ([], [], ParameterError, "atoms"),
        ([0.0, 1.0], [0.0, 0.0], ParameterError, "probs"),
        ([[[0.0]]], [1.0], ParameterError, "atoms"),
        (np.zeros((2, 0)), [0.5, 0.5], ParameterError, "atoms"),
        (["a", "b"], [0.5, 0.5], ParameterTypeError, "atoms"),
        ([[0.0, 1.0], [1.0]], [0.5, 0.5], ParameterTypeError, "atoms"),
        ([0.0, 1.0], ["x", "1/2"], ParameterTypeError, "probs"),
        ([0.0, 1.0], [F(-1, 2), F(3, 2)], ParameterError, "probs"),
    ],
)
def test_validation_rules(atoms, probs, exc, param):
    with pytest.raises(exc) as info:
        DiscreteDist(atoms, probs)
    assert info.value.param == param
    assert f"'{param}'" in str(info.value)
    assert isinstance(info.value, puffer.PufferError)


def test_bad_tol():
    with pytest.raises(ParameterError, match="tol"):
        DiscreteDist([0.0], [1.0], tol=-1.0)
    with pytest.raises(ParameterTypeError):
        DiscreteDist([0.0], [1.0], tol="big")


def test_cdf_quantile_mean_var():
    d = DiscreteDist([0, 1, 2], [F(1, 4), F(1, 4), F(1, 2)])
    assert d.cdf(-1) == 0.0 and d.cdf(0) == 0.25 and d.cdf(1.5) == 0.5 and d.cdf(2) == 1.0
    np.testing.assert_array_equal(d.cdf([0, 1, 2]), [0.25, 0.5, 1.0])
    # generalised inverse: inf{x : F(x) >= u}
    assert d.quantile(0.25) == 0.0 and d.quantile(0.2500001) == 1.0
    assert d.quantile(0.5) == 1.0 and d.quantile(1.0) == 2.0 and d.quantile(0.0) == 0.0
    assert d.mean() == 1.25
    assert math.isclose(d.var(), 0.25 * 1.25**2 + 0.25 * 0.25**2 + 0.5 * 0.75**2)
    with pytest.raises(ParameterError, match="'u'"):
        d.quantile(1.5)
    with pytest.raises(ParameterError, match="'x'"):
        d.cdf(np.nan)
    with pytest.raises(ParameterError):
        DiscreteDist([[0, 0]], [1.0]).cdf(0.0)


def test_float_quantile_reaches_top_atom_despite_rounding():
    # cumulative float sums of ten 0.1 masses fall short of 1; quantile(1) must still be the top atom
    d = DiscreteDist(np.arange(10), [0.1] * 10)
    assert d.quantile(1.0) == 9.0


def test_support_diameter_shift_eq_repr_dict():
    d = DiscreteDist([[0, 0], [3, 4]], [0.5, 0.5])
    assert d.support_diameter(2) == 5.0 and d.support_diameter(1) == 7.0
    assert d.support_diameter(np.inf) == 4.0
    e = DiscreteDist([1, 2], [F(1, 3), F(2, 3)])
    assert e.shift(1.0) == DiscreteDist([2, 3], [F(1, 3), F(2, 3)])
    assert "1/3" in repr(e)
    assert DiscreteDist.from_dict(e.to_dict()) == e
    assert hash(e) == hash(DiscreteDist([1, 2], [F(1, 3), F(2, 3)]))
