// Conditional laws of the sum query S = sum_t v(X_t) over a k-state Markov chain of length T,
// given the secret X_i = a (Song, Wang, Chaudhuri 2017 setting; Pierquin et al. 2024):
//   P(S = s | X_i = a, theta)  for every prior theta = (transition matrix, initial law),
// every position i and every state a, by a forward pass, a backward pass and one convolution
// per (i, a). State values v are integers, so S lives on the integer grid
// [T * min v, T * max v].
//
// Arithmetic: plain doubles when no reachable probability can fall below 1e-300 (checked a
// priori: every reachable entry is at least min_init * min_p^(2T), and all are <= 1); otherwise
// the prior is computed in log space (log-sum-exp) and its laws are handed out in log space
// (Law::log_space): W-infinity then compares log-level keys (log F below 1/2, -log S above),
// which keep both the support and the order of tail levels however small the masses. So an atom of positive probability is never
// lost to underflow, which would shrink a W-infinity sensitivity (Seeman et al. 2024: naive float gives
// 84 where the truth is 100).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace puffer::models {

struct MarkovChainSpec {
  const double* trans;   // n_theta * k * k, row-major, row = from-state (rows sum to 1)
  const double* init;    // n_theta * k, law of X_1
  std::size_t n_theta;
  std::size_t k;
  const std::int64_t* values;  // k integer state values
  std::size_t T;
};

// Validates the spec; throws puffer::InvalidArgument naming the bad entry.
void validate(const MarkovChainSpec& spec, double tol);

// One conditional law, as a view into the kernel's buffers (valid during the emit call):
// n consecutive sums atoms[0..n) (integers as doubles, increasing) with masses >= 0 that are
// proportional to the conditional pmf (NOT normalised: divide by their total). Interior zeros
// are sums the chain cannot reach; every reachable sum has a positive mass.
struct Law {
  const double* atoms = nullptr;
  // log_space == false: masses >= 0 proportional to the pmf (0 = unreachable sum).
  // log_space == true: natural-log masses up to one additive constant (-inf = unreachable);
  // used whenever a reachable relative mass could fall below the double range, so that no
  // atom is lost and the order of cumulative tail levels is kept (Issue: a floor at the
  // smallest double scrambled those levels and mis-reported W-infinity both ways).
  bool log_space = false;
  const double* mass = nullptr;
  std::size_t n = 0;         // 0 means the secret is impossible (P(X_i = a) = 0)
  double secret_prob = 0.0;  // P(X_i = a | theta)
};

// Calls emit(theta, i, laws) for every theta and position i in [0, T), with laws[a] the law
// given X_i = a for every state a. Priors are processed in parallel (parallel_for over theta);
// emit must be thread-safe across different theta values. Returns, per theta, whether log
// space was needed.
using PositionFn = std::function<void(std::size_t, std::size_t, const std::vector<Law>&)>;
std::vector<std::uint8_t> sum_laws(const MarkovChainSpec& spec, unsigned threads, const PositionFn& emit);

// W_inf(law | X_i = a, law | X_i = b) for every theta, position i and pair a < b (pairs in
// lexicographic order), by the transport kernel's 1-D W_inf on the laws as they are computed
// (no law is stored). out has n_theta * T * k(k-1)/2 entries; a pair with an impossible secret
// gets -1. Returns the per-theta log-space flags.
std::vector<std::uint8_t> w_inf_all_pairs(const MarkovChainSpec& spec, unsigned threads, double* out);

}  // namespace puffer::models
