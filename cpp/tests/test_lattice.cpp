// GoogleTests of the exact lattice samplers (sampling/lattice.hpp) and their fixed-point helper
// (sampling/bigfix.hpp): arithmetic against exact 128-bit integers, error bounds that hold, the
// SIMD lattice words against the scalar ChaCha20 reference, the table path against the exact
// path, and ties (a uniform whose 63 bits equal a threshold's floor) settled exactly.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "sampling/bigfix.hpp"
#include "sampling/keyed_stream.hpp"
#include "sampling/lattice.hpp"
#include "sampling/samplers.hpp"

namespace {
namespace ps = puffer::sampling;
using u128 = unsigned __int128;

// a 1-fraction-limb Fix of a 64-bit fraction v 2^-64 times 2^64 is v: the exact 128-bit product
// of two 64-bit fractions, floored to 64 bits, is (a b) >> 64
TEST(BigFix, ProductsAreFloorsOfTheExactProducts) {
  std::mt19937_64 g(7);
  for (int i = 0; i < 2000; ++i) {
    const std::uint64_t a = g(), b = g();
    const ps::Fix x = ps::fix_frac64(a, 1), y = ps::fix_frac64(b, 1);
    bool exact = false;
    const ps::Fix p = ps::mul_floor(x, y, &exact);
    EXPECT_EQ(p.l[0], std::uint64_t((u128(a) * b) >> 64));
    EXPECT_EQ(p.l[1], 0u);
    EXPECT_EQ(exact, std::uint64_t(u128(a) * b) == 0);
    // at 2 fraction limbs the product is exact
    const ps::Fix p2 = ps::mul_floor(ps::fix_frac64(a, 2), ps::fix_frac64(b, 2), &exact);
    EXPECT_TRUE(exact);
    EXPECT_EQ(p2.l[1], std::uint64_t((u128(a) * b) >> 64));
    EXPECT_EQ(p2.l[0], std::uint64_t(u128(a) * b));
  }
}

TEST(BigFix, PowersStayWithinTheirErrorBounds) {
  // s^e at 1 fraction limb (errors of many ulps) against s^e at 12 limbs (exact for e <= 6:
  // 64 e bits) and against the 3-limb power with its own bound
  std::mt19937_64 g(11);
  for (int i = 0; i < 200; ++i) {
    const std::uint64_t S = g() | (std::uint64_t(1) << 63);
    for (std::uint64_t e : {1ull, 2ull, 3ull, 5ull, 6ull, 37ull, 1000ull, 123457ull}) {
      std::uint64_t err_hi = 0, err_lo = 0;
      const ps::Fix hi = ps::pow_floor(ps::fix_frac64(S, 12), e, err_hi);
      if (e <= 6) EXPECT_EQ(err_hi, 0u) << "exact at 64 e bits";
      const ps::Fix lo = ps::pow_floor(ps::fix_frac64(S, 3), e, err_lo);
      // lo <= s^e <= lo + err_lo ulps, with s^e >= hi (a lower bound too)
      const ps::Fix lo12 = ps::fix_resize(lo, 12);
      EXPECT_LE(ps::cmp(lo12, ps::add_ulps(hi, err_hi)), 0);
      const ps::Fix up = ps::fix_resize(ps::add_ulps(lo, err_lo + 1), 12);  // +1: the truncation of hi
      EXPECT_GE(ps::cmp(up, hi), 0);
    }
  }
}

TEST(BigFix, ReciprocalAndSmallDivision) {
  // 1/3 = 0.5555... (hex): floor to 2 limbs; 1/1 = 1 (the quotient bit beyond the limbs is refused)
  const ps::Fix three = ps::fix_int(3, 2);
  const ps::Fix r = ps::recip_floor(three);
  EXPECT_EQ(r.l[2], 0u);
  EXPECT_EQ(r.l[1], 0x5555555555555555ull);
  EXPECT_EQ(r.l[0], 0x5555555555555555ull);
  const ps::Fix d = ps::div_small_floor(ps::fix_int(1, 2), 3);
  EXPECT_EQ(ps::cmp(d, r), 0);
  EXPECT_EQ(ps::cmp(ps::recip_floor(ps::fix_int(1, 2)), ps::fix_int(1, 2)), 0);
  EXPECT_THROW(ps::recip_floor(ps::fix_frac64(std::uint64_t(1) << 63, 2)), std::runtime_error);  // 1/2 < 1
  EXPECT_EQ(ps::floor_scaled(ps::fix_frac64(0xF000000000000001ull, 2), 4), 0xFull);
}

ps::LatticeLaw laplace_law(double beta) {
  // s = exp(-1/(2 beta)), rounded up to 64 bits (a test law: the Python layer rounds exactly)
  const long double s = std::exp(-0.5L / (long double)beta);
  return {0, std::uint64_t(s * 0x1p64L) + 1};
}
ps::LatticeLaw gaussian_law(double sigma) {
  const long double w = std::exp(-0.5L / ((long double)sigma * sigma));
  return {1, std::uint64_t(w * 0x1p64L) + 1};
}

TEST(Lattice, SimdWordsAreTheScalarReferenceOnEveryTarget) {
  ps::KeyedKey k;
  for (std::uint32_t i = 0; i < 8; ++i) k.key[i] = 0x01010101u * (i + 3);
  k.word = 5;
  const std::uint64_t j0 = (std::uint64_t(1) << 32) - 5;  // crosses the w12 -> w13 carry
  const std::size_t nb = 13;
  for (const auto& t : ps::simd_targets()) {
    ps::set_simd_target(t);
    std::vector<std::uint64_t> w(8 * nb);
    std::vector<double> h(8 * nb);
    ps::keyed_lattice_fill(k, j0, nb, w.data(), h.data(), -2.0);
    for (std::size_t b = 0; b < nb; ++b) {
      const auto ref = ps::keyed_lattice_words(k, j0 + b);
      for (std::size_t i = 0; i < 8; ++i) {
        ASSERT_EQ(w[8 * b + i], ref[i]) << t;
        const double u = (double(ref[i] & 0x7FFFFFFFFFFFFFFFull) + 0.5) * 0x1p-63;
        EXPECT_NEAR(h[8 * b + i], -2.0 * std::log(u), 1e-12 * std::fabs(std::log(u)) + 1e-12) << t;
      }
    }
  }
  ps::set_simd_target("auto");
}

TEST(Lattice, TablePathAgreesWithTheExactPath) {
  std::mt19937_64 g(3);
  for (const auto& law : {laplace_law(0.3), laplace_law(7.5), laplace_law(1025.0), laplace_law(3.0e6),
                          gaussian_law(0.4), gaussian_law(3.0), gaussian_law(120.0)}) {
    // (the Gaussian's exact path sums the series once per comparison: fewer draws there)
    const int draws = law.family == 0 ? 300 : 40;
    for (int i = 0; i < draws; ++i) {
      // uniforms spread over all binades (the tails matter)
      const std::uint64_t u = (g() & 0x7FFFFFFFFFFFFFFFull) >> (g() % 63);
      const std::vector<std::uint64_t> extra{g(), g(), g(), g(), g(), g()};
      const std::int64_t exact = ps::lattice_magnitude_for_tests(law, u, extra, false, 0);
      // the table path from a wrong hint still finds it (or says it cannot decide: u == 0 or a tie)
      for (std::int64_t hint : {std::int64_t(0), exact, exact + 3, std::int64_t(1) << 40}) {
        const std::int64_t fast = ps::lattice_magnitude_for_tests(law, u, extra, true, hint);
        if (fast >= 0) EXPECT_EQ(fast, exact) << "family " << law.family << " u " << u << " hint " << hint;
      }
    }
  }
}

TEST(Lattice, TiesAreSettledByTheFollowingWords) {
  // u equal to floor(2^63 TH(n)): 63 bits cannot say whether U < TH(n); the exact path reads the
  // next words. With all-zero next words U is just above floor/2^63 <= TH(n) (so |Z| >= n iff
  // the floor is not exact); with all-ones U is just below the next step, above TH(n).
  for (const auto& law : {gaussian_law(2.0), gaussian_law(50.0)}) {
    const auto t = ps::lattice_tables(law);
    for (std::size_t n = 1; n + 1 < t->T63.size(); n += 1 + t->T63.size() / 40) {
      const std::uint64_t f = t->T63[n];
      if (f == 0) continue;
      EXPECT_EQ(ps::lattice_magnitude_for_tests(law, f, {0, 0, 0, 0}, true, std::int64_t(n)), -1);
      // TH(n) is irrational here: 2^63 TH(n) in (f, f + 1), so U = f 2^-63 exactly is below it
      EXPECT_GE(ps::lattice_magnitude_for_tests(law, f, {0, 0, 0, 0, 0, 0}, false, 0), std::int64_t(n));
      const std::uint64_t ones = ~std::uint64_t(0);
      EXPECT_LT(ps::lattice_magnitude_for_tests(law, f, {ones, ones, ones, ones, ones, ones}, false, 0),
                std::int64_t(n));
      // one step off the floor the table decides alone (unless that step is the next floor)
      if (f - 1 > t->T63[n + 1])
        EXPECT_GE(ps::lattice_magnitude_for_tests(law, f - 1, {}, true, std::int64_t(n)), std::int64_t(n));
      if (n == 1 || f + 1 < t->T63[n - 1])
        EXPECT_LT(ps::lattice_magnitude_for_tests(law, f + 1, {}, true, std::int64_t(n)), std::int64_t(n));
    }
  }
}

TEST(Lattice, KeyedNoiseDependsOnThePositionAlone) {
  ps::KeyedKey k;
  k.key[0] = 42;
  const auto law = laplace_law(1025.0);
  const std::size_t n = 70000;
  std::vector<std::int64_t> all(n), part(n - 1001), one(n);
  ps::lattice_keyed_int(law, k, 1000, n, all.data(), 0);
  ps::lattice_keyed_int(law, k, 2001, n - 1001, part.data(), 1);
  for (std::size_t i = 0; i < part.size(); ++i) ASSERT_EQ(part[i], all[i + 1001]);
  ps::lattice_keyed_int(law, k, 1000, n, one.data(), 1);
  EXPECT_EQ(one, all);
  k.word = 1;  // another word: other noise
  ps::lattice_keyed_int(law, k, 1000, n, one.data(), 0);
  std::size_t same = 0;
  for (std::size_t i = 0; i < n; ++i) same += one[i] == all[i];
  EXPECT_LT(same, n / 100);
}

TEST(Lattice, AddSnapsAndRefusesValuesBeyondTheExactRange) {
  ps::KeyedKey k;
  const auto law = laplace_law(4.0);
  std::vector<double> x{0.0, 0.3, -1.25, 2.5, 3.5}, out(x.size());
  std::vector<std::int64_t> z(x.size());
  ps::lattice_keyed_add_f64(law, -1, k, 10, x.size(), x.data(), out.data(), 1);
  ps::lattice_keyed_int(law, k, 10, x.size(), z.data(), 1);
  const double snapped[] = {0.0, 1.0, -2.0, 5.0, 7.0};  // round half to even of x / 0.5
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(out[i], (snapped[i] + double(z[i])) * 0.5);
  std::vector<double> big{1.0, 0x1p52};  // 2^53 lattice steps of 2^-1: beyond 2^52
  EXPECT_THROW(ps::lattice_keyed_add_f64(law, -1, k, 0, 2, big.data(), big.data(), 1), std::invalid_argument);
  EXPECT_EQ(big[0], 1.0);  // nothing written
  EXPECT_THROW(ps::validate_lattice({0, 0}), std::invalid_argument);
  EXPECT_THROW(ps::validate_lattice({2, 1}), std::invalid_argument);
  EXPECT_THROW(ps::validate_lattice(laplace_law(1e11)), std::invalid_argument);
}

}  // namespace
