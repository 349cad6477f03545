// GoogleTests of the keyed ChaCha20 noise streams (sampling/keyed_stream.hpp): the documented
// block layout against the RFC 8439 block vector and the scalar reference, and value i
// depending on (key, i) alone (any start, chunking, thread count).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "sampling/chacha20.hpp"
#include "sampling/keyed_stream.hpp"
#include "sampling/samplers.hpp"

namespace {
namespace ps = puffer::sampling;

ps::KeyedKey rfc_key() {
  ps::KeyedKey k;  // RFC 8439 section 2.3.2: key bytes 00 01 .. 1f
  for (std::uint32_t i = 0; i < 8; ++i)
    k.key[i] = (4 * i) | ((4 * i + 1) << 8) | ((4 * i + 2) << 16) | ((4 * i + 3) << 24);
  return k;
}

TEST(KeyedStream, RejectLayoutBlockIsTheRfc8439Vector) {
  // RFC 8439 2.3.2: counter 1, nonce (0x09000000, 0x4a000000, 0). In the keyed layout that is
  // value i = 1 | 0x09000000 << 32, w14 = 0x4a000000 = tag 1 << 30 | attempt 0x0a000000, word 0.
  const auto w = ps::keyed_reject_words(rfc_key(), 1, 1ull | (0x09000000ull << 32), 0x0a000000u);
  EXPECT_EQ(w[0], 0xe4e7f110ull | (0x15593bd1ull << 32));
  EXPECT_EQ(w[7] >> 32, 0x4e3c50a2ull);
}

TEST(KeyedStream, UniformValuesAreTheDocumentedWordsOfThePairLayout) {
  ps::KeyedKey k = rfc_key();
  k.word = 77;
  const auto p = ps::make_kernel_params(int(ps::Kind::Uniform), 0.0, 0.0);
  // around an ordinary offset and around the 2^32-block boundary (carry from w12 into w13)
  for (std::uint64_t start : {std::uint64_t(0), std::uint64_t(13), (std::uint64_t(1) << 35) - 200}) {
    const std::size_t n = 400;
    std::vector<double> out(n);
    ps::fill_keyed_f64(p, k, start, n, nullptr, out.data(), 1);
    for (std::size_t j = 0; j < n; ++j) {
      const std::uint64_t i = start + j;
      const std::uint64_t w = ps::keyed_pair_words(k, i / 8)[i % 8];
      ASSERT_EQ(out[j], (double(w >> 11) + 0.5) * 0x1p-53) << "value " << i;
    }
  }
}

TEST(KeyedStream, LaplaceValuesFollowTheDocumentedTransform) {
  const ps::KeyedKey k = rfc_key();
  const auto p = ps::make_kernel_params(int(ps::Kind::Laplace), 2.5, 0.0);
  std::vector<double> out(256);
  ps::fill_keyed_f64(p, k, 1000, out.size(), nullptr, out.data(), 1);
  for (std::size_t j = 0; j < out.size(); ++j) {
    const std::uint64_t i = 1000 + j;
    const std::uint64_t w = ps::keyed_pair_words(k, i / 8)[i % 8];
    const double u = (double(w & 0x7FFFFFFFFFFFFFFFull) + 0.5) * 0x1p-63;
    const double x = -2.5 * std::log(u) * ((w >> 63) ? -1.0 : 1.0);
    ASSERT_NEAR(out[j], x, 1e-14 * std::fabs(x) + 1e-300) << "value " << i;
  }
}

TEST(KeyedStream, ValueDependsOnlyOnKeyAndIndex) {
  const ps::KeyedKey k = rfc_key();
  const int kinds[] = {int(ps::Kind::Laplace), int(ps::Kind::Gaussian), int(ps::Kind::StudentT),
                       int(ps::Kind::GenGaussian), int(ps::Kind::Cauchy)};
  for (int kind : kinds) {
    const double p0 = kind == int(ps::Kind::GenGaussian) ? 0.7 : 1.5;
    const auto p = ps::make_kernel_params(kind, p0, 2.0);
    const std::size_t n = 100003;  // several 2^15 tasks and a ragged end
    std::vector<double> ref(n), thr(n), chunked(n, 0.0);
    ps::fill_keyed_f64(p, k, 5, n, nullptr, ref.data(), 1);
    ps::fill_keyed_f64(p, k, 5, n, nullptr, thr.data(), 3);
    for (std::size_t lo = 0; lo < n;) {  // odd chunk sizes, values added to an input
      const std::size_t len = std::min<std::size_t>(n - lo, 1 + (lo * 7919) % 997);
      ps::fill_keyed_f64(p, k, 5 + lo, len, chunked.data() + lo, chunked.data() + lo, 2);
      lo += len;
    }
    for (std::size_t j = 0; j < n; ++j) {
      ASSERT_EQ(ref[j], thr[j]) << "kind " << kind << " value " << j;
      ASSERT_EQ(ref[j], chunked[j]) << "kind " << kind << " value " << j;
      ASSERT_TRUE(std::isfinite(ref[j]));
    }
    // float32: the double value rounded once
    std::vector<float> f(n);
    ps::fill_keyed_f32(p, k, 5, n, nullptr, f.data(), 2);
    for (std::size_t j = 0; j < n; ++j) ASSERT_EQ(f[j], float(ref[j]));
  }
}

TEST(KeyedStream, KeysAndWordsSeparateStreams) {
  ps::KeyedKey a = rfc_key(), b = rfc_key(), c = rfc_key();
  b.key[7] ^= 1u;
  c.word = 1;
  const auto p = ps::make_kernel_params(int(ps::Kind::Uniform), 0.0, 0.0);
  std::vector<double> xa(64), xb(64), xc(64);
  ps::fill_keyed_f64(p, a, 0, 64, nullptr, xa.data(), 1);
  ps::fill_keyed_f64(p, b, 0, 64, nullptr, xb.data(), 1);
  ps::fill_keyed_f64(p, c, 0, 64, nullptr, xc.data(), 1);
  int same_b = 0, same_c = 0;
  for (int i = 0; i < 64; ++i) {
    same_b += xa[i] == xb[i];
    same_c += xa[i] == xc[i];
  }
  EXPECT_EQ(same_b, 0);
  EXPECT_EQ(same_c, 0);
}

}  // namespace
