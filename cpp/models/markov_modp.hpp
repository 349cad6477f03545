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
// Memory grows like T^1.5, not T^2 (Griewank's checkpointing of a recursion): ModChain keeps
// the forward and backward slices of the positions t = j C only (C = checkpoint_stride(T),
// ~sqrt(T / 2)); a ModSegment (one per worker) recomputes the slices of the C positions
// [j C, j C + C) from the nearest checkpoints when a position of that segment first needs a
// tie certified, and keeps them while the worker stays in the segment (positions are visited
// in increasing order, so each segment is recomputed about once per worker).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/job.hpp"

namespace puffer::models {

constexpr int kModPrimes = 3;

// Spacing of the checkpointed slices (both the double passes of markov.cpp and ModChain).
std::size_t checkpoint_stride(std::size_t T);

class ModSegment;

class ModChain {
 public:
  // P: `period` k x k row-major transition matrices (the step X_t -> X_{t+1} uses matrix
  // t mod period, MarkovChainSpec::step), init: law of X_0, dv: state values minus the
  // smallest (the sum grid of markov.cpp: index s = sum of dv over the chain).
  ModChain(std::size_t k, std::size_t T, std::size_t span, const std::size_t* dv, const double* P,
           std::size_t period, const double* init, const std::uint64_t primes[kModPrimes], const JobControl* ctl);

  std::uint64_t prime(int q) const { return p_[q]; }
  std::size_t grid_size() const { return R_; }
  std::size_t stride() const { return C_; }
  // Unique per constructed chain (a segment never mistakes a new chain at a reused address).
  std::uint64_t id() const { return id_; }

  // Bytes of the checkpoints (one per prior that needs a tie certified).
  static double bytes(std::size_t k, std::size_t T, std::size_t span, std::size_t period = 1);

 private:
  friend class ModSegment;
  std::size_t lf(std::size_t t) const { return (t + 1) * span_ + 1; }
  std::size_t lb(std::size_t t) const { return (T_ - 1 - t) * span_ + 1; }
  // slice t + 1 from slice t (forward) / slice t from slice t + 1 (backward), prime q
  void forward_step(int q, std::size_t t, const std::uint64_t* src, std::uint64_t* dst) const;
  void backward_step(int q, std::size_t t, const std::uint64_t* src, std::uint64_t* dst) const;
  // residues of the matrix of the step X_t -> X_{t+1}, prime q
  const std::uint64_t* Pm(int q, std::size_t t) const { return Pm_[q].data() + (t % period_) * k_ * k_; }
  std::size_t k_, T_, span_, R_, C_, period_;
  std::uint64_t id_;
  std::vector<std::size_t> dv_;
  std::uint64_t p_[kModPrimes];
  std::vector<std::uint64_t> Pm_[kModPrimes];
  // checkpoint j: forward slice j C (j >= 0), backward slice j C (j >= 1); k slices each
  std::vector<std::size_t> fck_off_, bck_off_;
  std::vector<std::uint64_t> fck_[kModPrimes], bck_[kModPrimes];
};

// One worker's recomputed segment of a ModChain.
class ModSegment {
 public:
  // Cumulative exact masses of the law given X_i = a, modulo prime q (q < kModPrimes):
  // out[q][s] = sum_{s' <= s} P(S = s', X_i = a) mod p_q for s in [0, R), R = T span + 1.
  void cumulative(const ModChain& mc, std::size_t i, std::size_t a, std::vector<std::uint64_t> out[kModPrimes]);
  // Whether position i of mc is in the loaded segment.
  bool holds(const ModChain& mc, std::size_t i) const { return chain_ == mc.id() && j_ == i / mc.stride(); }

  // Bytes of one segment (the largest, j = 0).
  static double bytes(std::size_t k, std::size_t T, std::size_t span);

 private:
  void load(const ModChain& mc, std::size_t j);
  std::uint64_t chain_ = 0;  // id of the chain of the loaded segment (ids start at 1)
  std::size_t j_ = static_cast<std::size_t>(-1);
  std::vector<std::size_t> foff_, boff_;  // slice j C + r starts at off[r]
  std::vector<std::uint64_t> f_[kModPrimes], b_[kModPrimes];
};

}  // namespace puffer::models
