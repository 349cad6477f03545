// Exact images modulo three random 50-bit primes of the Markov sum laws of markov.hpp, used to
// certify ties between cumulative levels that floating point cannot separate.
//
// Why: two conditional laws P(S | X_i = a), P(S | X_i = b) may have cumulative levels that are
// exactly equal (identical rows make the laws shifts of one another) or that differ by far less
// than any float rounding (probabilities down to 2^-1074 whose contributions vanish below an
// ulp of a level). W-infinity needs the exact order of levels: a tie adds no transport pair, a
// strict order adds one, and treating a real difference as a tie under-reports W-infinity (the
// float level rule did: 1 where exact arithmetic gives 2). Every double is a dyadic rational, so
// the masses P(S = s, X_i = a) are exact rationals whose images in Z_p follow from the same
// forward/backward recursion (Song, Wang, Chaudhuri 2017 setting) carried out modulo p.
// Equality of two levels modulo three independent random primes certifies exact equality up to
// probability <= (N / 7.8e14)^3 per comparison, N <= 2400 (T + 1) the bit length of the
// cross-multiplied levels (< 1e-19 for T <= 1e5); a difference is certified with certainty.
//
// Memory: forward and backward slices of every position, three primes: bytes(k, T, span).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/job.hpp"

namespace puffer::models {

constexpr int kModPrimes = 3;

class ModChain {
 public:
  // P: k x k row-major transition matrix, init: law of X_1, dv: state values minus the
  // smallest (the sum grid of markov.cpp: index s = sum of dv over the chain).
  ModChain(std::size_t k, std::size_t T, std::size_t span, const std::size_t* dv, const double* P,
           const double* init, const std::uint64_t primes[kModPrimes], const JobControl* ctl);

  // Cumulative exact masses of the law given X_i = a, modulo prime q (q < kModPrimes):
  // out[q][s] = sum_{s' <= s} P(S = s', X_i = a) mod p_q for s in [0, R), R = T span + 1.
  void cumulative(std::size_t i, std::size_t a, std::vector<std::uint64_t> out[kModPrimes]) const;

  std::uint64_t prime(int q) const { return p_[q]; }
  std::size_t grid_size() const { return R_; }

  static double bytes(std::size_t k, std::size_t T, std::size_t span);

 private:
  std::size_t lf(std::size_t t) const { return (t + 1) * span_ + 1; }
  std::size_t lb(std::size_t t) const { return (T_ - 1 - t) * span_ + 1; }
  std::size_t k_, T_, span_, R_;
  std::uint64_t p_[kModPrimes];
  std::vector<std::size_t> foff_, boff_;  // start of slice t (k slices of lf(t) / lb(t) each)
  std::vector<std::uint64_t> f_[kModPrimes], b_[kModPrimes];
};

}  // namespace puffer::models
