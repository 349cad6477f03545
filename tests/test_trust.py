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
        m.release(bad)


def test_complex_values_are_refused_by_release():
    m = Wasserstein(puffer.models.correlated_pair(), eps=1.0)
    with pytest.raises(ParameterTypeError, match="complex"):
        m.release(np.array([1.0 + 1.0j]), rng=1)


@pytest.mark.parametrize("noise", [Gaussian, "gaussian", "Gaussian", Gaussian(7.0)])
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
