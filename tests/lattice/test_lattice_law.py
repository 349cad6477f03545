"""The lattice sampler draws exactly the law it declares (issue 31 item 3, acceptance: "the lattice
sampler's law checked exactly").

The sampler is inversion: |Z| = #{n >= 1 : U < TH(n)}, TH(n) = P(|Z| >= n), U a uniform of
unbounded precision whose first 63 bits are u. So its law is the declared one iff every
comparison of U with a threshold is decided as the exact numbers say. Checked here:

* the tables: every entry is the exact floor of its threshold -- the rounded Laplace's
  ``floor(2^64 s^e)`` against exact integer arithmetic (``S^e >> 64 (e - 1)``) or 256-bit mpmath,
  the discrete Gaussian's ``floor(2^63 TH(n))`` against 60-digit mpmath sums;
* the decisions at every threshold: a uniform just below / just above ``TH(n)`` (63 bits and
  then as many further words as needed, built from the exact expansion of TH(n)) gives
  ``|Z| >= n`` / ``|Z| < n``, through the table path and through the exact path;
* a statistical test of 10^6 draws against the exact pmf (Pearson chi^2 at false-alarm rate
  1e-6), whose power against the same law with the scale 3 % off is computed (noncentral
  chi^2) and must exceed 1 - 1e-6, and which does reject the mis-scaled law on the sample.
"""
from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from puffer import _core
from puffer.errors import ParameterError
from puffer.lattice import LatticeLaw, lattice_integers
from puffer.sampling import KeyedStream

C = _core.sampling
KEY = bytes(range(7, 39))
LAPLACE = [LatticeLaw.for_scale("laplace", b) for b in (0.35, 1.0, 3.7, 1025.0, 2.0**20)]
GAUSS = [LatticeLaw.for_scale("gaussian", s) for s in (0.3, 1.0, 2.9, 40.0)]


def laplace_floor64(S: int, e: int) -> int:
    """floor(2^64 (S / 2^64)^e) exactly (integers) or from 256-bit mpmath when e is large."""
    if e <= 3000:
        return (S**e) >> (64 * (e - 1))
    with mpmath.workprec(256 + int(math.log2(e)) + 8):
        v = (mpmath.mpf(S) / 2**64) ** e * 2**64
        f = int(mpmath.floor(v))
        assert mpmath.mpf(1) / 2**150 < v - f < 1 - mpmath.mpf(1) / 2**150, "too close to decide"
        return f


def gaussian_tails(law: LatticeLaw, nmax: int, dps: int = 60) -> list[mpmath.mpf]:
    """TH(n) = 2 sum_{y >= n} w^(y^2) / Theta for n = 0 .. nmax (dps digits)."""
    with mpmath.workdps(dps):
        w = mpmath.mpf(law.S) / 2**64
        lw = mpmath.log(w)
        ymax = int(math.sqrt(3 * dps / -float(lw))) + nmax + 10   # w^(y^2) < 10^-(1.3 dps) beyond
        terms = [mpmath.exp(lw * y * y) for y in range(ymax + 1)]
        suffix = [mpmath.mpf(0)] * (ymax + 2)
        for y in range(ymax, -1, -1):
            suffix[y] = suffix[y + 1] + terms[y]
        theta = 2 * suffix[0] - 1
        return [2 * suffix[n] / theta for n in range(nmax + 1)]


@pytest.mark.parametrize("law", LAPLACE, ids=lambda x: f"beta={x.scale:.4g}")
def test_laplace_tables_are_exact_floors(law):
    t = C.lattice_tables(0, law.S)
    L = 1 << t["lbits"]
    A, B = [int(v) for v in t["A"]], [int(v) for v in t["B"]]
    assert B[0] == 2**64 - 1 and A[-1] == 0 and A[-2] > 0
    idx = range(1, len(B)) if len(B) <= 300 else sorted({1, 2, len(B) - 1, *range(1, len(B), len(B) // 97)})
    for r in idx:
        assert B[r] == laplace_floor64(law.S, 2 * r), r
    qs = range(len(A)) if len(A) <= 300 else sorted({0, len(A) - 2, len(A) - 1, *range(0, len(A), len(A) // 97)})
    for q in qs:
        assert A[q] == laplace_floor64(law.S, 1 + 2 * q * L), q


@pytest.mark.parametrize("law", LAPLACE, ids=lambda x: f"beta={x.scale:.4g}")
def test_laplace_direct_table_is_the_exact_floor_of_every_threshold(law):
    """Laws of up to 2^19 thresholds (beta up to about 11800) also carry T63[n] = floor(2^63
    s^(2n - 1)) (one comparison per threshold); larger ones (beta = 2^20 here) only the product
    tables."""
    t63 = [int(v) for v in C.lattice_tables(0, law.S)["T63"]]
    if law.scale > 2000:
        assert t63 == []
        return
    assert t63[-1] == 0 and t63[-2] > 0
    idx = range(1, len(t63)) if len(t63) <= 400 else sorted({1, 2, len(t63) - 2, len(t63) - 1,
                                                              *range(1, len(t63), len(t63) // 97)})
    for n in idx:
        assert t63[n] == laplace_floor64(law.S, 2 * n - 1) >> 1, n


@pytest.mark.parametrize("law", GAUSS, ids=lambda x: f"sigma={x.scale:.4g}")
def test_gaussian_table_is_the_exact_floor_of_every_tail(law):
    t63 = [int(v) for v in C.lattice_tables(1, law.S)["T63"]]
    with mpmath.workdps(60):
        th = gaussian_tails(law, len(t63))
        for n in range(1, len(t63)):
            v = th[n] * 2**63
            assert mpmath.mpf(2) ** -100 < v - mpmath.floor(v) < 1 - mpmath.mpf(2) ** -100   # decidable at 60 digits
            assert t63[n] == int(mpmath.floor(v)), n
    assert t63[-1] == 0 and t63[-2] > 0   # the table ends where TH drops below 2^-63


def uniform_words(x: Fraction | mpmath.mpf, words: int) -> tuple[int, list[int]]:
    """(u, extra) whose bit stream (63 + 64 words bits) is the binary expansion of x in [0, 1)."""
    bits = 63 + 64 * words
    v = int(x * 2**bits) if isinstance(x, Fraction) else int(mpmath.floor(x * 2**bits))
    u = v >> (64 * words)
    extra = [(v >> (64 * (words - 1 - k))) & (2**64 - 1) for k in range(words)]
    return u, extra


def check_boundaries(family: int, law: LatticeLaw, ths: dict[int, object]):
    """For each n: U just below TH(n) -> |Z| >= n, U = or just above TH(n) -> |Z| < n (exact path,
    and the table path where it decides)."""
    with mpmath.workdps(110):
        _check_boundaries(family, law, ths)


def _check_boundaries(family: int, law: LatticeLaw, ths: dict[int, object]) -> None:
    for n, th in ths.items():
        # U = TH(n) exactly (all later bits 0) where a dyadic threshold fits in 40 words; else U
        # one unit of the 4th word below / above it
        exact_words = None if not isinstance(th, Fraction) else (th.denominator.bit_length() - 63) // 64 + 2
        words = exact_words if exact_words is not None and exact_words <= 40 else 3
        step = Fraction(1, 2**(63 + 64 * words)) if isinstance(th, Fraction) else mpmath.mpf(2) ** -(63 + 64 * words)
        for x, want_ge in ((th - step, True), (th, False), (th + step, False)):
            if x <= 0 or x >= 1 or (x == th and words != exact_words):
                continue
            u, extra = uniform_words(x, words)
            got = C.lattice_magnitude(family, law.S, u, extra + [0] * 4, False, 0)
            assert (got >= n) == want_ge, (n, x, got)
            fast = C.lattice_magnitude(family, law.S, u, [], True, n)
            assert fast == -1 or fast == got, (n, fast, got)


@pytest.mark.parametrize("law", LAPLACE[:4], ids=lambda x: f"beta={x.scale:.4g}")
def test_laplace_decisions_at_the_exact_thresholds(law):
    s = law.param
    ns = [1, 2, 3, 5, 8] + [int(law.scale * k) + 1 for k in (0.5, 2, 7, 20)]
    check_boundaries(0, law, {n: s ** (2 * n - 1) for n in ns if s ** (2 * n - 1) > Fraction(1, 2**62)})


@pytest.mark.parametrize("law", GAUSS, ids=lambda x: f"sigma={x.scale:.4g}")
def test_gaussian_decisions_at_the_exact_thresholds(law):
    with mpmath.workdps(110):   # 365 bits: the test's uniforms differ from TH(n) at bit 255
        th = gaussian_tails(law, int(law.scale * 9) + 3, dps=110)
        ns = sorted({1, 2, 3, *range(1, len(th), max(1, len(th) // 12))})
        check_boundaries(1, law, {n: th[n] for n in ns if th[n] > mpmath.mpf(2) ** -62})


def chi2_power(p0: np.ndarray, p1: np.ndarray, n: int, alpha: float) -> tuple[float, float]:
    """(critical value, power) of Pearson's chi^2 on these bins against p1 (noncentral chi^2)."""
    df = p0.size - 1
    crit = float(stats.chi2.isf(alpha, df))
    lam = float(n * np.sum((p1 - p0) ** 2 / p0))
    return crit, float(stats.ncx2.sf(crit, df, lam))


def pmf_vector(law: LatticeLaw, zs: np.ndarray) -> np.ndarray:
    if law.family == "laplace":
        return np.array([float(law.pmf(int(z))) for z in zs])
    with mpmath.workdps(30):
        w = mpmath.mpf(law.S) / 2**64
        theta = mpmath.fsum(w ** (y * y) for y in range(-int(law.scale * 40) - 40, int(law.scale * 40) + 41))
        return np.array([float(w ** (int(z) ** 2) / theta) for z in zs])


@pytest.mark.parametrize("family, scale", [("laplace", 3.7), ("gaussian", 2.9)])
def test_draws_follow_the_exact_pmf_and_a_3_percent_scale_error_is_caught(family, scale):
    n, alpha = 1_000_000, 1e-6
    law = LatticeLaw.for_scale(family, scale)
    z = lattice_integers(law, n, rng=KeyedStream(KEY, word=3))
    wide = np.arange(-int(scale * 12) - 5, int(scale * 12) + 6)
    keep = n * pmf_vector(law, wide) >= 20          # single integers with >= 20 expected, two tail bins
    lo, hi = int(wide[keep].min()), int(wide[keep].max())
    inner = np.arange(lo, hi + 1)

    def probs(lw: LatticeLaw) -> np.ndarray:
        p_in = pmf_vector(lw, inner)
        tail = (1 - p_in.sum()) / 2                  # both laws are symmetric
        return np.concatenate(([tail], p_in, [tail]))

    p0, p1 = probs(law), probs(LatticeLaw.for_scale(family, scale * 1.03))
    counts = np.concatenate(([np.sum(z < lo)], np.bincount(z[(z >= lo) & (z <= hi)] - lo, minlength=inner.size),
                             [np.sum(z > hi)]))
    assert counts.sum() == n and np.all(n * p0 >= 5)
    crit, power = chi2_power(p0, p1, n, alpha)
    assert power > 1 - 1e-6, power                     # the test can fail: a 3 % error is caught
    x2 = float(np.sum((counts - n * p0) ** 2 / (n * p0)))
    assert x2 < crit, (x2, crit)                       # false-alarm rate 1e-6
    x2_off = float(np.sum((counts - n * p1) ** 2 / (n * p1)))
    assert x2_off > crit, (x2_off, crit)               # and it is caught on this sample


def test_law_parameters_are_rounded_up_minimally():
    """S is the smallest 64-bit fraction >= exp(-1/(2 beta)) (or exp(-1/(2 sigma^2))) up to one:
    the scale is never below the one asked (60-digit mpmath, independent of the decimal module)."""
    rng = np.random.default_rng(31)
    for family in ("laplace", "gaussian"):
        for scale in np.exp(rng.uniform(np.log(0.05), np.log(2e4), 40)):
            law = LatticeLaw.for_scale(family, float(scale))
            with mpmath.workdps(60):
                x = 1 / (2 * mpmath.mpf(float(scale))) if family == "laplace" else 1 / (2 * mpmath.mpf(float(scale)) ** 2)
                target = mpmath.exp(-x) * 2**64
                assert law.S >= target > law.S - 2, (family, scale)
            assert law.scale >= float(scale) * (1 - 1e-15)
    with pytest.raises(ParameterError, match="scale"):
        LatticeLaw.for_scale("gaussian", 2.0**17)
    with pytest.raises(ParameterError, match="family"):
        LatticeLaw.for_scale("cauchy", 1.0)
    with pytest.raises(ParameterError, match="S"):
        LatticeLaw("laplace", 2**64)


def test_secure_discrete_gaussian_sampler_follows_its_pmf():
    """puffer.secure.discrete_gaussian (CKS20 Algorithm 3, sigma^2 = 9/2 exactly) against the exact
    pmf w^(z^2) / Theta (mpmath): Pearson chi^2, false-alarm rate 1e-6, power > 1 - 1e-6 against
    a 3 % larger sigma, which the sample rejects."""
    from puffer.secure import discrete_gaussian

    n, alpha = 400_000, 1e-6
    z = discrete_gaussian(Fraction(9, 2), n)

    def probs(sig2: float, zs: np.ndarray) -> np.ndarray:
        with mpmath.workdps(30):
            w = mpmath.exp(-1 / (2 * mpmath.mpf(sig2)))
            theta = mpmath.fsum(w ** (y * y) for y in range(-200, 201))
            p = np.array([float(w ** (int(k) ** 2) / theta) for k in zs])
        tail = (1 - p.sum()) / 2
        return np.concatenate(([tail], p, [tail]))

    inner = np.arange(-7, 8)
    p0, p1 = probs(4.5, inner), probs(4.5 * 1.03**2, inner)
    counts = np.concatenate(([np.sum(z < -7)], np.bincount(z[np.abs(z) <= 7] + 7, minlength=15), [np.sum(z > 7)]))
    crit, power = chi2_power(p0, p1, n, alpha)
    assert power > 1 - 1e-6 and counts.sum() == n
    assert float(np.sum((counts - n * p0) ** 2 / (n * p0))) < crit
    assert float(np.sum((counts - n * p1) ** 2 / (n * p1))) > crit
