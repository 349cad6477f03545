"""Property-based fuzzing of the public API (hypothesis, bounded time).

Random valid and invalid arguments go to every public entry point. A call may succeed or raise
a puffer error (``PufferError``); anything else — a KeyError, a numpy broadcast error, a
ZeroDivisionError, an OverflowError, a pybind11 TypeError — fails the test, and so does a
returned guarantee or noise scale that is NaN or negative. Budget: a fixed number of examples
per entry point (about a minute in total on 2 cores).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import puffer
from puffer import PufferError
from puffer.noise import Cauchy, Gaussian, GenCauchy, GenGaussian, Laplace, Logistic, StudentT

SETTINGS = settings(max_examples=80, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))

# -- argument pools ------------------------------------------------------------------------------
special = st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-300, 5e-324, 1e300, 1e308, math.inf, -math.inf,
                           math.nan, 2.0 ** 63, 2 ** 63, -(2 ** 63), 2 ** 64, 10 ** 400, True, False])
scalars = st.one_of(special, st.floats(allow_nan=True, allow_infinity=True), st.integers(-10 ** 20, 10 ** 20),
                    st.fractions(max_denominator=10 ** 6))
junk = st.one_of(st.none(), st.text(max_size=5), st.just(1 + 2j), st.just([1, [2]]), st.just({"a": 1}),
                 st.just(object()), st.just(np.datetime64("2020-01-01")), st.just(Gaussian), st.just("gaussian"),
                 st.just(b"x"), st.just(Fraction(1, 3)))
anything = st.one_of(scalars, junk)
arrays = st.one_of(st.lists(scalars, max_size=6), st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=6),
                   st.just(np.array([1.0 + 1j])), st.just(np.zeros((2, 0))), st.just(np.array([[1.0, 2.0]])),
                   st.just(np.array(["a"])), st.just(np.array([1, 2], dtype=np.int8)), junk)
prob_vectors = st.one_of(
    st.lists(st.floats(0, 1), min_size=1, max_size=5).map(lambda v: [x / sum(v) for x in v] if sum(v) > 0 else v),
    arrays)
noises = st.one_of(st.builds(Gaussian, st.floats(0.01, 100)), st.builds(Laplace, st.floats(0.01, 100)),
                   st.builds(Cauchy, st.floats(0.01, 100)), st.builds(Logistic, st.floats(0.01, 100)),
                   st.builds(StudentT, st.floats(0.5, 50), st.floats(0.05, 50)),
                   st.builds(GenCauchy, st.floats(0.05, 50), st.floats(1.05, 10)),
                   st.builds(GenGaussian, st.floats(1.0, 4), st.floats(0.05, 50)), junk)


def _check_result(r):
    """No NaN or negative eps / delta / scale may come back."""
    for attr in ("eps", "delta", "scale", "value"):
        v = getattr(r, attr, None)
        if isinstance(v, float):
            assert not math.isnan(v) and v >= 0, (attr, v, r)
    if isinstance(r, float) and not isinstance(r, bool):
        assert not math.isnan(r), r
    g = getattr(r, "guarantee", None)
    if g is not None:
        _check_result(g)
    n = getattr(r, "noise", None)
    if n is not None and hasattr(n, "scale"):
        _check_result(n)


def call(f, *args, **kw):
    try:
        r = f(*args, **kw)
    except PufferError:
        return None
    _check_result(r)
    return r


# -- guarantees and loading -----------------------------------------------------------------------
@SETTINGS
@given(anything, anything, anything)
def test_fuzz_guarantee_constructors(a, b, c):
    call(puffer.PP, a, b)
    call(puffer.RPP, a, b)
    call(puffer.ApproxRPP, a, b, c)
    g = call(puffer.RPP, 2.0, a)
    if g is not None:
        call(g.to_pp, b)
    call(puffer.RPPCurve, (2.0, 3.0), (a, b))


json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.floats(), st.integers(), st.text(max_size=4)),
                           lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.text(max_size=6), c, max_size=3)),
                           max_leaves=8)


@SETTINGS
@given(st.sampled_from(["PP", "RPP", "ApproxRPP", "RPPCurve", "x", None]),
       st.dictionaries(st.sampled_from(["eps", "delta", "alpha", "alphas", "provenance", "epsilon"]), json_values,
                       max_size=4))
def test_fuzz_guarantee_loader(t, d):
    doc = dict(d)
    if t is not None:
        doc["type"] = t
    call(puffer.guarantee_from_dict, doc)
    call(puffer.PP.from_dict, doc)
    call(puffer.guarantee_from_json, str(doc))


# -- laws and transport -------------------------------------------------------------------------------
@SETTINGS
@given(arrays, prob_vectors, anything, st.one_of(anything, arrays))
def test_fuzz_discrete_dist(atoms, probs, exact, normalize):
    call(puffer.DiscreteDist, atoms, probs)
    call(puffer.DiscreteDist, atoms, probs, exact=exact)
    call(puffer.DiscreteDist, atoms, probs, normalize=normalize)
    call(puffer.DiscreteDist, [1.0, 2.0], [0.5, 0.5], normalize=normalize, exact=exact)


@SETTINGS
@given(st.one_of(anything, arrays, json_values,
                 st.fixed_dictionaries({"atoms": st.one_of(arrays, anything), "probs": st.one_of(prob_vectors, anything)},
                                       optional={"x": anything})))
def test_fuzz_discrete_dist_from_dict(d):
    # a number, a string, a list or a dict with missing / unknown keys: puffer errors only
    call(puffer.DiscreteDist.from_dict, d)


@SETTINGS
@given(prob_vectors, prob_vectors, anything, anything)
def test_fuzz_transport(p, q, x, y):
    from puffer import transport as T
    P = call(puffer.DiscreteDist, list(range(len(p))) if isinstance(p, list) else p, p)
    Q = call(puffer.DiscreteDist, list(range(len(q))) if isinstance(q, list) else q, q)
    if P is None or Q is None:
        P, Q = puffer.DiscreteDist([0.0, 1.0], [0.5, 0.5]), puffer.DiscreteDist([0.0], [1.0])
    call(T.w_inf, P, Q)
    call(T.w_inf, P, Q, norm=x)
    call(T.w_p, P, Q, x)
    call(T.near_radius, P, Q, x)
    call(T.w_inf_sorted, P.atoms, P.probs, Q.atoms, Q.probs, rtol=x)
    call(T.w_inf_sorted, x, y, Q.atoms, Q.probs)
    call(T.quantile_coupling, P, x)


# -- noise families -------------------------------------------------------------------------------------
@SETTINGS
@given(noises, anything, anything, anything)
def test_fuzz_noise(noise, a, b, c):
    if not isinstance(noise, puffer.noise.NoiseFamily):
        call(Gaussian, noise)
        return
    call(noise.renyi_shift, a, b)
    call(noise.renyi_shift, np.array([2.0, 3.0]), np.array([1.0, 2.0, 3.0]))
    call(noise.R, a, b)
    call(noise.epsilon, a, b)
    call(noise.calibrate, alpha=a, eps=b, sensitivity=c)
    call(noise.calibrate, eps=a, delta=b, sensitivity=c)


# -- samplers -------------------------------------------------------------------------------------------
@SETTINGS
@given(noises, arrays, anything, anything)
def test_fuzz_sampling(noise, values, rng, size):
    call(puffer.sample, noise, size if not isinstance(size, int) or abs(size) < 10 ** 4 else 3, rng=rng)
    call(puffer.add_noise, values, noise, rng=rng)
    call(puffer.add_noise, values, noise, rng=1, threads=size)
    call(puffer.add_noise, values, noise, secure=True, sensitivity=size)
    call(puffer.sampling.Stream, rng)


extreme = st.sampled_from([5e-324, 1e-300, 1e-5, 1.0, 1e150, 1e300, 1e308, 1.7976931348623157e308])
lattice = st.one_of(st.none(), st.sampled_from([2.0 ** -1074, 2.0 ** -1000, 2.0 ** -10, 1.0, 2.0 ** 900, 2.0 ** 1023]))


@SETTINGS
@given(st.sampled_from(["laplace", "gaussian"]), extreme, st.one_of(extreme, scalars), lattice,
       st.one_of(st.none(), extreme), st.sampled_from([None, "l1", "l2", "coordinate"]),
       st.one_of(arrays, st.just(np.array([1e300, -1e308]))))
def test_fuzz_secure_extremes(kind, scale, sensitivity, granularity, bound, norm, values):
    # b or sigma up to the double range, subnormal sensitivities, lattice steps at the exponent
    # limits: the exact rationals must never reach float() unguarded (OverflowError, log2(0))
    noise = (kind, {"b" if kind == "laplace" else "sigma": scale})
    call(puffer.add_noise, values, noise, secure=True, sensitivity=sensitivity, granularity=granularity,
         bound=bound, norm=norm)
    call(puffer.secure.secure_plan, noise, 10, sensitivity=sensitivity, granularity=granularity, bound=bound,
         norm=norm)


# -- frameworks, models and mechanisms ---------------------------------------------------------------------
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(anything, anything, anything)
def test_fuzz_models(a, b, c):
    call(puffer.models.correlated_pair, a, b)
    call(puffer.models.independent_users, [a, b])
    call(puffer.models.markov_chain, [[a, b], [b, a]], 3)
    call(puffer.models.markov_chain, [[0.9, 0.1], [0.2, 0.8]], a, init=b)
    call(puffer.models.stationary_distribution, [[a, b], [c, a]])


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(noises, anything, anything, anything)
def test_fuzz_mechanisms(noise, eps, delta, alpha):
    fw = puffer.models.correlated_pair()
    M = puffer.mechanisms
    call(M.Wasserstein, fw, eps=eps)
    call(M.GeneralWasserstein, fw, noise, alpha=alpha, eps=eps)
    call(M.GeneralWasserstein, fw, noise, eps=eps, delta=delta)
    call(M.ApproximateWasserstein, fw, noise, delta, eps=eps)
    call(M.DistributionAwareWasserstein, fw, noise)
    call(M.Kantorovich, fw, eps=eps, method=alpha)
    call(M.KantorovichGaussian, fw, eps=eps, delta=delta)
    m = call(M.Wasserstein, fw, eps=1.0)
    call(m.release, delta, rng=alpha)


@SETTINGS
@given(json_values)
def test_fuzz_config(doc):
    from puffer.config import validate_config
    call(validate_config, doc)
    call(validate_config, {"model": {"kind": "correlated_pair"}, "target": doc})
    call(validate_config, {"model": doc, "target": {"eps": 1.0}})


@pytest.mark.parametrize("n", [2 ** 63, 2 ** 64, -1])
def test_huge_sizes_are_puffer_errors(n):
    for f in (lambda: puffer.sample(Laplace(1.0), n, rng=1),
              lambda: puffer.sample(Laplace(1.0), (n, 2), rng=1)):
        with pytest.raises(PufferError):
            f()
