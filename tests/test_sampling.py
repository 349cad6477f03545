"""Samplers (issue 5): generator known answers, reproducibility, rng handling, SIMD control,
add_noise semantics, secure mode and bad input. Distribution tests: test_sampling_stats.py."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

import puffer
from puffer import _core, sampling, secure
from puffer.errors import ParameterError, ParameterTypeError

C = _core.sampling
KIND_PARAMS = {
    "uniform": {}, "exponential": {"scale": 2.0}, "laplace": {"b": 1.5}, "gaussian": {"sigma": 2.0},
    "cauchy": {"gamma": 0.5}, "student_t": {"nu": 3.5, "scale": 1.2}, "gen_gaussian": {"beta": 1.5, "scale": 0.8},
    "logistic": {"scale": 0.7}, "gen_cauchy": {"gamma": 2.0, "k": 3.5},
}


@pytest.fixture(autouse=True)
def _restore_target():
    yield
    sampling.set_simd_target("auto")


# ---------------------------------------------------------------- generators (known answers)

def test_philox_known_answers():
    # Random123 kat_vectors for philox4x32_10.
    assert C.philox4x32_10([0, 0, 0, 0], 0, 0) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert C.philox4x32_10([0xFFFFFFFF] * 4, 0xFFFFFFFF, 0xFFFFFFFF) == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]
    assert C.philox4x32_10([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], 0xA4093822, 0x299F31D0) == \
        [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


@pytest.mark.parametrize("target", sampling.simd_targets())
def test_simd_uniform_matches_scalar_philox(target):
    """Every SIMD target reproduces the scalar reference bit for bit: value 2q (2q+1) is
    ((w >> 11) + 1/2) 2^-53 with w the first (second) 64-bit word of block (q, 0, 0, word)."""
    sampling.set_simd_target(target)
    k0, k1, word, start, n = 0x12345678, 0x9ABCDEF0, 0x0BADBEEF & ((1 << 30) - 1), (1 << 32) - 5, 37
    out = np.empty(n)
    C.fill_f64(0, 0.0, 0.0, k0, k1, word, start, out)
    for j in range(n):
        i = start + j
        q = i // 2
        x = C.philox4x32_10([q & 0xFFFFFFFF, q >> 32, 0, word], k0, k1)
        w = (x[0] | (x[1] << 32)) if i % 2 == 0 else (x[2] | (x[3] << 32))
        assert out[j] == ((w >> 11) + 0.5) * 2.0**-53


def test_chacha20_rfc8439_block():
    # RFC 8439 §2.3.2 test vector.
    state = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, 0x03020100, 0x07060504, 0x0B0A0908, 0x0F0E0D0C,
             0x13121110, 0x17161514, 0x1B1A1918, 0x1F1E1D1C, 0x00000001, 0x09000000, 0x4A000000, 0x00000000]
    assert C.chacha20_block(state) == [
        0xE4E7F110, 0x15593BD1, 0x1FDD0F50, 0xC47120A3, 0xC7F4D1C7, 0x0368C033, 0x9AAA2204, 0x4E6CD4C3,
        0x466482D2, 0x09AA9F07, 0x05D7C214, 0xA2028BD9, 0xD19C12B5, 0xB94E16DE, 0xE883D0CB, 0x4E3C50A2]


# ---------------------------------------------------------------- reproducibility

@pytest.mark.parametrize("kind", list(KIND_PARAMS))
def test_bitwise_across_threads_and_chunks(kind):
    p = KIND_PARAMS[kind]
    ref = sampling.draw(kind, p, 100_003, rng=9, threads=1)
    for threads in (2, 3, 8):
        assert np.array_equal(ref, sampling.draw(kind, p, 100_003, rng=9, threads=threads))
    for chunk in (1, 7, 4096, 65_537):
        assert np.array_equal(ref[:20_000], sampling.draw(kind, p, 20_000, rng=9, chunk=chunk))
    # Successive draws from one Stream (odd split points included) = one long draw.
    s = sampling.Stream(9)
    parts = [sampling.draw(kind, p, m, rng=s) for m in (1, 2, 333, 99_667)]
    assert np.array_equal(np.concatenate(parts), ref)
    assert s.position == 100_003


@pytest.mark.parametrize("kind", ["laplace", "gaussian", "student_t", "gen_gaussian"])
def test_add_noise_equals_values_plus_draw(kind):
    p = KIND_PARAMS[kind]
    v = np.linspace(-5, 5, 50_001)
    noise = sampling.draw(kind, p, v.size, rng=4)
    expected = v + noise
    assert np.array_equal(puffer.add_noise(v, (kind, p), rng=4), expected)
    for chunk in (1, 1000, 1 << 15):
        assert np.array_equal(puffer.add_noise(v, (kind, p), rng=4, chunk=chunk, threads=2), expected)
    w = v.copy()
    assert puffer.add_noise(w, (kind, p), rng=4, out=w) is w and np.array_equal(w, expected)
    out = np.empty_like(v)
    assert puffer.add_noise(v, (kind, p), rng=4, out=out) is out and np.array_equal(out, expected)
    # float32: one rounding of the double sum.
    v32 = v.astype(np.float32)
    r32 = puffer.add_noise(v32, (kind, p), rng=4)
    assert r32.dtype == np.float32
    assert np.array_equal(r32, (v32.astype(np.float64) + noise).astype(np.float32))
    # non-contiguous input, 2-D shapes
    v2 = np.arange(60.0).reshape(6, 10)[:, ::2]
    r2 = puffer.add_noise(v2, (kind, p), rng=4)
    assert r2.shape == (6, 5) and np.array_equal(r2, v2 + noise[:30].reshape(6, 5))


def test_draw_shapes_dtypes_out():
    x = sampling.draw("gaussian", {"sigma": 1.0}, (3, 4), rng=1)
    assert x.shape == (3, 4) and x.dtype == np.float64
    assert np.array_equal(x.ravel(), sampling.draw("gaussian", {"sigma": 1.0}, 12, rng=1))
    y = sampling.draw("gaussian", {"sigma": 1.0}, 12, rng=1, dtype=np.float32)
    assert y.dtype == np.float32 and np.array_equal(y, x.ravel().astype(np.float32))
    out = np.empty((3, 4))
    assert sampling.draw("gaussian", {"sigma": 1.0}, (3, 4), rng=1, out=out) is out and np.array_equal(out, x)
    assert isinstance(sampling.draw("laplace", {"b": 1.0}, rng=1), float)
    assert sampling.draw("laplace", {"b": 1.0}, 0, rng=1).shape == (0,)
    u = sampling.draw("uniform", None, 100_000, rng=2)
    assert u.min() > 0.0 and u.max() < 1.0


def test_float32_far_tail_overflow_is_inf_not_nan():
    # Student-t with nu = 0.05: |T| beyond 3.4e38 occurs with probability ~ 3e-2; float32
    # rounds it to +-inf (the correctly rounded value), never NaN.
    x = sampling.draw("student_t", {"nu": 0.05, "scale": 1.0}, 10_000, rng=3, dtype=np.float32)
    assert not np.isnan(x).any() and np.isinf(x).any()


# ---------------------------------------------------------------- rng= handling and streams

def test_rng_forms():
    p = {"b": 1.0}
    a = sampling.draw("laplace", p, 1000, rng=123)
    assert np.array_equal(a, sampling.draw("laplace", p, 1000, rng=123))
    assert np.array_equal(a, sampling.draw("laplace", p, 1000, rng=np.random.SeedSequence(123)))
    assert not np.array_equal(a, sampling.draw("laplace", p, 1000, rng=124))
    assert not np.array_equal(sampling.draw("laplace", p, 1000), sampling.draw("laplace", p, 1000))
    g1, g2 = np.random.default_rng(5), np.random.default_rng(5)
    b1, b2 = sampling.draw("laplace", p, 1000, rng=g1), sampling.draw("laplace", p, 1000, rng=g2)
    assert np.array_equal(b1, b2)
    assert not np.array_equal(b1, sampling.draw("laplace", p, 1000, rng=g1))  # the Generator advanced
    # Generator: key = SeedSequence of 128 bits drawn from it (documented).
    g3 = np.random.default_rng(5)
    ent = [int(v) for v in g3.integers(0, 2**32, size=4, dtype=np.uint32)]
    assert np.array_equal(b1, sampling.draw("laplace", p, 1000, rng=np.random.SeedSequence(ent)))


def test_spawned_streams_independent_and_reproducible():
    kids = sampling.Stream(42).spawn(3)
    again = sampling.Stream(42).spawn(3)
    xs = [sampling.draw("gaussian", {"sigma": 1.0}, 200_000, rng=k) for k in kids]
    for x, k in zip(xs, again):
        assert np.array_equal(x, sampling.draw("gaussian", {"sigma": 1.0}, 200_000, rng=k))
    # Independence: pairwise sample correlation |r| < 4.9/sqrt(n) (false-alarm 1e-6 each).
    for i in range(3):
        for j in range(i + 1, 3):
            assert abs(np.corrcoef(xs[i], xs[j])[0, 1]) < 4.9 / math.sqrt(200_000)
    parent = sampling.draw("gaussian", {"sigma": 1.0}, 200_000, rng=42)
    assert abs(np.corrcoef(parent, xs[0])[0, 1]) < 4.9 / math.sqrt(200_000)


def test_layouts_never_share_blocks():
    """A Stream used by a pair sampler and then a rejection sampler: the counter word's layout tag
    separates them, so the uniform bits of the two draws are unrelated."""
    s = sampling.Stream(1)
    a = sampling.draw("uniform", None, 2000, rng=s)
    s2 = sampling.Stream(1)
    s2.position = 0
    b = sampling.draw("student_t", {"nu": 1e6, "scale": 1.0}, 2000, rng=s2)
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.15


# ---------------------------------------------------------------- SIMD control

def test_simd_targets_and_forcing():
    names = sampling.simd_targets()
    assert names and names == list(C.simd_targets())
    if C.STATIC_TARGET_ONLY:   # sanitizer build (scripts/cpp_checks.sh): one target, no dispatch
        assert len(names) == 1
    else:                      # every dispatch build keeps the portable fallback
        assert any(n in names for n in ("SCALAR", "EMU128"))
    ref = {k: None for k in KIND_PARAMS}
    for t in names:
        sampling.set_simd_target(t.lower())
        assert sampling.simd_target() == t
        for kind, p in KIND_PARAMS.items():
            x = sampling.draw(kind, p, 4001, rng=8)
            if ref[kind] is None:
                ref[kind] = x
            else:  # same bits, few-ulp differences in the math (documented: not bitwise across targets)
                np.testing.assert_allclose(x, ref[kind], rtol=1e-10, atol=1e-13)
    sampling.set_simd_target("auto")
    assert sampling.simd_target() == names[0]
    with pytest.raises(ParameterError):
        sampling.set_simd_target("AVX9000")
    with pytest.raises(ParameterTypeError):
        sampling.set_simd_target(3)


def test_puffer_simd_env_var():
    last = sampling.simd_targets()[-1]
    code = "import puffer; print(puffer.sampling.simd_target())"
    env = dict(os.environ, PUFFER_SIMD=last)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == last


# ---------------------------------------------------------------- noise objects

class _DuckLaplace:
    def __init__(self, b):
        self.b = b

    def _sampler_spec(self):
        return ("laplace", {"b": self.b})


def test_noise_objects_and_tuples():
    a = puffer.sample(_DuckLaplace(2.0), 500, rng=3)
    assert np.array_equal(a, puffer.sample(("laplace", {"b": 2.0}), 500, rng=3))
    assert np.array_equal(a, sampling.draw("laplace", {"b": 2.0}, 500, rng=3))
    v = np.ones(500)
    assert np.array_equal(puffer.add_noise(v, _DuckLaplace(2.0), rng=3), v + a)


# ---------------------------------------------------------------- secure mode

KEY = bytes(range(32))


def _chi2_pmf(z: np.ndarray, pmf, zmax: int) -> float:
    """Pearson chi^2 p-value of integer samples against pmf on bins {<= -zmax}, -zmax+1..zmax-1, {>= zmax}."""
    ks = np.arange(-zmax + 1, zmax)
    p = np.array([pmf(k) for k in ks])
    tail = (1.0 - p.sum()) / 2
    expected = np.concatenate([[tail], p, [tail]]) * z.size
    counts = np.concatenate([[np.count_nonzero(z <= -zmax)],
                             np.bincount(np.clip(z, -zmax, zmax) + zmax, minlength=2 * zmax + 1)[1:-1],
                             [np.count_nonzero(z >= zmax)]])
    return float(stats.chi2.sf(np.sum((counts - expected) ** 2 / expected), df=expected.size - 1))


@pytest.mark.parametrize("scale", [Fraction(3, 2), Fraction(1, 3), Fraction(20)])
def test_discrete_laplace_exact_pmf(scale):
    """P(z) = tanh(1/(2 scale)) exp(-|z|/scale), exact; chi^2 at level 1e-4 (false alarm 1e-4) on
    bins with expected count >= 20; power: the same test rejects scale * 1.03 (asserted)."""
    n = 300_000
    z = C.secure_sample(0, scale.numerator, scale.denominator, 1, n, 2, KEY)
    s = float(scale)
    zmax = max(2, int(s * math.log(n / 20 * (1 - math.exp(-1 / s)))))

    def pmf(k, s=s):
        return math.tanh(1 / (2 * s)) * math.exp(-abs(k) / s)

    assert _chi2_pmf(z, pmf, zmax) > 1e-4
    if s >= 1:
        assert _chi2_pmf(z, lambda k: math.tanh(1 / (2 * s * 1.03)) * math.exp(-abs(k) / (s * 1.03)), zmax) < 1e-4
    assert np.array_equal(z, C.secure_sample(0, scale.numerator, scale.denominator, 1, n, 1, KEY))  # threads


@pytest.mark.parametrize("sigma2", [Fraction(2), Fraction(9, 4), Fraction(1, 4), Fraction(400)])
def test_discrete_gaussian_exact_pmf(sigma2):
    """P(z) ∝ exp(-z^2/(2 sigma2)) normalised over |z| <= 60 sigma (mass outside < 1e-700);
    chi^2 at level 1e-4 on bins with expected count >= 20; power against sigma2 * 1.06 (3 % in sigma)."""
    n = 300_000
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1
    z = C.secure_sample(1, sigma2.numerator, sigma2.denominator, t, n, 2, KEY)
    s2 = float(sigma2)

    def make(s2):
        ks = np.arange(-int(60 * math.sqrt(s2)) - 2, int(60 * math.sqrt(s2)) + 3)
        norm = np.exp(-ks.astype(float) ** 2 / (2 * s2)).sum()
        return lambda k: math.exp(-k * k / (2 * s2)) / norm

    zmax = 1
    while make(s2)(zmax) * n >= 20:
        zmax += 1
    assert _chi2_pmf(z, make(s2), zmax) > 1e-4
    if s2 >= 1:
        assert _chi2_pmf(z, make(s2 * 1.0609), zmax) < 1e-4


def test_secure_output_depends_on_input_only_through_lattice():
    g_exp = -10
    g = 2.0**g_exp
    base = np.linspace(-100, 100, 20_001)
    snapped = np.round(base / g) * g  # ties to even, as the core
    x1 = snapped + g * 0.3
    x2 = snapped - g * 0.49
    outs = []
    for x in (snapped, x1, x2):
        o = np.empty_like(x)
        C.secure_add(0, 3, 2, 1, g_exp, x, o, 2, KEY)
        outs.append(o)
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2])
    assert np.all(outs[0] / g == np.round(outs[0] / g))  # every output is a lattice point
    o1 = np.empty_like(x1)
    C.secure_add(0, 3, 2, 1, g_exp, x1, o1, 1, KEY)
    assert np.array_equal(o1, outs[0])  # thread count irrelevant for a fixed key
    # The noise is the exact discrete Laplace (scale 3/2 lattice units).
    z = np.rint((outs[0] - snapped) / g).astype(np.int64)
    assert np.array_equal(z, C.secure_sample(0, 3, 2, 1, z.size, 2, KEY))


def test_secure_add_noise_public_api_and_padding():
    v = np.linspace(0, 10, 1001)
    y = puffer.add_noise(v, ("laplace", {"b": 1.0}), secure=True, sensitivity=1.0, granularity=2**-12)
    assert y.dtype == np.float64 and np.all(y * 2**12 == np.round(y * 2**12))
    assert not np.array_equal(y, puffer.add_noise(v, ("laplace", {"b": 1.0}), secure=True, sensitivity=1.0,
                                                  granularity=2**-12))  # OS entropy: fresh each call
    # Padding rule: l1 over n values -> Delta + n g; scale rounded up, never down.
    plan = secure.secure_plan(("laplace", {"b": 1.0}), 1001, sensitivity=0.5, granularity=2**-12)
    assert plan.padded_sensitivity == Fraction(1, 2) + 1001 * Fraction(1, 2**12)
    # the rounded Laplace's s = S / 2^64 is the smallest 64-bit fraction >= exp(-1/(2 beta)) for
    # the padded lattice scale beta (50-digit mpmath): the scale is rounded up, never down
    mpmath.mp.dps = 50
    exact = Fraction(1) * plan.padded_sensitivity / Fraction(1, 2) / Fraction(1, 2**12)
    target = mpmath.exp(-1 / (2 * mpmath.mpf(exact.numerator) / exact.denominator)) * 2**64
    assert plan.law.family == "laplace" and plan.law.S >= target > plan.law.S - 2
    assert plan.law.scale >= float(exact) * (1 - 1e-15) and plan.law.scale < float(exact) * (1 + 1e-9)
    plan2 = secure.secure_plan(("gaussian", {"sigma": 3.0}), 100, sensitivity=2.0, granularity=2**-8)
    assert plan2.padded_sensitivity == 2 + 10 * Fraction(1, 256) and plan2.norm == "l2"
    s2_exact = (Fraction(3) * plan2.padded_sensitivity / 2 * 256) ** 2   # sigma^2 in lattice units
    target2 = mpmath.exp(-1 / (2 * mpmath.mpf(s2_exact.numerator) / s2_exact.denominator)) * 2**64
    assert plan2.law.family == "gaussian" and plan2.law.S >= target2 > plan2.law.S - 2
    plan3 = secure.secure_plan(("laplace", {"b": 1.0}), 10**6, sensitivity=1.0, norm="coordinate", granularity=2**-20)
    assert plan3.padded_sensitivity == 1 + Fraction(1, 2**20)
    # Default granularity: the largest power of two with c g <= Delta / 1024.
    p4 = secure.secure_plan(("laplace", {"b": 1.0}), 1000, sensitivity=3.0)
    assert 1000 * p4.granularity <= 3.0 / 1024 < 2000 * p4.granularity
    assert p4.inflation <= 1 + 1 / 1024
    # in place
    w = v.copy()
    assert puffer.add_noise(w, ("gaussian", {"sigma": 1.0}), secure=True, sensitivity=1.0, out=w) is w
    # empirical scale of the secure noise ~ b * inflation (n = 2e5: sd of the std estimate ~ 0.35 %)
    big = np.zeros(200_000)
    noise = puffer.add_noise(big, ("laplace", {"b": 2.0}), secure=True, sensitivity=1.0, norm="coordinate",
                             granularity=2**-16)
    assert abs(noise.std() / (2.0 * math.sqrt(2)) - 1) < 0.02


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("call, exc", [
    (lambda: sampling.draw("laplace", {"b": 1.0}, -1), ParameterError),
    (lambda: sampling.draw("laplace", {"b": 1.0}, 2.5), ParameterTypeError),
    (lambda: sampling.draw("laplace", {"b": 1.0}, (2, -1)), ParameterError),
    (lambda: sampling.draw("laplce", {"b": 1.0}, 3), ParameterError),
    (lambda: sampling.draw(3, {"b": 1.0}, 3), ParameterTypeError),
    (lambda: sampling.draw("laplace", {"b": 0.0}, 3), ParameterError),
    (lambda: sampling.draw("laplace", {"b": -1.0}, 3), ParameterError),
    (lambda: sampling.draw("laplace", {"b": float("nan")}, 3), ParameterError),
    (lambda: sampling.draw("laplace", {"b": "1"}, 3), ParameterTypeError),
    (lambda: sampling.draw("laplace", {}, 3), ParameterError),
    (lambda: sampling.draw("laplace", {"b": 1.0, "c": 2}, 3), ParameterError),
    (lambda: sampling.draw("laplace", [1.0], 3), ParameterTypeError),
    (lambda: sampling.draw("gen_cauchy", {"gamma": 1.0, "k": 1.0}, 3), ParameterError),
    (lambda: sampling.draw("student_t", {"nu": 0.0, "scale": 1.0}, 3), ParameterError),
    (lambda: sampling.draw("gen_gaussian", {"beta": 1.0, "scale": float("inf")}, 3), ParameterError),
    (lambda: sampling.draw("laplace", {"b": 1.0}, 3, dtype=np.int64), ParameterTypeError),
    (lambda: sampling.draw("laplace", {"b": 1.0}, 3, dtype="float16"), ParameterTypeError),
    (lambda: sampling.draw("laplace", {"b": 1.0}, 3, out=np.empty(3, dtype=np.int64)), ParameterTypeError),
    (lambda: sampling.draw("laplace", {"b": 1.0}, 3, out=np.empty(4)), ParameterError),
    (lambda: sampling.draw("laplace", {"b": 1.0}, 3, out=np.empty(6)[::2]), ParameterError),
    (lambda: sampling.draw("laplace", {"b": 1.0}, 3, out=[0.0, 0.0, 0.0]), ParameterTypeError),
    (lambda: sampling.draw("laplace", {"b": 1.0}, 3, threads=0), ParameterError),
    (lambda: sampling.draw("laplace", {"b": 1.0}, 3, rng="seed"), ParameterTypeError),
    (lambda: sampling.draw("laplace", {"b": 1.0}, 3, rng=-5), ParameterError),
    (lambda: sampling.Stream(1).spawn(-1), ParameterError),
    (lambda: puffer.sample(object(), 3), ParameterTypeError),
    (lambda: puffer.sample(("laplace", 1.0), 3), ParameterTypeError),
    (lambda: puffer.add_noise(np.array([1.0, np.nan]), ("laplace", {"b": 1.0})), ParameterError),
    (lambda: puffer.add_noise(np.array([1.0, np.inf]), ("laplace", {"b": 1.0})), ParameterError),
    (lambda: puffer.add_noise(["a"], ("laplace", {"b": 1.0})), ParameterTypeError),
    (lambda: puffer.add_noise(np.ones(3), ("laplace", {"b": 1.0}), out=np.empty(3, np.float32)), ParameterTypeError),
    (lambda: puffer.add_noise(np.ones(3), ("laplace", {"b": 1.0}), out=np.empty(2)), ParameterError),
    (lambda: puffer.add_noise(np.ones(3), ("laplace", {"b": 1.0}), granularity=2**-10), ParameterError),
    (lambda: puffer.add_noise(np.ones(3), ("cauchy", {"gamma": 1.0}), secure=True, sensitivity=1.0), ParameterError),
    (lambda: puffer.add_noise(np.ones(3), ("laplace", {"b": 1.0}), secure=True), ParameterError),
    (lambda: puffer.add_noise(np.ones(3), ("laplace", {"b": 1.0}), secure=True, sensitivity=1.0,
                              granularity=0.3), ParameterError),
    (lambda: puffer.add_noise(np.ones(3), ("laplace", {"b": 1.0}), secure=True, sensitivity=1.0, rng=1),
     ParameterError),
    (lambda: puffer.add_noise(np.ones(3), ("laplace", {"b": 1.0}), secure=True, sensitivity=1.0, norm="l3"),
     ParameterError),
    (lambda: puffer.add_noise(np.array([1e30]), ("laplace", {"b": 1.0}), secure=True, sensitivity=1.0,
                              granularity=2**-20), ParameterError),
    (lambda: puffer.add_noise(np.array([2.0**40]), ("laplace", {"b": 1.0}), secure=True, sensitivity=1.0,
                              granularity=2**-20), ParameterError),
    (lambda: puffer.add_noise(np.array([np.nan]), ("laplace", {"b": 1.0}), secure=True, sensitivity=1.0),
     ParameterError),
    (lambda: puffer.add_noise(np.ones(3), ("gaussian", {"sigma": 1e9}), secure=True, sensitivity=1.0,
                              granularity=2**-10), ParameterError),
    # the core rejects bad input itself (not only the facade)
    (lambda: C.fill_f64(11, 1.0, 0.0, 0, 0, 0, 0, np.empty(3)), ParameterError),
    (lambda: C.fill_f64(2, -1.0, 0.0, 0, 0, 0, 0, np.empty(3)), ParameterError),
    (lambda: C.fill_f64(2, 1.0, 0.0, 0, 0, 0, 0, np.empty(6)[::2]), ParameterError),
    (lambda: C.fill_f64(2, 1.0, 0.0, 0, 0, 0, 0, np.empty(3, np.float32)), ParameterError),
    (lambda: C.fill_f64(2, 1.0, 0.0, 0, 0, 0, 0, np.empty(3), np.empty(4)), ParameterError),
    (lambda: C.fill_f64(2, 1.0, 0.0, 0, 0, 0, 2**64 - 2, np.empty(3)), ParameterError),
    (lambda: C.secure_sample(1, 2, 1, 5, 3, 1, KEY), ParameterError),
    (lambda: C.secure_sample(0, 0, 1, 1, 3, 1, KEY), ParameterError),
    (lambda: C.secure_sample(0, 1, 1, 1, 3, 1, b"short"), ParameterError),
    (lambda: C.secure_add(0, 1, 1, 1, -10, np.array([np.inf]), np.empty(1), 1, KEY), ParameterError),
])
def test_bad_input(call, exc):
    with pytest.raises(exc):
        call()


def test_readonly_out_rejected():
    o = np.empty(3)
    o.setflags(write=False)
    with pytest.raises(ParameterError):
        sampling.draw("laplace", {"b": 1.0}, 3, out=o)


def test_secure_return_plan_and_large_inputs():
    v = np.array([-(2.0**40), 0.0, 3.5])
    y, plan = secure.secure_add_noise(v, ("laplace", {"b": 1.0}), sensitivity=1.0, norm="coordinate",
                                      return_plan=True)
    # default granularity coarsened so |x/g| <= 2^52 keeps the float output exact
    assert plan.g_exp >= 41 - 52 and np.all(y / plan.granularity == np.round(y / plan.granularity))
    assert plan.inflation == float(plan.padded_sensitivity / Fraction(1))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_add_noise_rejects_nonfinite_before_writing(dtype):
    v = np.zeros(300_000, dtype=dtype)
    v[200_001] = np.nan
    w = v.copy()
    with pytest.raises(ParameterError, match="200001"):
        puffer.add_noise(w, ("laplace", {"b": 1.0}), rng=1, out=w)
    np.testing.assert_array_equal(w, v)  # untouched (NaN == NaN here)
    v[200_001] = -np.inf
    assert C.first_nonfinite(v, 2) == 200_001
    v[200_001] = 0.0
    assert C.first_nonfinite(v, 2) == -1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_first_nonfinite_by_bit_pattern(dtype):
    # the core tests the exponent field on the bits (exponent + 1 carries into the sign bit):
    # every NaN/inf pattern is caught wherever it lies (lane offsets, task boundaries at 2^16, the
    # last value), the first of several is reported, and the largest finite values, subnormals
    # and signed zeros are not flagged
    u = np.uint64 if dtype == np.float64 else np.uint32
    bits = 64 if dtype == np.float64 else 32
    m = 52 if dtype == np.float64 else 23
    exp = ((1 << (bits - 1 - m)) - 1) << m          # the exponent field, all ones
    sign = 1 << (bits - 1)
    bad = [exp, exp | sign, exp | 1, exp | (1 << (m - 1)), exp | sign | ((1 << m) - 1)]  # +-inf, NaNs
    fin = np.finfo(dtype)
    good = np.array([fin.max, -fin.max, fin.smallest_subnormal, -fin.smallest_subnormal, 0.0, -0.0, fin.tiny],
                    dtype=dtype)
    n = 2 * 65536 + 5
    v = np.resize(good, n)
    assert C.first_nonfinite(v, 1) == C.first_nonfinite(v, 2) == -1
    for pattern in bad:
        x = np.array([pattern], dtype=u).view(dtype)[0]
        assert not np.isfinite(x)
        for at in (0, 1, 3, 7, 8, 65535, 65536, 65537, n - 2, n - 1):
            w = v.copy()
            w[at] = x
            assert C.first_nonfinite(w, 1) == C.first_nonfinite(w, 2) == at, (hex(pattern), at)
    w = v.copy()
    w[[70_000, 65_535, 3]] = np.inf
    assert C.first_nonfinite(w, 2) == 3
    assert C.first_nonfinite(w[4:], 2) == 65_531
    assert C.first_nonfinite(v[:0], 2) == -1


def test_stream_pickles_for_workers():
    import pickle
    s = sampling.Stream(3)
    sampling.draw("laplace", {"b": 1.0}, 11, rng=s)
    t = pickle.loads(pickle.dumps(s))
    assert t.position == 11
    assert np.array_equal(sampling.draw("laplace", {"b": 1.0}, 50, rng=s),
                          sampling.draw("laplace", {"b": 1.0}, 50, rng=t))


@pytest.mark.forks_threads  # TSan dies on "starting new threads after multi-threaded fork"
@pytest.mark.parametrize("keyed", [False, True])
def test_stream_draws_in_a_child_forked_while_another_thread_holds_its_lock(keyed):
    # A Dask/Spark/multiprocessing worker forked while another thread of the parent is inside a
    # draw (holding the stream's lock while it reserves its range): the child inherited the lock
    # held, with no thread to release it, and its first draw from the stream waited forever.
    # Here another thread holds the lock exactly as a draw does, and stays inside until after the
    # fork. A hung child is detected by progress (tests/timing.py): no CPU time for 30 s.
    import pickle
    import threading

    from timing import wait_child

    s = sampling.KeyedStream(bytes(range(32)), word=7) if keyed else sampling.Stream(5)
    s.position = 123
    # what the child's copy draws: the parent's next values (as a forked numpy Generator does)
    want = sampling.draw("laplace", {"b": 1.0}, 1000, rng=pickle.loads(pickle.dumps(s)), threads=1)
    inside, leave = threading.Event(), threading.Event()

    def draw_in_progress():
        with s._lock:
            inside.set()
            leave.wait()

    t = threading.Thread(target=draw_in_progress)
    t.start()
    inside.wait()
    try:
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                x = sampling.draw("laplace", {"b": 1.0}, 1000, rng=s, threads=1)
                code = 0 if np.array_equal(x, want) and s.position == 1123 else 4
            finally:
                os._exit(code)
    finally:
        leave.set()
        t.join()
    assert os.waitstatus_to_exitcode(wait_child(pid)) == 0
    # the parent's stream is untouched by the child and draws the same values next
    assert np.array_equal(sampling.draw("laplace", {"b": 1.0}, 1000, rng=s, threads=1), want)
    assert s.position == 1123


# ---------------------------------------------------------------- transforms, value by value

M32 = np.uint64(0xFFFFFFFF)


def _philox_np(q: np.ndarray, sub: int, word: int, k0: int, k1: int):
    """Philox4x32-10 in numpy (uint64 lanes holding 32-bit values), checked against the
    scalar core in test_philox_numpy_reference."""
    c0, c1 = q & M32, q >> np.uint64(32)
    c2 = np.full_like(q, sub)
    c3 = np.full_like(q, word)
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0)), p1 & M32, \
            ((p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1)), p0 & M32
        k0 = (k0 + 0x9E3779B9) & 0xFFFFFFFF
        k1 = (k1 + 0xBB67AE85) & 0xFFFFFFFF
    return c0 | (c1 << np.uint64(32)), c2 | (c3 << np.uint64(32))


def test_philox_numpy_reference():
    q = np.array([0, 1, 2**32 + 7, 2**40 + 3], dtype=np.uint64)
    w0, w1 = _philox_np(q, 5, 77, 123, 456)
    for j, qq in enumerate(q.tolist()):
        x = C.philox4x32_10([qq & 0xFFFFFFFF, qq >> 32, 5, 77], 123, 456)
        assert int(w0[j]) == x[0] | (x[1] << 32) and int(w1[j]) == x[2] | (x[3] << 32)


def _fine(w):
    return ((w & np.uint64(2**63 - 1)).astype(np.float64) + 0.5) * 2.0**-63


def _sign(w):
    return np.where((w >> np.uint64(63)) == 1, -1.0, 1.0)


def _expected_pair(kind, scale, w0, w1):
    """Exact inverse-CDF transforms of the documented designs, computed in numpy from the bits."""
    out = np.empty(2 * w0.size)
    if kind == "gaussian":
        r = np.sqrt(-2.0 * np.log(_fine(w0))) * scale
        k = ((w1 >> np.uint64(9)) & np.uint64(2**53 - 1)).astype(np.float64)
        d = ((k + 0.5) * 2.0**-53 - 0.5) * (np.pi / 2)
        theta = (w1 >> np.uint64(62)).astype(np.float64) * (np.pi / 2) + d
        out[0::2], out[1::2] = r * np.cos(theta), r * np.sin(theta)
        return out
    for j, w in enumerate((w0, w1)):
        if kind == "uniform":
            x = ((w >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
        elif kind == "exponential":
            x = -scale * np.log(_fine(w))
        elif kind == "laplace":
            x = _sign(w) * -scale * np.log(_fine(w))
        elif kind == "logistic":
            v = 0.5 * _fine(w)
            x = _sign(w) * scale * (np.log1p(-v) - np.log(v))
        else:  # cauchy: gamma cot(pi u / 2)
            x = _sign(w) * scale / np.tan(np.pi / 2 * _fine(w))
        out[j::2] = x
    return out


@pytest.mark.parametrize("target", sampling.simd_targets())
@pytest.mark.parametrize("kind, scale", [("uniform", 1.0), ("exponential", 2.0), ("laplace", 1.5),
                                         ("gaussian", 2.0), ("cauchy", 0.5), ("logistic", 0.7)])
def test_pair_transforms_value_by_value(kind, scale, target):
    """Every value equals the documented inverse-CDF transform of its own 64 random bits
    (relative error <= 1e-13, absolute 1e-13 scale near 0). Over 2^20 values the smallest
    uniform is ~2^-20, so the deepest sampled tails are checked value by value too."""
    sampling.set_simd_target(target)
    k0, k1, word, n = 0x1234, 0xABCDEF, 99, 1 << 20
    code = sampling.KINDS[kind][0]
    out = np.empty(n)
    C.fill_f64(code, scale, 0.0, k0, k1, word, 0, out)
    w0, w1 = _philox_np(np.arange(n // 2, dtype=np.uint64), 0, word, k0, k1)
    np.testing.assert_allclose(out, _expected_pair(kind, scale, w0, w1), rtol=1e-13, atol=1e-13 * scale)


@pytest.mark.parametrize("target", sampling.simd_targets())
@pytest.mark.parametrize("nu", [3.5, 0.3])
def test_student_t_bailey_value_by_value(nu, target):
    """Value i = Bailey's polar transform of its first accepted attempt (i, a): U, V uniform on
    (-1, 1), W = U^2 + V^2 < 1, T = U sqrt(nu (W^(-2/nu) - 1) / W) (relative error <= 1e-12)."""
    sampling.set_simd_target(target)
    k0, k1, word, n, scale = 77, 88, 5, 1 << 16, 1.3
    out = np.empty(n)
    C.fill_f64(5, nu, scale, k0, k1, word, 0, out)
    ref = np.empty(n)
    idx = np.arange(n, dtype=np.uint64)
    att = 0
    while idx.size:
        w0, w1 = _philox_np(idx, att, word, k0, k1)
        u = 2.0 * (((w0 >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53) - 1.0
        v = 2.0 * (((w1 >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53) - 1.0
        w = u * u + v * v
        ok = w < 1.0
        with np.errstate(all="ignore"):
            t = u * np.sqrt(nu * np.expm1(-2.0 / nu * np.log(w)) / w) * scale
        ref[idx[ok].astype(np.int64)] = t[ok]
        idx = idx[~ok]
        att += 1
    finite = np.isfinite(ref)
    assert np.array_equal(np.isfinite(out), finite)
    np.testing.assert_allclose(out[finite], ref[finite], rtol=1e-12)


def test_stream_layout_tags_are_pinned():
    """The counter-word layout tags come from the C++ enum sampling::Layout; they are part of the
    stream format (a changed tag changes every released value of that family), so pin them."""
    from puffer import _core
    from puffer.partial import _streams
    from puffer.sampling import _LAYOUT, _LAYOUT_SHIFT, KINDS

    assert _LAYOUT_SHIFT == 30
    tags = {name: _LAYOUT[code] for name, (code, _) in KINDS.items()}
    assert tags == {"uniform": 0, "exponential": 0, "laplace": 0, "gaussian": 0, "cauchy": 0,
                    "logistic": 0, "student_t": 1, "gen_cauchy": 1, "gen_gaussian": 2}
    assert _streams._TAG == 3 << 30 == int(_core.sampling.Layout.partial_value) << 30
