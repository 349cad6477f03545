"""Issue 9 acceptance: a randomized soundness test of the Renyi shift divergences of every noise
family against mpmath at extreme parameters (fixed seed, bounded time), zero under-reports.

The oracle integrates the definition at 50 digits (tests/renyi_mpmath_refs.py, independent of
the folded form the C++ kernel integrates); Gaussian and Laplace use their closed forms in
mpmath. Parameters are drawn log-uniformly over alpha in [1 + 1e-3, 1e3], standardized shifts
in [1e-3, 1e2] and extreme shapes (Student-t nu up to 1e8 -- where log((1+A)(1+B)) once lost
k eps / 4 and under-reported by 2e-12 -- and down to 0.05; generalized Cauchy k down to 1.05;
generalized Gaussian beta in [1, 8]). Every puffer value must be >= the 50-digit truth
(a certified upper bound) and at most 1e-6 relative above it (a tightness check that fails if a
scale is off by a few percent)."""
import math

import mpmath as mp
import numpy as np
import pytest

import renyi_mpmath_refs as R
from puffer.noise import Gaussian, GenCauchy, GenGaussian, Laplace, Logistic, StudentT

N_CASES = 36
SEED = 20261124
# the oracle's quadrature error (relative) for the heavy-tailed cases; comparisons allow it
ORACLE_REL = 1e-20


def _closed_gaussian(alpha, u):
    return mp.mpf(alpha) * mp.mpf(u) ** 2 / 2


def _closed_laplace(alpha, u):
    a, u = mp.mpf(alpha), mp.mpf(u)
    return mp.log(a / (2 * a - 1) * mp.exp((a - 1) * u) + (a - 1) / (2 * a - 1) * mp.exp(-a * u)) / (a - 1)


def _cases():
    rng = np.random.default_rng(SEED)
    fams = ["gaussian", "laplace", "student_big", "student_small", "gen_cauchy", "gen_gauss", "logistic"]
    out = []
    for i in range(N_CASES):
        fam = fams[i % len(fams)]
        alpha = float(1 + 10 ** rng.uniform(-3, 3))
        scale = float(10 ** rng.uniform(-2, 2))
        u = float(10 ** rng.uniform(-3, 2))
        v = u * scale
        out.append((fam, alpha, v, scale, float(rng.uniform(0, 1))))
    return out


def _noise_and_truth(fam, alpha, v, scale, r):
    u = R.std_u(v, scale)
    if fam == "gaussian":
        return Gaussian(scale), _closed_gaussian(alpha, u)
    if fam == "laplace":
        return Laplace(scale), _closed_laplace(alpha, u)
    if fam == "student_big":
        nu = float(10 ** (3 + 5 * r))
        return StudentT(nu, scale), R.divergence(dict(kind="t", k=nu + 1, nu=nu), alpha, u)
    if fam == "student_small":
        nu = float(0.05 + 0.95 * r)
        return StudentT(nu, scale), R.divergence(dict(kind="t", k=nu + 1, nu=nu), alpha, u, ORACLE_REL)
    if fam == "gen_cauchy":
        k = float(1.05 + 49 * r * r)
        return GenCauchy(scale, k), R.divergence(dict(kind="t", k=k, nu=1.0), alpha, u, ORACLE_REL)
    if fam == "gen_gauss":
        beta = float(1 + 7 * r)
        return GenGaussian(beta, scale), R.divergence(dict(kind="gg", beta=beta), alpha, u)
    return Logistic(scale), R.divergence(dict(kind="logistic"), alpha, u)


@pytest.mark.slow
@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"{c[0]}-a{c[1]:.3g}-v{c[2]:.3g}")
def test_no_under_report(case):
    fam, alpha, v, scale, r = case
    noise, truth = _noise_and_truth(*case)
    got = noise.renyi_shift(alpha, v)
    assert math.isfinite(got)
    mp.mp.dps = R.DPS
    assert mp.mpf(got) >= truth * (1 - mp.mpf(ORACLE_REL)), f"under-report: {got!r} < {mp.nstr(truth, 25)}"
    assert mp.mpf(got) <= truth * (1 + mp.mpf("1e-6")) + mp.mpf("1e-300"), \
        f"loose: {got!r} vs {mp.nstr(truth, 25)}"


@pytest.mark.parametrize("nu,alpha", [(1e6, 1.01), (1e6, 2.0), (3e5, 1.1), (1e6, 1.001)])
def test_student_large_nu_regression(nu, alpha):
    """The issue's case: StudentT(1e6, 1).renyi_shift(1.01, 1) was 2e-12 relative below the truth."""
    truth = R.divergence(dict(kind="t", k=nu + 1, nu=nu), alpha, 1.0)
    got = StudentT(nu, 1.0).renyi_shift(alpha, 1.0)
    assert mp.mpf(got) >= truth
