// GoogleTest unit tests of the C++ kernels' edge cases (issue 10): the contracts stated in the
// headers, checked below the Python facade (so they also run under ASan/UBSan/TSan builds).
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "common/errors.hpp"
#include "common/modp.hpp"
#include "common/parallel.hpp"
#include "models/poisson_binomial.hpp"
#include "renyi/renyi.hpp"
#include "sampling/chacha20.hpp"
#include "sampling/samplers.hpp"
#include "sampling/secure.hpp"
#include "transport/transport.hpp"
#include "transport/w_inf_ranges.hpp"
#include <random>

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---------------------------------------------------------------- parallel_for
TEST(Parallel, EveryTaskOnceForAnyThreadCount) {
  for (unsigned threads : {0u, 1u, 2u, 3u, 8u, 64u, puffer::kMaxThreads}) {
    std::vector<std::atomic<int>> hits(1000);
    puffer::parallel_for(hits.size(), threads, [&](std::size_t t) { hits[t].fetch_add(1); });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "threads=" << threads;
  }
}

TEST(Parallel, ZeroTasksNeverCallsBody) {
  puffer::parallel_for(0, 4, [](std::size_t) { FAIL(); });
}

TEST(Parallel, ThreadsAboveTheMaximumAreRefused) {
  EXPECT_THROW(puffer::parallel_for(10, puffer::kMaxThreads + 1, [](std::size_t) {}), puffer::InvalidArgument);
}

TEST(Parallel, FirstExceptionIsRethrownAndPoolStaysUsable) {
  EXPECT_THROW(puffer::parallel_for(100, 4,
                                    [](std::size_t t) {
                                      if (t == 37) throw puffer::NumericalFailure("task 37");
                                    }),
               puffer::NumericalFailure);
  std::atomic<int> n{0};
  puffer::parallel_for(100, 4, [&](std::size_t) { n.fetch_add(1); });
  EXPECT_EQ(n.load(), 100);
}

TEST(Parallel, NestedCallsRunSerially) {
  std::atomic<int> n{0};
  puffer::parallel_for(8, 4, [&](std::size_t) { puffer::parallel_for(8, 4, [&](std::size_t) { n.fetch_add(1); }); });
  EXPECT_EQ(n.load(), 64);
}

// ---------------------------------------------------------------- modular certification
TEST(ModP, PrimalityAndRandomPrimesInRange) {
  using namespace puffer::modp;
  EXPECT_TRUE(is_prime(2305843009213693951ull));     // 2^61 - 1
  EXPECT_FALSE(is_prime(3215031751ull));             // strong pseudoprime to bases 2, 3, 5, 7
  EXPECT_FALSE(is_prime(1ull << 50));
  std::mt19937_64 rng(7);
  for (int r = 0; r < 20; ++r) {
    const u64 p = random_prime(rng);
    EXPECT_GE(p, 1ull << 49);
    EXPECT_LT(p, 1ull << 50);
    EXPECT_TRUE(is_prime(p));
  }
}

TEST(ModP, DoublesMapToTheirExactDyadicValues) {
  using namespace puffer::modp;
  std::mt19937_64 rng(11);
  const Field f(random_prime(rng));
  const u64 p = f.p;
  EXPECT_EQ(mul(f.of(0.5), 2, p), 1u);
  EXPECT_EQ(mul(f.of(5e-324), pow(2, 1074, p), p), 1u);              // 2^-1074
  EXPECT_EQ(mul(f.of(0.75), 4, p), 3u);
  EXPECT_EQ(f.of(3.0 * 0x1p-1000), mul(3, pow(f.inv2, 1000, p), p));
  // 0.1 + 0.2 != 0.3 exactly: the images differ, while 0.25 + 0.5 == 0.75 exactly
  EXPECT_NE(add(f.of(0.1), f.of(0.2), p), f.of(0.3));
  EXPECT_EQ(add(f.of(0.25), f.of(0.5), p), f.of(0.75));
}

TEST(Transport, RangeWalkIsExactWithKnownLevelsAndWidensOnUnknown) {
  using puffer::transport::LevelCmp;
  using puffer::transport::w_inf_ranges;
  // P = uniform on {0, 1}, Q = uniform on {1, 2}: levels 1/2, 1 and 1/2, 1 tie; W_inf = 1.
  const double x[] = {0.0, 1.0}, y[] = {1.0, 2.0}, F[] = {0.5, 1.0}, G[] = {0.5, 1.0};
  auto exact = [&](std::size_t u, std::size_t v) {
    return F[u] < G[v] ? LevelCmp::kLess : F[u] > G[v] ? LevelCmp::kGreater : LevelCmp::kEqual;
  };
  EXPECT_EQ(w_inf_ranges(x, 2, y, 2, exact), 1.0);
  // the middle levels of unknown order: (0, 2) and (1, 1) may be coupled, so 2 is the bound
  auto unknown = [&](std::size_t u, std::size_t v) {
    return (u == 0 && v == 0) ? LevelCmp::kUnknown : exact(u, v);
  };
  EXPECT_EQ(w_inf_ranges(x, 2, y, 2, unknown), 2.0);
  // the walk's pairs: exactly the two diagonal ones, and with (0, 0) unknown also (0, 1)
  std::vector<std::pair<std::size_t, std::size_t>> got;
  auto rec = [&](std::size_t u, std::size_t lo, std::size_t hi) {
    for (std::size_t v = lo; v <= hi; ++v) got.emplace_back(u, v);
  };
  puffer::transport::coupled_ranges(2, 2, exact, rec);
  EXPECT_EQ(got, (std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {1, 1}}));
  got.clear();
  puffer::transport::coupled_ranges(2, 2, unknown, rec);
  EXPECT_EQ(got, (std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {0, 1}, {1, 0}, {1, 1}}));
}

// ---------------------------------------------------------------- transport
TEST(Transport, IdenticalLawsHaveZeroDistance) {
  const double x[] = {0.0, 1.0, 5.0}, p[] = {0.25, 0.5, 0.25};
  EXPECT_EQ(puffer::transport::w_inf_1d(x, p, 3, x, p, 3), 0.0);
}

TEST(Transport, PointMassesAndZeroMassAtomsSkipped) {
  const double x[] = {2.0}, p[] = {1.0}, y[] = {-1.0, 5.5, 100.0}, q[] = {0.0, 1.0, 0.0};
  EXPECT_EQ(puffer::transport::w_inf_1d(x, p, 1, y, q, 3), 3.5);
}

TEST(Transport, BadInputsAreRefused) {
  const double x[] = {0.0, 1.0}, p[] = {0.5, 0.5}, bad[] = {0.5, 0.7}, unsorted[] = {1.0, 0.0};
  using puffer::InvalidArgument;
  using puffer::transport::w_inf_1d;
  EXPECT_THROW(w_inf_1d(x, p, 0, x, p, 2), InvalidArgument);              // empty law
  EXPECT_THROW(w_inf_1d(x, bad, 2, x, p, 2), InvalidArgument);            // mass 1.2
  EXPECT_THROW(w_inf_1d(unsorted, p, 2, x, p, 2), InvalidArgument);       // unsorted atoms
  EXPECT_THROW(w_inf_1d(x, p, 2, x, p, 2, 1e-15, kNaN), InvalidArgument); // NaN sum_tol
  EXPECT_THROW(w_inf_1d(x, p, 2, x, p, 2, 1e-15, kInf), InvalidArgument); // inf sum_tol
  EXPECT_THROW(w_inf_1d(x, p, 2, x, p, 2, kNaN), InvalidArgument);        // NaN rtol
}

TEST(Transport, BatchMatchesSingleCalls) {
  std::vector<double> x, p, y, q;
  std::vector<std::int64_t> op{0}, oq{0};
  for (int k = 0; k < 300; ++k) {
    for (int i = 0; i < 3; ++i) { x.push_back(i + 0.01 * k); p.push_back(1.0 / 3); }
    for (int i = 0; i < 2; ++i) { y.push_back(2.0 * i - 0.02 * k); q.push_back(0.5); }
    op.push_back(static_cast<std::int64_t>(x.size()));
    oq.push_back(static_cast<std::int64_t>(y.size()));
  }
  std::vector<double> out(300);
  puffer::transport::w_inf_1d_batch(x.data(), p.data(), op.data(), x.size(), y.data(), q.data(), oq.data(),
                                    y.size(), 300, out.data(), 4);
  for (int k = 0; k < 300; ++k)
    EXPECT_EQ(out[k], puffer::transport::w_inf_1d(x.data() + 3 * k, p.data() + 3 * k, 3, y.data() + 2 * k,
                                                  q.data() + 2 * k, 2));
}

// ---------------------------------------------------------------- Renyi kernel
TEST(Renyi, GaussianClosedFormIsRoundedUp) {
  using puffer::renyi::shift_divergence;
  for (double a : {1.0, 1.5, 2.0, 100.0})
    for (double u : {1e-8, 0.3, 1.0, 7.0}) {
      const double d = shift_divergence(0, {}, a, u);
      EXPECT_GE(d, a * u * u / 2 * (1 - 1e-16));
      EXPECT_LE(d, a * u * u / 2 * (1 + 1e-14));
    }
  EXPECT_EQ(shift_divergence(0, {}, 2.0, 0.0), 0.0);
  EXPECT_EQ(shift_divergence(0, {}, kInf, 1.0), kInf);  // no pure guarantee from Gaussian noise
}

TEST(Renyi, LaplaceInfiniteOrderIsTheShift) {
  EXPECT_GE(puffer::renyi::shift_divergence(1, {}, kInf, 2.5), 2.5);
  EXPECT_LE(puffer::renyi::shift_divergence(1, {}, kInf, 2.5), 2.5 * (1 + 1e-15));
}

TEST(Renyi, QuadratureAgreesWithClosedForm) {
  puffer::renyi::Shape gg;
  gg.beta = 1.0;  // generalized Gaussian beta = 1 is Laplace
  for (double a : {1.01, 2.0, 30.0})
    for (double u : {1e-3, 0.5, 4.0}) {
      const double closed = puffer::renyi::shift_divergence(1, {}, a, u);
      const double quad = puffer::renyi::shift_divergence(4, gg, a, u, /*force_quadrature=*/true);
      EXPECT_NEAR(quad, closed, 1e-9 * closed) << "alpha=" << a << " u=" << u;
    }
}

TEST(Renyi, BadArgumentsAreRefused) {
  using puffer::InvalidArgument;
  using puffer::renyi::shift_divergence;
  puffer::renyi::Shape t;
  t.k = 1.0;  // not normalisable
  t.nu = 1.0;
  EXPECT_THROW(shift_divergence(2, t, 2.0, 1.0), InvalidArgument);
  EXPECT_THROW(shift_divergence(0, {}, 0.5, 1.0), InvalidArgument);
  EXPECT_THROW(shift_divergence(0, {}, kNaN, 1.0), InvalidArgument);
  EXPECT_THROW(shift_divergence(0, {}, 2.0, -1.0), InvalidArgument);
  EXPECT_THROW(shift_divergence(0, {}, 2.0, kNaN), InvalidArgument);
  EXPECT_THROW(shift_divergence(9, {}, 2.0, 1.0), InvalidArgument);
}

TEST(Renyi, ShiftsBeyondTheFloatRangeAndBelowIt) {
  // issue 22: u = v / scale overflowing to inf is D = inf (was refused); u = 5e-324 for a
  // log-concave family is bounded by its value at 1e-300 (was "integrand vanished")
  using puffer::renyi::shift_divergence;
  puffer::renyi::Shape t, g;
  t.k = 4.0;
  t.nu = 3.0;
  g.beta = 1.5;
  EXPECT_EQ(shift_divergence(0, {}, 2.0, kInf), kInf);
  EXPECT_EQ(shift_divergence(1, {}, 2.0, kInf), kInf);
  EXPECT_EQ(shift_divergence(2, t, 2.0, kInf), kInf);
  EXPECT_EQ(shift_divergence(4, g, 1.0, kInf), kInf);
  const double d = shift_divergence(4, g, 2.0, 5e-324);
  EXPECT_GT(d, 0.0);
  EXPECT_LT(d, 1e-300);
  auto lp = [](const double* x, std::size_t n, double* out) {
    for (std::size_t i = 0; i < n; ++i) out[i] = -0.5 * x[i] * x[i] - 0.5 * std::log(2 * M_PI);
  };
  EXPECT_EQ(puffer::renyi::custom_shift_divergence(lp, true, 2.0, kInf, 1.0), kInf);
}

TEST(Renyi, CustomSpikeOfTheShiftedDensityIsSplit) {
  // issue 22: 0.99 N(0, 1) + 0.01 N(0, 0.01^2), spike declared with its fan of breakpoints; at
  // alpha = 2, u = 3 the spike of p(. - u) sat in the half line's rest region, where only the
  // largest break was kept: 8.989950910745206 against 8.990254310271763 (40-digit mpmath)
  auto lp = [](const double* x, std::size_t n, double* out) {
    for (std::size_t i = 0; i < n; ++i) {
      const double a = std::log(0.99) - 0.5 * x[i] * x[i];
      const double b = std::log(0.01) - 0.5 * (x[i] / 0.01) * (x[i] / 0.01) - std::log(0.01);
      out[i] = std::max(a, b) + std::log1p(std::exp(-std::fabs(a - b))) - 0.5 * std::log(2 * M_PI);
    }
  };
  std::vector<double> br{0.0};
  for (int j = 0; j < 7; ++j)
    for (double sg : {-1.0, 1.0}) br.push_back(sg * 0.01 * std::ldexp(1.0, j));
  std::sort(br.begin(), br.end());
  const double d = puffer::renyi::custom_shift_divergence(lp, true, 2.0, 3.0, 1.0, br.data(), br.size());
  EXPECT_GE(d, 8.990254310271763);
  EXPECT_LE(d, 8.990254310271763 * (1 + 1e-9));
}

TEST(Renyi, StudentDivergenceIncreasesWithShiftAndOrder) {
  puffer::renyi::Shape t;
  t.nu = 3.0;
  t.k = 4.0;
  double prev = 0.0;
  for (double u : {1e-6, 1e-3, 0.1, 1.0, 10.0, 1e3}) {
    const double d = puffer::renyi::shift_divergence(2, t, 2.0, u);
    EXPECT_GT(d, prev);
    EXPECT_LE(d, puffer::renyi::shift_divergence(2, t, 5.0, u));
    prev = d;
  }
}

TEST(Renyi, CustomDensityDeclaredPointsMatchBuiltIn) {
  // a user Gaussian, with declared breakpoints, equals the closed form
  auto lp = [](const double* x, std::size_t n, double* out) {
    for (std::size_t i = 0; i < n; ++i) out[i] = -0.5 * x[i] * x[i] - 0.5 * std::log(2 * M_PI);
  };
  const double d0 = puffer::renyi::custom_shift_divergence(lp, true, 2.0, 1.0, 1.0);
  const double br[] = {-3.0, 0.0, 0.5, 2.0};
  const double d1 = puffer::renyi::custom_shift_divergence(lp, false, 2.0, 1.0, 1.0, br, 4);
  EXPECT_NEAR(d0, 1.0, 1e-9);
  EXPECT_NEAR(d1, 1.0, 1e-9);
  EXPECT_GE(d1, 1.0 - 1e-15);
  const double bad[] = {kNaN};
  EXPECT_THROW(puffer::renyi::custom_shift_divergence(lp, false, 2.0, 1.0, 1.0, bad, 1), puffer::InvalidArgument);
}

TEST(Renyi, LargeShiftsAgainstClosedForms) {
  // issue 29: Cauchy alpha = 2 is log(1 + u^2/2); the peak at y = u/2 was narrower than ulp(u)
  // (ratio 0.712 at u = 9.6e19, 4e-53 at 1e100) until the fold was integrated in w = |y - u/2|
  puffer::renyi::Shape c;
  c.k = 2.0;
  c.nu = 1.0;
  for (double u : {3.0, 5.2e5, 5.2e12, 9.6e19, 1e100, 1e300}) {
    const double exact = u < 1e150 ? std::log1p(u * u / 2) : 2 * std::log(u) - std::log(2.0);
    const double d = puffer::renyi::shift_divergence(2, c, 2.0, u);
    EXPECT_GE(d, exact * (1 + 1e-15)) << u;  // the exact value's own rounding is below 1e-15
    EXPECT_LE(d, exact * (1 + 1e-11)) << u;
  }
  // tiny (alpha - 1) J: D = 2.5e-321 is subnormal, not the smallest subnormal
  EXPECT_GE(puffer::renyi::shift_divergence(2, c, 1.0 + 1e-9, 1e-160), 2.5e-321);
}

TEST(Renyi, GeneralizedGaussianBoundIsAboveTheDivergence) {
  // beta = 2 is N(0, 1/2): D_alpha = alpha u^2 exactly; the bound is above it (and exact-ish
  // for alpha -> 1); beta = 1.0001 at u = 1e300: 1.0715193052376e300 (mpmath), was 4.4e-323
  for (double a : {1.0, 1.01, 2.0, 100.0})
    for (double u : {0.5, 10.0, 1e6}) {
      const double b = puffer::renyi::gengauss_shift_bound(2.0, a, u);
      EXPECT_GE(b, a * u * u) << a << " " << u;
    }
  EXPECT_LE(puffer::renyi::gengauss_shift_bound(2.0, 1.0, 1e6), 1e12 * (1 + 1e-5));
  const double t = 1.0715193052376e300;
  EXPECT_GE(puffer::renyi::gengauss_shift_bound(1.0001, 1.01, 1e300), t * (1 - 1e-13));
  EXPECT_LE(puffer::renyi::gengauss_shift_bound(1.0001, 1.01, 1e300), t * (1 + 1e-12));
  puffer::renyi::Shape g;
  g.beta = 1.0001;
  EXPECT_GE(puffer::renyi::shift_divergence(4, g, 1.01, 1e300), t * (1 - 1e-13));
  EXPECT_THROW(puffer::renyi::gengauss_shift_bound(1.0, 2.0, 1.0), puffer::InvalidArgument);
}

TEST(Renyi, LipschitzCertificateOnAComb) {
  // issue 29: e^{-|x|} (1 + 0.9 cos 20x) / Z, L = 1 + 18 / sqrt(0.19); alpha = 100, v = 0.05:
  // 1.7449326471 (mpmath); adaptive Gauss-Kronrod gave 1.681
  const double Z = 2.0 * (1.0 + 0.9 / 401.0), L = 1.0 + 18.0 / std::sqrt(0.19);
  auto lp = [&](const double* x, std::size_t n, double* out) {
    for (std::size_t i = 0; i < n; ++i) out[i] = -std::fabs(x[i]) + std::log1p(0.9 * std::cos(20 * x[i])) - std::log(Z);
  };
  const double d = puffer::renyi::custom_shift_divergence_lipschitz(lp, 100.0, 0.05, L * (1 + 1e-12), 1.0);
  EXPECT_GE(d, 1.7449326471);
  EXPECT_LE(d, 1.7449326471 * (1 + 1e-3));
  // a claim below the true L is an error
  EXPECT_THROW(puffer::renyi::custom_shift_divergence_lipschitz(lp, 100.0, 0.05, 0.5 * L, 1.0),
               puffer::InvalidArgument);
}

// ---------------------------------------------------------------- samplers
TEST(Samplers, StudentParametersBeyondTheFloatRangeAreRefused) {
  using puffer::sampling::make_kernel_params;
  EXPECT_THROW(make_kernel_params(5, 1e-6, 1.0), puffer::InvalidArgument);
  EXPECT_THROW(make_kernel_params(5, 0.04, 1.0), puffer::InvalidArgument);
  EXPECT_NO_THROW(make_kernel_params(5, 0.05, 1.0));
  EXPECT_THROW(make_kernel_params(8, 1.0, 1.001), puffer::InvalidArgument);
  // a huge scale is accepted: far-tail draws beyond the double range are +-inf, as documented
  EXPECT_NO_THROW(make_kernel_params(5, 0.2, 1.0));
}

TEST(Samplers, SameValuesForAnyThreadCountAndNoDegenerateStudentDraws) {
  const auto p = puffer::sampling::make_kernel_params(5, 0.2, 1.0);
  const std::size_t n = 200000;
  std::vector<double> a(n), b(n);
  puffer::sampling::fill_f64(p, {1, 2, 1u << 30}, 0, n, nullptr, a.data(), 1);
  puffer::sampling::fill_f64(p, {1, 2, 1u << 30}, 0, n, nullptr, b.data(), 5);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(a[i], b[i]);
    ASSERT_TRUE(std::isfinite(a[i]) && a[i] != 0.0) << i << ": " << a[i];
  }
}

// ---------------------------------------------------------------- secure mode
TEST(Secure, ChaCha20Rfc8439BlockVector) {
  // RFC 8439 section 2.3.2
  std::array<std::uint32_t, 16> in = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574, 0x03020100, 0x07060504,
                                      0x0b0a0908, 0x0f0e0d0c, 0x13121110, 0x17161514, 0x1b1a1918, 0x1f1e1d1c,
                                      0x00000001, 0x09000000, 0x4a000000, 0x00000000};
  const auto out = puffer::sampling::chacha20_block(in);
  EXPECT_EQ(out[0], 0xe4e7f110u);
  EXPECT_EQ(out[1], 0x15593bd1u);
  EXPECT_EQ(out[15], 0x4e3c50a2u);
}

TEST(Secure, ParametersValidated) {
  puffer::sampling::SecureParams p;
  p.kind = 2;
  EXPECT_THROW(puffer::sampling::validate_secure(p), puffer::InvalidArgument);
  p.kind = 0;
  p.num = 0;
  EXPECT_THROW(puffer::sampling::validate_secure(p), puffer::InvalidArgument);
  p.num = std::uint64_t(1) << 62;
  EXPECT_THROW(puffer::sampling::validate_secure(p), puffer::InvalidArgument);
  p.kind = 1;  // discrete Gaussian sigma^2 = 9, t must be floor(3) + 1 = 4
  p.num = 9;
  p.den = 1;
  p.t = 3;
  EXPECT_THROW(puffer::sampling::validate_secure(p), puffer::InvalidArgument);
  p.t = 4;
  EXPECT_NO_THROW(puffer::sampling::validate_secure(p));
}

TEST(Secure, OutputsAreLatticePointsAndKeyedDrawsRepeat) {
  puffer::sampling::SecureParams p;  // discrete Laplace with scale 3/2 lattice units
  p.num = 3;
  p.den = 2;
  std::uint8_t key[32] = {7};
  const std::size_t n = 10000;
  std::vector<double> in(n, 0.3), a(n), b(n);
  puffer::sampling::secure_add_f64(p, -4, in.data(), a.data(), n, 3, key);
  puffer::sampling::secure_add_f64(p, -4, in.data(), b.data(), n, 1, key);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(a[i], b[i]);
    ASSERT_EQ(a[i] * 16.0, std::nearbyint(a[i] * 16.0));
  }
  std::vector<double> big(1, std::ldexp(1.0, 60));
  EXPECT_THROW(puffer::sampling::secure_add_f64(p, -4, big.data(), a.data(), 1, 1, key), puffer::InvalidArgument);
}

// ---------------------------------------------------------------- models
TEST(Models, PoissonBinomialSumsToOneAndKeepsTails) {
  std::vector<double> p(200, 1e-3);
  p[0] = 0.5;
  const auto pmf = puffer::models::poisson_binomial(p.data(), p.size(), p.size());
  ASSERT_EQ(pmf.size(), 201u);
  const double s = std::accumulate(pmf.begin(), pmf.end(), 0.0);
  EXPECT_NEAR(s, 1.0, 1e-12);
  for (double v : pmf) EXPECT_GT(v, 0.0);  // every reachable count has positive mass
}

}  // namespace
