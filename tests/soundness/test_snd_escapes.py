"""Issue 10 fuzz-found escapes in the kernels' facade: each is a puffer error now (as a class)."""
import math

import numpy as np
import pytest

import puffer
from puffer.dist import DiscreteDist
from puffer.errors import ParameterError, PufferError
from puffer.noise import Cauchy, Gaussian, Laplace, StudentT
from puffer.sampling import Stream


@pytest.mark.parametrize("eps", [1e17, 1e300, 2.0**60])
def test_calibrate_delta_huge_eps_no_zero_division(eps):
    # alpha_min - 1 = log(1/delta)/eps rounded to 0 and divided by it
    for fam in (Laplace(1.0), Gaussian(1.0)):
        try:
            n = fam.calibrate(eps=eps, delta=0.5, sensitivity=1.0)
        except PufferError:
            continue
        assert n.scale > 0 and math.isfinite(n.scale)


@pytest.mark.parametrize("fam", [Laplace(1.0), Gaussian(1.0), Cauchy(1.0), Laplace(1.0).iid(2)])
def test_broadcast_errors_are_puffer_errors(fam):
    v = np.ones((3, 2)) if hasattr(fam, "d") else np.ones(3)
    with pytest.raises(ParameterError, match="broadcast"):
        fam.renyi_shift(np.full(4, 2.0), v)
    with pytest.raises(ParameterError, match="broadcast"):
        fam.R(np.full(4, 2.0), np.ones(3))


@pytest.mark.parametrize("exact", [np.array([1, 0]), "yes", 1, [True]])
def test_discrete_dist_exact_must_be_bool(exact):
    with pytest.raises(PufferError, match="exact"):
        DiscreteDist([0, 1], [0.5, 0.5], exact=exact)


@pytest.mark.parametrize("size", [2**63, 2**64 + 1, (2**62, 4), (2**40, 2**40), 10**30])
def test_huge_sizes(size):
    with pytest.raises(ParameterError, match="size"):
        puffer.sample(Laplace(1.0), size, rng=1)
    with pytest.raises(ParameterError, match="size"):
        puffer.sampling.draw("uniform", None, size, rng=1)


@pytest.mark.parametrize("pos", [-1, -5, 2**64, 1.5, "3"])
def test_stream_position_validated(pos):
    s = Stream(1)
    with pytest.raises(PufferError, match="position"):
        s.position = pos
    assert s.position == 0
    puffer.sample(Laplace(1.0), 3, rng=s)
    assert s.position == 3


def test_threads_capped_at_documented_maximum():
    assert puffer.sampling.MAX_THREADS == 256
    with pytest.raises(ParameterError, match="threads"):
        puffer.sample(Laplace(1.0), 10, rng=1, threads=257)
    with pytest.raises(ParameterError, match="threads"):
        puffer.transport.w_inf_batch([0.0], [1.0], [0, 1], [1.0], [1.0], [0, 1], threads=1000)
    # the C++ pool refuses too (no silent clamp behind any binding)
    with pytest.raises(ParameterError, match="threads"):
        puffer._core.sampling.fill_f64(2, 1.0, 0.0, 1, 2, 3, 0, np.empty(10), None, 300)
    x = puffer.sample(Laplace(1.0), 100_000, rng=4, threads=256)
    assert np.array_equal(x, puffer.sample(Laplace(1.0), 100_000, rng=4, threads=1))


@pytest.mark.parametrize("nu", [1e-6, 1e-3, 0.005, 0.05, 0.1])
def test_student_sampler_refuses_parameters_beyond_the_float_range(nu):
    # item 6: nu <= 0.005 gave NaN and exact zeros (values that received no noise)
    with pytest.raises(ParameterError, match="nu"):
        puffer.sample(StudentT(nu, 1.0), 10, rng=5)
    with pytest.raises(ParameterError, match="'k'"):
        puffer.sampling.draw("gen_cauchy", {"gamma": 1.0, "k": 1.0 + nu}, 10, rng=5)


@pytest.mark.parametrize("nu,scale", [(0.11, 1.0), (0.2, 1.0), (0.5, 1e-300), (1.0, 1e300), (3.0, 1.0)])
def test_student_sampler_accepted_range_is_finite_and_nonzero(nu, scale):
    for kind, params in (("student_t", {"nu": nu, "scale": scale}), ("gen_cauchy", {"gamma": scale, "k": 1.0 + nu})):
        try:
            x = puffer.sampling.draw(kind, params, 200_000, rng=5)
        except ParameterError:
            # refused only because scale * 2^(105/nu) leaves the float range
            assert math.log2(scale) + 105.0 / nu > 1000
            continue
        assert np.isfinite(x).all()
        assert (x != 0).all()
