"""Regression tests for silent wrong answers: each of these used to return a plausible value."""
import subprocess
import sys

import numpy as np
import pytest

import puffer
from puffer import ParameterError, ParameterTypeError
from puffer.mechanisms import GeneralWasserstein, Wasserstein
from puffer.noise import Gaussian, Laplace


def test_w_inf_norm_on_a_1d_framework_is_an_error():
    fw = puffer.models.correlated_pair()
    with pytest.raises(ParameterError, match="norm"):
        fw.w_inf(norm=3)


def _zero_sensitivity_mechanism():
    P = puffer.DiscreteDist([0.0, 1.0], [0.5, 0.5])
    fw = puffer.Framework.from_conditionals({"t": {"a": P, "b": P}}, [("a", "b")])
    return Wasserstein(fw, eps=1.0)


@pytest.mark.parametrize("bad", [[1.0, np.nan], [np.inf], [1.0 + 2.0j], np.array(["2020-01-01"], dtype="datetime64[D]")])
def test_zero_sensitivity_release_checks_values(bad):
    m = _zero_sensitivity_mechanism()
    assert m.noise is None
    with pytest.raises((ParameterError, ParameterTypeError)):
        m.release(bad, allow_unnoised=True)


def test_complex_values_are_refused_by_release():
    m = Wasserstein(puffer.models.correlated_pair(), eps=1.0)
    with pytest.raises(ParameterTypeError, match="complex"):
        m.release(np.array([1.0 + 1.0j]), rng=1)


@pytest.mark.parametrize("noise", [Gaussian, "gaussian", "Gaussian", Gaussian(1.0)])
def test_noise_as_class_or_name_where_a_scale_is_calibrated(noise):
    fw = puffer.models.correlated_pair()
    m = GeneralWasserstein(fw, noise, alpha=2.0, eps=1.0)
    assert m.noise == GeneralWasserstein(fw, Gaussian(1.0), alpha=2.0, eps=1.0).noise


@pytest.mark.parametrize("noise, exc", [("gausian", ParameterError), (3, ParameterTypeError),
                                         (puffer.noise.StudentT, ParameterError)])
def test_bad_noise_names_are_clear(noise, exc):
    with pytest.raises(exc, match="noise"):
        GeneralWasserstein(puffer.models.correlated_pair(), noise, alpha=2.0, eps=1.0)


def test_noise_class_without_target_is_refused():
    with pytest.raises(ParameterTypeError, match="noise"):
        GeneralWasserstein(puffer.models.correlated_pair(), Gaussian)


def test_every_mechanism_has_the_common_interface():
    fw = puffer.models.correlated_pair()
    M = puffer.mechanisms
    ms = [M.Wasserstein(fw, eps=1.0), M.GeneralWasserstein(fw, Gaussian, eps=1.0, delta=1e-5),
          M.ApproximateWasserstein(fw, Laplace, 1e-3, eps=1.0), M.DistributionAwareWasserstein(fw, Laplace(2.0)),
          M.Kantorovich(fw, eps=1.0, method="thm2"), M.KantorovichGaussian(fw, eps=1.0, delta=1e-5)]
    for m in ms:
        assert set(m.target) == {"eps", "delta", "alpha"}
        d = m.to_dict()
        assert d["mechanism"] == type(m).__name__ and d["refs"]
        g = puffer.guarantee_from_dict(d["guarantee"])
        assert g == m.guarantee and g.provenance.refs == m.refs
        out = m.release([1.0, 2.0], rng=3)
        assert out.shape == (2,) and np.isfinite(out).all()


def test_import_is_lazy():
    """`import puffer` + add_noise must not load scipy (Spark / Dask workers pay it per process)."""
    code = ("import sys, puffer; puffer.add_noise([1.0], puffer.noise.Laplace(1.0), rng=1);"
            "print('scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_one_version_string():
    from importlib.metadata import version
    assert version("puffer") == puffer.__version__


def test_secure_mode_refuses_complex_values():
    with pytest.raises(ParameterTypeError, match="complex"):
        puffer.add_noise(np.array([1.0 + 1.0j]), Laplace(1.0), secure=True, sensitivity=1.0)


# ---------------------------------------------------------------- issue 10: frameworks are immutable
def test_framework_public_attributes_cannot_be_reassigned():
    """Guards: models used to write group_sensitivity/_sprob after construction, and users could
    change a framework a guarantee was computed from."""
    from puffer.models import correlated_pair, independent_users, markov_chain

    for fw in (correlated_pair(), independent_users([0.3, 0.6]), markov_chain([[0.9, 0.1], [0.2, 0.8]], T=3)):
        for attr in ("group_sensitivity", "group_note", "name", "pairs", "secrets"):
            with pytest.raises(AttributeError):
                setattr(fw, attr, 1.0)
            with pytest.raises(AttributeError):
                setattr(fw, attr + "_typo", 1.0)
    assert correlated_pair().group_sensitivity == 2.0
    assert markov_chain([[0.9, 0.1], [0.2, 0.8]], T=3).group_sensitivity == 3.0


def test_framework_group_sensitivity_is_validated():
    from puffer.framework import Framework

    with pytest.raises(puffer.errors.ParameterError, match="group_sensitivity"):
        Framework({"a": lambda x: x == 0, "b": lambda x: x == 1}, "all", {"t": ([0, 1], [0.5, 0.5])},
                  query=float, group_sensitivity=-1.0)


def test_secret_probability_of_unknown_labels_is_an_error():
    """Guards: secret_probability(0, 'nope') returned 0.0, a plausible wrong answer."""
    from puffer.models import independent_users

    fw = independent_users([0.3, 0.6])
    assert fw.secret_probability("p", "S1=1") == pytest.approx(0.6)
    with pytest.raises(puffer.errors.ParameterError, match="secret"):
        fw.secret_probability("p", "nope")
    with pytest.raises(puffer.errors.ParameterError, match="theta"):
        fw.secret_probability(0, "S1=1")


def test_joint_counts_with_one_secret_is_an_error():
    """Guards: a one-row joint-count table gave a framework with no pairs (nothing protected)."""
    from puffer.framework import Framework

    with pytest.raises(puffer.errors.ParameterError, match="at least two secrets"):
        Framework.from_joint_counts([[1, 2]], ["a"], [0, 1])
    with pytest.raises(puffer.errors.ParameterError, match="at least one record"):
        Framework.from_joint_counts([[0, 0], [0, 0]], ["a", "b"], [0, 1])
    fw = Framework.from_joint_counts([[1, 2], [3, 4]], ["a", "b"], [0, 1])
    assert fw.secret_probability("empirical", "a") == pytest.approx(0.3)


def test_stream_position_is_validated():
    """Guards: a negative Stream.position surfaced as a pybind11 signature dump at draw time."""
    from puffer.sampling import Stream

    s = Stream(1)
    for bad in (-1, 2 ** 64, 1.5):
        with pytest.raises((puffer.errors.ParameterError, puffer.errors.ParameterTypeError), match="position"):
            s.position = bad
    s.position = 5
    assert s.position == 5


def test_mechanism_without_framework_serialises():
    """Guards: CauchyMechanism calibrated from a sensitivity (no framework) crashed in to_dict()
    with AttributeError (found by removing the module from mypy's ignore list)."""
    from puffer.mechanisms import CauchyMechanism

    m = CauchyMechanism(alpha=2.0, eps=1.0, sensitivity=1.0)
    d = m.to_dict()
    assert d["framework"] is None and d["mechanism"] == "CauchyMechanism"
