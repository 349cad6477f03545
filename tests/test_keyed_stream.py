"""Keyed ChaCha20 noise streams (puffer.sampling.KeyedStream, puffer.io.release_stream).

Oracles: a pure-Python RFC 8439 block function written here (checked on the RFC's own vector),
hmac/hashlib for the subkey, scipy.stats for the laws.

Statistics (n = 10^6 per law): Kolmogorov-Smirnov and a 16-bin Pearson chi^2 (bin edges at exact
quantiles) at level ALPHA = 1e-4 each (false-alarm rate 1e-4 per check). Power against a 3 %
scale error: sup|F - F_1.03| is 0.0054 (Laplace) and 0.0070 (Gaussian), the KS critical value
at n = 10^6 is 0.0022, so by the DKW inequality a miss has probability < 2 exp(-2 n 0.0032^2)
< 1e-8; the chi^2 noncentrality under a 3 % error exceeds 150 (critical value 42.3 at 15 df).
The tests assert the rejection of the mis-scaled law on the same sample.
"""
from __future__ import annotations

import hashlib
import hmac
import math
import pickle
import struct

import numpy as np
import pytest
from scipy import stats

import puffer
from puffer import sampling
from puffer.errors import ParameterError, ParameterTypeError
from puffer.io import release_stream
from puffer.publish.keys import as_key

C = puffer._core.sampling
ALPHA = 1e-4
N = 1_000_000
PROBS = np.array([1e-5, 1e-4, 1e-3, 1e-2, 0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95, 0.99, 0.999, 0.9999, 0.99999])
KEY = bytes(range(32))  # the RFC 8439 test key (a raw stream key, not a release key)
RELEASE_KEY = hashlib.sha256(b"puffer test release key").digest()  # as_key refuses bytes(range(32)): weak
NONCE_A, NONCE_B = "00" * 15 + "01", "00" * 15 + "02"


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF


def _chacha20_block(key: bytes, counter: int, nonce: tuple[int, int, int]) -> list[int]:
    """RFC 8439 section 2.3, written from the RFC (independent of the C++ core)."""
    s = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *struct.unpack("<8I", key), counter, *nonce]
    x = list(s)

    def qr(a: int, b: int, c: int, d: int) -> None:
        x[a] = (x[a] + x[b]) & 0xFFFFFFFF; x[d] = _rotl(x[d] ^ x[a], 16)  # noqa: E702
        x[c] = (x[c] + x[d]) & 0xFFFFFFFF; x[b] = _rotl(x[b] ^ x[c], 12)  # noqa: E702
        x[a] = (x[a] + x[b]) & 0xFFFFFFFF; x[d] = _rotl(x[d] ^ x[a], 8)  # noqa: E702
        x[c] = (x[c] + x[d]) & 0xFFFFFFFF; x[b] = _rotl(x[b] ^ x[c], 7)  # noqa: E702

    for _ in range(10):
        qr(0, 4, 8, 12); qr(1, 5, 9, 13); qr(2, 6, 10, 14); qr(3, 7, 11, 15)  # noqa: E702
        qr(0, 5, 10, 15); qr(1, 6, 11, 12); qr(2, 7, 8, 13); qr(3, 4, 9, 14)  # noqa: E702
    return [(a + b) & 0xFFFFFFFF for a, b in zip(x, s)]


def _pair_words(key: bytes, word: int, block: int) -> list[int]:
    """The documented pair layout: (w12, w13, w14, w15) = (block lo, block hi, 0, word)."""
    x = _chacha20_block(key, block & 0xFFFFFFFF, (block >> 32, 0, word))
    return [x[2 * k] | (x[2 * k + 1] << 32) for k in range(8)]


def test_reference_block_is_the_rfc_vector():
    out = _chacha20_block(KEY, 1, (0x09000000, 0x4A000000, 0))
    assert out == [0xE4E7F110, 0x15593BD1, 0x1FDD0F50, 0xC47120A3, 0xC7F4D1C7, 0x0368C033, 0x9AAA2204, 0x4E6CD4C3,
                   0x466482D2, 0x09AA9F07, 0x05D7C214, 0xA2028BD9, 0xD19C12B5, 0xB94E16DE, 0xE883D0CB, 0x4E3C50A2]
    # and the core's rejection-layout block of the same inputs (tag 1, attempt 0x0a000000)
    w = C.keyed_reject_words(KEY, 0, 1, 1 | (0x09000000 << 32), 0x0A000000)
    assert w[0] == out[0] | (out[1] << 32) and w[7] == out[14] | (out[15] << 32)


def test_release_stream_known_answer():
    """First values of a release stream = the documented subkey + block layout, computed here."""
    key, nonce = as_key(RELEASE_KEY), NONCE_A
    sub = hmac.new(RELEASE_KEY, b"puffer/v2/stream\x00" + bytes.fromhex(nonce) + b"\x00" + b"kwh", hashlib.sha256).digest()
    st = release_stream(key, nonce, "kwh")
    assert isinstance(st, sampling.KeyedStream)
    u = sampling.draw("uniform", None, 40, rng=st)
    words = [w for b in range(5) for w in _pair_words(sub, 0, b)]
    assert u.tolist() == [((w >> 11) + 0.5) * 2.0 ** -53 for w in words]
    assert C.keyed_pair_words(sub, 0, 3) == _pair_words(sub, 0, 3)
    # Laplace: sign from bit 63, magnitude -b log((k + 1/2) 2^-63) of the low 63 bits
    lap = sampling.draw("laplace", {"b": 2.0}, 40, rng=release_stream(key, nonce, "kwh"))
    ref = [(-1.0 if w >> 63 else 1.0) * -2.0 * math.log(((w & (2**63 - 1)) + 0.5) * 2.0**-63) for w in words]
    assert np.allclose(lap, ref, rtol=1e-14, atol=0)


def test_positions_past_a_block_boundary_and_far_away():
    sub = bytes(range(1, 33))
    st = sampling.KeyedStream(sub, word=5)
    st.position = (1 << 35) - 11  # block index crosses 2^32 (carry into the second counter word)
    u = sampling.draw("uniform", None, 30, rng=st)
    first = (1 << 35) - 11
    ref = [((_pair_words(sub, 5, i // 8)[i % 8] >> 11) + 0.5) * 2.0 ** -53 for i in range(first, first + 30)]
    assert u.tolist() == ref


@pytest.mark.parametrize("kind,params", [("laplace", {"b": 1.5}), ("gaussian", {"sigma": 2.0}),
                                         ("student_t", {"nu": 3.0, "scale": 1.0}),
                                         ("gen_gaussian", {"beta": 0.7, "scale": 1.0})])
def test_bitwise_equal_across_threads_and_batches(kind, params):
    x = np.linspace(-5.0, 5.0, 100_003)
    st = lambda: release_stream(as_key(RELEASE_KEY), NONCE_A, "x")  # noqa: E731
    ref = puffer.add_noise(x, (kind, params), rng=st(), threads=1)
    assert np.array_equal(ref, puffer.add_noise(x, (kind, params), rng=st(), threads=2))
    assert np.array_equal(ref, puffer.add_noise(x, (kind, params), rng=st(), threads=2, chunk=997))
    s = st()  # three consecutive draws from one stream = one draw of the whole column
    parts = [puffer.add_noise(x[a:b], (kind, params), rng=s) for a, b in ((0, 5), (5, 70_001), (70_001, x.size))]
    assert np.array_equal(ref, np.concatenate(parts))
    # float32: the float32 value plus the double noise, rounded once
    noise = sampling.draw(kind, params, x.size, rng=st())
    x32 = x.astype(np.float32)
    f32 = puffer.add_noise(x32, (kind, params), rng=st(), threads=2)
    assert np.array_equal(f32, (x32.astype(np.float64) + noise).astype(np.float32))


def _chi2(x: np.ndarray, law) -> float:
    edges = np.concatenate(([-np.inf], law.ppf(PROBS), [np.inf]))
    counts = np.histogram(x, edges)[0]
    expected = N * np.diff(np.concatenate(([0.0], PROBS, [1.0])))
    return float(stats.chi2.sf(((counts - expected) ** 2 / expected).sum(), len(expected) - 1))


@pytest.mark.parametrize("kind,params,law", [
    ("laplace", {"b": 1.5}, lambda f: stats.laplace(scale=1.5 * f)),
    ("gaussian", {"sigma": 2.0}, lambda f: stats.norm(scale=2.0 * f)),
])
def test_keyed_laws(kind, params, law):
    x = sampling.draw(kind, params, N, rng=release_stream(as_key(RELEASE_KEY), NONCE_A, "stats"))
    assert stats.kstest(x, law(1.0).cdf).pvalue > ALPHA
    assert _chi2(x, law(1.0)) > ALPHA
    # power: the same sample rejects a 3 % scale error
    assert stats.kstest(x, law(1.03).cdf).pvalue < ALPHA
    assert _chi2(x, law(1.03)) < ALPHA


def test_two_nonces_give_independent_noise():
    """Under independence sqrt(n) * corr ~ N(0, 1): |corr| < 4.42 / sqrt(n) has false-alarm rate 1e-5.
    Power: a stream reused across nonces (corr 1) or shifted by one position (checked by the
    lag-1 cross-correlation) is rejected with certainty."""
    key = as_key(RELEASE_KEY)
    a = sampling.draw("gaussian", {"sigma": 1.0}, N, rng=release_stream(key, NONCE_A, "x"))
    b = sampling.draw("gaussian", {"sigma": 1.0}, N, rng=release_stream(key, NONCE_B, "x"))
    c = sampling.draw("gaussian", {"sigma": 1.0}, N, rng=release_stream(key, NONCE_A, "y"))
    bound = 4.42 / math.sqrt(N)
    for u, v in ((a, b), (a, c), (b, c)):
        assert abs(np.corrcoef(u, v)[0, 1]) < bound
        assert abs(np.corrcoef(u[1:], v[:-1])[0, 1]) < bound
        assert not np.any(u == v)
    # differences of two releases are not the differences of the true values (issue 23 item 2)
    x = np.arange(10.0)
    jan = puffer.add_noise(x, ("laplace", {"b": 1.0}), rng=release_stream(key, NONCE_A, "x"))
    feb = puffer.add_noise(x + 1.0, ("laplace", {"b": 1.0}), rng=release_stream(key, NONCE_B, "x"))
    assert not np.allclose(feb - jan, 1.0)


def test_pickle_repr_and_refusals():
    st = release_stream(as_key(RELEASE_KEY), NONCE_A, "x")
    st.position = 17
    st2 = pickle.loads(pickle.dumps(st))
    assert st2 == st and st2.position == 17
    assert np.array_equal(sampling.draw("laplace", {"b": 1.0}, 9, rng=st), sampling.draw("laplace", {"b": 1.0}, 9, rng=st2))
    assert "secret" in repr(st) and st._key.hex() not in repr(st)
    with pytest.raises(ParameterError, match="32 secret bytes"):
        sampling.KeyedStream(b"short")
    with pytest.raises(ParameterTypeError):
        sampling.KeyedStream("0" * 32)  # type: ignore[arg-type]
    with pytest.raises(ParameterTypeError, match="KeyedStream"):  # Philox-only paths refuse it
        sampling.as_stream(st)
    with pytest.raises(ParameterError):
        C.keyed_reject_words(KEY, 0, 3, 0, 0)


def test_student_t_values_follow_the_documented_rejection_layout():
    """Value i = first accepted attempt a of the blocks (i, w14 = 1 << 30 | a): Bailey's polar
    method on (W_0, W_1), recomputed here from the core's scalar block words."""
    sub, nu, scale = bytes(range(7, 39)), 3.0, 1.5
    x = sampling.draw("student_t", {"nu": nu, "scale": scale}, 200, rng=sampling.KeyedStream(sub, word=9))
    rejected = 0
    for i in range(200):
        for a in range(100):
            w = C.keyed_reject_words(sub, 9, 1, i, a)
            u = 2.0 * (((w[0] >> 11) + 0.5) * 2.0 ** -53) - 1.0
            v = 2.0 * (((w[1] >> 11) + 0.5) * 2.0 ** -53) - 1.0
            ww = u * u + v * v
            if ww < 1.0:
                break
            rejected += 1
        t = u * math.sqrt(math.expm1(-2.0 / nu * math.log(ww))) / math.sqrt(ww) * scale * math.sqrt(nu)
        assert x[i] == pytest.approx(t, rel=1e-12), i
    assert rejected > 10  # the retry path was exercised (acceptance pi/4: ~43 rejections expected)


@pytest.mark.parametrize("kind,params,law", [
    ("student_t", {"nu": 3.5, "scale": 1.2}, lambda f: stats.t(3.5, scale=1.2 * f)),
    ("gen_gaussian", {"beta": 1.5, "scale": 0.8}, lambda f: stats.gennorm(1.5, scale=0.8 * f)),
])
def test_keyed_rejection_laws(kind, params, law):
    """KS at ALPHA on 10^6 values; power against a 3 % scale error as in tests/test_sampling_stats.py
    (sup|F - F_1.03| >= 0.0048 for these laws vs the critical value 0.0022), asserted on the sample."""
    x = sampling.draw(kind, params, N, rng=release_stream(as_key(RELEASE_KEY), NONCE_B, "stats"))
    assert stats.kstest(x, law(1.0).cdf).pvalue > ALPHA
    assert stats.kstest(x, law(1.03).cdf).pvalue < ALPHA
