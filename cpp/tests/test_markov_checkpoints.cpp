// GoogleTest unit tests of the checkpointed Markov passes (issue 24): the double kernel
// (markov.hpp, sum_laws) and the exact images (markov_modp.hpp, ModChain / ModSegment) give
// every position's joint masses P(S = s, X_i = a) equal to a brute-force enumeration of all
// k^T paths, for lengths that cut the positions into several segments (C = checkpoint_stride),
// in any order of positions (a segment is recomputed when a worker comes back to it), for
// time-homogeneous and time-varying chains (the step X_t -> X_{t+1} uses matrix t mod period).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "common/modp.hpp"
#include "models/markov.hpp"
#include "models/markov_modp.hpp"

namespace {

using puffer::models::Law;
using puffer::models::MarkovChainSpec;

struct Chain {
  std::size_t k, T, period;
  std::vector<double> P, init;  // period matrices
  std::vector<std::int64_t> values;
  // entry (x, y) of the step X_{t-1} -> X_t
  double p(std::size_t t, std::size_t x, std::size_t y) const { return P[((t - 1) % period) * k * k + x * k + y]; }
};

Chain random_chain(std::size_t k, std::size_t T, std::uint64_t seed, std::size_t period = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.05, 1.0);
  Chain c{k, T, period, std::vector<double>(period * k * k), std::vector<double>(k), std::vector<std::int64_t>(k)};
  for (std::size_t x = 0; x < period * k; ++x) {
    double s = 0;
    for (std::size_t y = 0; y < k; ++y) s += c.P[x * k + y] = u(rng);
    for (std::size_t y = 0; y < k; ++y) c.P[x * k + y] /= s;
  }
  for (std::size_t x = 0; x < k; ++x) {
    c.init[x] = 1.0 / static_cast<double>(k);
    c.values[x] = static_cast<std::int64_t>(x * x);  // span (k - 1)^2: uneven steps
  }
  return c;
}

// Visits every path: f(path) with the path's states.
template <class F>
void each_path(std::size_t k, std::size_t T, F f) {
  std::vector<std::size_t> x(T, 0);
  for (;;) {
    f(x);
    std::size_t t = 0;
    while (t < T && ++x[t] == k) x[t++] = 0;
    if (t == T) return;
  }
}

TEST(MarkovCheckpoints, StrideIsAboutTheSquareRootOfHalfTheLength) {
  EXPECT_EQ(puffer::models::checkpoint_stride(1), 1u);
  EXPECT_EQ(puffer::models::checkpoint_stride(8), 2u);
  EXPECT_EQ(puffer::models::checkpoint_stride(17520), 94u);
}

TEST(MarkovCheckpoints, SumLawsEqualPathEnumerationAcrossSegments) {
  for (std::size_t period : {1u, 3u})
  for (std::size_t T : {1u, 2u, 5u, 9u, 11u}) {
    const Chain c = random_chain(2, T, 7 + T, period);
    const MarkovChainSpec spec{c.P.data(), c.init.data(), 1, c.k, c.values.data(), T, period};
    const std::size_t R = T * 1 + 1;
    std::vector<double> joint(T * c.k * R, 0.0);  // P(S = s, X_i = a)
    each_path(c.k, T, [&](const std::vector<std::size_t>& x) {
      double p = c.init[x[0]];
      std::size_t s = 0;
      for (std::size_t t = 0; t < T; ++t) {
        if (t > 0) p *= c.p(t, x[t - 1], x[t]);
        s += static_cast<std::size_t>(c.values[x[t]]);
      }
      for (std::size_t t = 0; t < T; ++t) joint[(t * c.k + x[t]) * R + s] += p;
    });
    for (unsigned threads : {1u, 2u}) {
      std::vector<int> seen(T, 0);
      puffer::models::SumLawsOptions opt;
      opt.concurrent_positions = threads > 1;
      puffer::models::sum_laws(spec, threads, [&](std::size_t, std::size_t i, const std::vector<Law>& laws) {
        seen[i] += 1;
        for (std::size_t a = 0; a < c.k; ++a) {
          const Law& L = laws[a];
          ASSERT_TRUE(L.plain());
          double tot = 0.0, ref = 0.0;
          for (std::size_t j = 0; j < L.n; ++j) tot += L.mass[j];
          for (std::size_t s = 0; s < R; ++s) ref += joint[(i * c.k + a) * R + s];
          for (std::size_t j = 0; j < L.n; ++j) {
            const std::size_t s = static_cast<std::size_t>(L.atoms[j]);
            EXPECT_NEAR(L.mass[j] / tot, joint[(i * c.k + a) * R + s] / ref, 1e-13) << "T=" << T << " i=" << i;
          }
        }
      }, opt);
      for (std::size_t i = 0; i < T; ++i) EXPECT_EQ(seen[i], 1) << "position " << i << " emitted once";
    }
  }
}

TEST(MarkovCheckpoints, ModSegmentsEqualPathEnumerationInAnyOrder) {
  std::mt19937_64 rng(11);
  const std::uint64_t primes[puffer::models::kModPrimes] = {puffer::modp::random_prime(rng),
                                                           puffer::modp::random_prime(rng),
                                                           puffer::modp::random_prime(rng)};
  for (std::size_t period : {1u, 4u})
  for (std::size_t T : {1u, 3u, 8u, 10u}) {
    const Chain c = random_chain(3, T, 100 + T, period);
    std::vector<std::size_t> dv(c.k);
    for (std::size_t x = 0; x < c.k; ++x) dv[x] = static_cast<std::size_t>(c.values[x]);
    const std::size_t span = 4, R = T * span + 1;
    puffer::models::ModChain mc(c.k, T, span, dv.data(), c.P.data(), period, c.init.data(), primes, nullptr);
    for (int q = 0; q < puffer::models::kModPrimes; ++q) {
      const puffer::modp::Field fld(mc.prime(q));
      const std::uint64_t p = mc.prime(q);
      std::vector<std::uint64_t> joint(T * c.k * R, 0);
      each_path(c.k, T, [&](const std::vector<std::size_t>& x) {
        std::uint64_t w = fld.of(c.init[x[0]]);
        std::size_t s = 0;
        for (std::size_t t = 0; t < T; ++t) {
          if (t > 0) w = puffer::modp::mul(w, fld.of(c.p(t, x[t - 1], x[t])), p);
          s += dv[x[t]];
        }
        for (std::size_t t = 0; t < T; ++t) {
          auto& j = joint[(t * c.k + x[t]) * R + s];
          j = puffer::modp::add(j, w, p);
        }
      });
      puffer::models::ModSegment seg;
      std::vector<std::size_t> order(T);
      for (std::size_t i = 0; i < T; ++i) order[i] = (i * 5 + 3) % T;  // jumps between segments
      if (T % 5 == 0) for (std::size_t i = 0; i < T; ++i) order[i] = T - 1 - i;
      for (std::size_t i : order)
        for (std::size_t a = 0; a < c.k; ++a) {
          std::vector<std::uint64_t> out[puffer::models::kModPrimes];
          seg.cumulative(mc, i, a, out);
          std::uint64_t run = 0;
          for (std::size_t s = 0; s < R; ++s) {
            run = puffer::modp::add(run, joint[(i * c.k + a) * R + s], p);
            ASSERT_EQ(out[q][s], run) << "T=" << T << " i=" << i << " a=" << a << " s=" << s;
          }
        }
    }
  }
}

TEST(MarkovCheckpoints, PeakBytesGrowLikeTToTheThreeHalves) {
  using puffer::models::Arithmetic;
  const double a = puffer::models::peak_bytes(2, 17520, 1, 1, 2, Arithmetic::kAuto);
  EXPECT_LT(a, 0.6e9);   // it was 3.7 GB of backward store + 14.7 GB of exact images
  EXPECT_GT(a, 0.2e9);
  const double b = puffer::models::peak_bytes(2, 4 * 17520, 1, 1, 2, Arithmetic::kAuto);
  EXPECT_LT(b / a, 9.0);  // 4^1.5 = 8 (T^2 would give 16)
}

}  // namespace
