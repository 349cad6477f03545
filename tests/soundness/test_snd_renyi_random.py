"""Issue 9 acceptance: a randomized soundness test of the Renyi shift divergences of every noise
family against mpmath at extreme parameters (fixed seed, bounded time), zero under-reports.

The oracle integrates the definition at 50 digits (tests/renyi_mpmath_refs.py, independent of
the folded form the C++ kernel integrates); Gaussian and Laplace use their closed forms in
mpmath. Parameters are drawn log-uniformly over alpha in [1 + 1e-3, 1e3], standardized shifts
in [1e-3, 1e2] and extreme shapes (Student-t nu up to 1e8 -- where log((1+A)(1+B)) once lost
k eps / 4 and under-reported by 2e-12 -- and down to 0.05; generalized Cauchy k down to 1.05;
generalized Gaussian beta in [1, 8]). Every puffer value must be >= the 50-digit truth
(a certified upper bound) and at most 1e-6 relative above it (a tightness check that fails if a
scale is off by a few percent).

The oracle's values (about a CPU-minute of mpmath) are stored in
tests/data/snd_renyi_random_truth.json, keyed by the case's parameters; a case not stored there
(a changed seed or family) is integrated on the spot. Regenerate the file with
``PYTHONPATH=tests python tests/soundness/test_snd_renyi_random.py``."""
import json
import math
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

import renyi_mpmath_refs as R
from puffer.noise import Gaussian, GenCauchy, GenGaussian, Laplace, Logistic, StudentT

N_CASES = 36
TRUTH_FILE = Path(__file__).resolve().parent.parent / "data" / "snd_renyi_random_truth.json"
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


def _shape(fam, r):
    """The family's shape parameter (nu, k or beta) for the uniform draw r."""
    return {"student_big": float(10 ** (3 + 5 * r)), "student_small": float(0.05 + 0.95 * r),
            "gen_cauchy": float(1.05 + 49 * r * r), "gen_gauss": float(1 + 7 * r)}.get(fam)


def _noise(fam, scale, r):
    sh = _shape(fam, r)
    return {"gaussian": lambda: Gaussian(scale), "laplace": lambda: Laplace(scale),
            "student_big": lambda: StudentT(sh, scale), "student_small": lambda: StudentT(sh, scale),
            "gen_cauchy": lambda: GenCauchy(scale, sh), "gen_gauss": lambda: GenGaussian(sh, scale),
            "logistic": lambda: Logistic(scale)}[fam]()


def _truth(fam, alpha, v, scale, r):
    """The oracle: closed forms (Gaussian, Laplace) or the 50-digit integral of the definition."""
    u = R.std_u(v, scale)
    sh = _shape(fam, r)
    if fam == "gaussian":
        return _closed_gaussian(alpha, u)
    if fam == "laplace":
        return _closed_laplace(alpha, u)
    if fam == "student_big":
        return R.divergence(dict(kind="t", k=sh + 1, nu=sh), alpha, u)
    if fam == "student_small":
        return R.divergence(dict(kind="t", k=sh + 1, nu=sh), alpha, u, ORACLE_REL)
    if fam == "gen_cauchy":
        return R.divergence(dict(kind="t", k=sh, nu=1.0), alpha, u, ORACLE_REL)
    if fam == "gen_gauss":
        return R.divergence(dict(kind="gg", beta=sh), alpha, u)
    return R.divergence(dict(kind="logistic"), alpha, u)


def _key(case):
    return "|".join(repr(x) for x in case)


def _stored():
    return json.loads(TRUTH_FILE.read_text()) if TRUTH_FILE.is_file() else {}


@pytest.mark.slow
@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"{c[0]}-a{c[1]:.3g}-v{c[2]:.3g}")
def test_no_under_report(case):
    fam, alpha, v, scale, r = case
    mp.mp.dps = R.DPS
    stored = _stored().get(_key(case))
    truth = mp.mpf(stored) if stored is not None else _truth(*case)
    got = _noise(fam, scale, r).renyi_shift(alpha, v)
    assert math.isfinite(got)
    assert mp.mpf(got) >= truth * (1 - mp.mpf(ORACLE_REL)), f"under-report: {got!r} < {mp.nstr(truth, 25)}"
    assert mp.mpf(got) <= truth * (1 + mp.mpf("1e-6")) + mp.mpf("1e-300"), \
        f"loose: {got!r} vs {mp.nstr(truth, 25)}"


@pytest.mark.slow
def test_stored_truths_are_the_oracle_s():
    """The stored file holds every case, and a spot check of three cases (one per kind of oracle:
    closed form, 50-digit quadrature, heavy-tailed quadrature) re-integrates to the stored digits."""
    stored = _stored()
    cases = _cases()
    assert {_key(c) for c in cases} <= set(stored), "regenerate tests/data/snd_renyi_random_truth.json"
    mp.mp.dps = R.DPS
    for fam in ("laplace", "gen_gauss", "logistic"):
        case = next(c for c in cases if c[0] == fam)
        truth = _truth(*case)
        assert abs(mp.mpf(stored[_key(case)]) - truth) <= abs(truth) * mp.mpf("1e-40") + mp.mpf("1e-300"), fam


@pytest.mark.parametrize("nu,alpha", [(1e6, 1.01), (1e6, 2.0), (3e5, 1.1), (1e6, 1.001)])
def test_student_large_nu_regression(nu, alpha):
    """The issue's case: StudentT(1e6, 1).renyi_shift(1.01, 1) was 2e-12 relative below the truth."""
    truth = R.divergence(dict(kind="t", k=nu + 1, nu=nu), alpha, 1.0)
    got = StudentT(nu, 1.0).renyi_shift(alpha, 1.0)
    assert mp.mpf(got) >= truth


if __name__ == "__main__":  # regenerate the stored oracle values
    mp.mp.dps = R.DPS
    TRUTH_FILE.write_text(json.dumps({_key(c): mp.nstr(_truth(*c), R.DPS)
                                      for c in _cases()}, indent=1) + "\n")
    print(f"wrote {TRUTH_FILE}")
