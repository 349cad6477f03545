// Conditional laws of the sum query S = sum_t v(X_t) over a k-state Markov chain of length T,
// given the secret X_i = a (Song, Wang, Chaudhuri 2017 setting; Pierquin et al. 2024):
//   P(S = s | X_i = a, theta)  for every prior theta = (transition matrix, initial law),
// every position i and every state a, by a backward pass (stored), a forward pass (streamed)
// and one convolution per (i, a). State values v are integers, so S lives on the integer grid
// [T * min v, T * max v] (R = T * span + 1 points, span = max v - min v).
//
// Arithmetic (Arithmetic::kAuto). Guarantee: every reachable sum of every law has a positive
// mass with relative error <= ~(2 T + R) 2^-53 (sums of products of positive terms), and every
// unreachable sum has mass exactly 0 -- whatever the magnitudes (no underflow, no floor):
//   * forward and backward passes hold every entry as m * 2^e (m in [1, 2), 32-bit e; see
//     markov_ext.hpp); a term more than 2^-1000 below the largest term of the same sum is
//     dropped (relative error <= k 2^-1000), the largest never is;
//   * per law (i, a), the two factors of the convolution are scaled to plain doubles when the
//     exponent ranges of their reachable entries add up to <= 960 bits, so every product of
//     reachable entries is a normal double >= 2^-962 of the largest (a-posteriori check), if
//     need be after an exact exponential tilt F[s] 2^(c s), B[s] 2^(c s) (which tilts the
//     convolution by 2^(c s) exactly; c = the least-squares slope of the exponents, bounded by
//     |c| R <= 2^27). Such laws are handed out as plain doubles (Law::exp2 == nullptr) when the
//     law itself spans <= 1000 bits;
//   * the other laws are convolved by blocks: each factor is cut into consecutive blocks whose
//     (tilted) exponents span <= 450 bits, every block pair is convolved in plain doubles
//     (products >= 2^-902 of the pair's largest: normal) and merged into an extended output
//     (mantissa + exponent per sum); where the exponents jump so much that blocks are tiny, the
//     integer-exponent convolution of markov_ext.hpp is used instead (per output, the largest
//     term's exponent by an integer max pass). In both, a partial sum below 2^-1000 of the value
//     it is added to is dropped (relative error <= n 2^-1000); the largest term never is. Such
//     laws are handed out as mass[j] * 2^exp2[j] (Law::exp2 != nullptr) when they span more
//     than 1000 bits (no double scale could hold every atom), else as plain doubles.
// Consequence: a law is never floored or truncated; W-infinity sees every reachable atom and
// every cumulative level to a stated relative error (w_inf_all_pairs).
// Arithmetic::kLogReference: the earlier log-space (log-sum-exp) computation, kept as the
// reference path for the tests (Law::log_space; ~40-60x slower, memory 16 T k R bytes).
//
// Memory (kAuto) grows like T^1.5, not T^2: the backward pass is checkpointed (Griewank): the
// slices of every C-th position are kept (C = checkpoint_stride(T) ~ sqrt(T / 2)), and each
// worker recomputes the C slices of the segment it works in from the next checkpoint (one more
// backward pass in all, k^2 T^2 span / 2 multiply-adds against the convolutions' k T^3 span^2 / 6).
// The exact images that certify ties (markov_modp.hpp) are checkpointed the same way and built
// only for a prior whose levels need a tie certified. peak_bytes() is the whole call's
// allocation: per prior in flight, the checkpoints (12 k span T^2 / (2 C) bytes) and
// ModChain::bytes; per worker, one segment (12 k span C T bytes), ModSegment::bytes and
// ~(84 k + 96) R bytes of forward slices, convolution buffers and walk levels. For T = 17,520,
// k = 2, span 1 on 2 threads: ~0.45 GB (it was 12 k span T^2 / 2 = 3.7 GB for the backward store
// plus 14.7 GB of exact images). Allocated per call and freed before returning.
// Workers = min(threads, n_theta) (all threads share one prior's checkpoints when
// n_theta < threads and positions are split, see SumLawsOptions::concurrent_positions).
//
// W-infinity (w_inf_all_pairs) compares the cumulative levels F / total (below 1/2) or S / total
// (above) of the two laws in the extended range, so no atom or tail level is lost to underflow
// (Seeman et al. 2024: naive float gives 84 where the truth is 100). Two levels closer than their
// error bounds are of unknown order: the walk (transport/w_inf_ranges.hpp) first takes every such
// pair as possibly coupled (an upper bound) and as tied (a lower bound); if the two differ, the
// close levels are compared exactly modulo random primes (markov_modp.hpp): equal levels tie,
// different ones stay of unknown order and the walk keeps the upper bound. So W-infinity is never
// under-reported, and is exact unless two exact levels differ by less than the error bound.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "common/job.hpp"

namespace puffer::models {

// Time-varying chains: each prior has `period` transition matrices; the step X_t -> X_{t+1}
// (t = 0 .. T-2) uses matrix t mod period of its prior. period = 1: a time-homogeneous chain (the
// historical layout n_theta * k * k); period = T - 1: one matrix per step; otherwise a periodic
// chain whose X_0 is at phase 0 (e.g. 48 half-hours of a day, a release starting at midnight).
// Every kernel below reads the matrices through step(), so the recursions are the same for all.
struct MarkovChainSpec {
  const double* trans;   // n_theta * period * k * k, row-major, row = from-state (rows sum to 1)
  const double* init;    // n_theta * k, law of X_0
  std::size_t n_theta;
  std::size_t k;
  const std::int64_t* values;  // k integer state values
  std::size_t T;
  std::size_t period = 1;      // matrices per prior (>= 1)

  // The matrices of prior th (period of them, k * k each).
  const double* prior(std::size_t th) const { return trans + th * period * k * k; }
  // The k x k matrix of the step X_t -> X_{t+1} of prior th.
  const double* step(std::size_t th, std::size_t t) const { return prior(th) + (t % period) * k * k; }
};

// Validates the spec; throws puffer::InvalidArgument naming the bad entry.
void validate(const MarkovChainSpec& spec, double tol);

// One conditional law, as a view into the kernel's buffers (valid during the emit call):
// n consecutive sums atoms[0..n) (integers as doubles, increasing) with masses proportional
// to the conditional pmf (NOT normalised). Interior zeros are sums the chain cannot reach;
// every reachable sum has a positive mass. Three representations:
//   * plain (log_space == false, exp2 == nullptr): mass[j] >= 0, 0 = unreachable; all
//     reachable masses are normal doubles within 2^1000 of each other;
//   * extended (exp2 != nullptr): the mass of atom j is mass[j] * 2^exp2[j] with mass[j] a
//     positive normal double (0 = unreachable); used when the law spans more than 2^1000, so that no atom is
//     lost and the order of cumulative tail levels is kept (a floor at the smallest double
//     scrambled those levels and mis-reported W-infinity both ways);
//   * log (log_space == true, Arithmetic::kLogReference only): mass[j] is a natural-log mass
//     up to one additive constant, -inf = unreachable.
// Consumers that do not want to branch use reachable(j) and log_mass(j).
struct Law {
  const double* atoms = nullptr;
  bool log_space = false;
  const double* mass = nullptr;
  const std::int32_t* exp2 = nullptr;
  std::size_t n = 0;         // 0 means the secret is impossible (P(X_i = a) = 0)
  double secret_prob = 0.0;  // P(X_i = a | theta)

  bool reachable(std::size_t j) const {
    return log_space ? mass[j] != -std::numeric_limits<double>::infinity() : mass[j] > 0.0;
  }
  // Natural log of the (unnormalised) mass of atom j in any representation; -inf if unreachable.
  double log_mass(std::size_t j) const {
    if (log_space) return mass[j];
    if (!(mass[j] > 0.0)) return -std::numeric_limits<double>::infinity();
    const double l = std::log(mass[j]);
    return exp2 == nullptr ? l : l + static_cast<double>(exp2[j]) * 0.69314718055994530942;
  }
  // True when the masses are plain doubles (mass[j] is the mass).
  bool plain() const { return !log_space && exp2 == nullptr; }
};

enum class Arithmetic { kAuto, kLogReference };

struct SumLawsOptions {
  Arithmetic arithmetic = Arithmetic::kAuto;
  JobControl* control = nullptr;  // polled once per position; done += 1 per (theta, position)
  // false: emit is called for the positions of one prior in increasing order from one thread
  // (priors in parallel). true: when n_theta < threads the positions of one prior are split
  // between threads, and emit may run concurrently for different positions of the same prior.
  bool concurrent_positions = false;
  // Optional mask of T flags: only positions i with positions[i] != 0 are emitted (the passes
  // still run in full). nullptr: every position.
  const std::uint8_t* positions = nullptr;
  // Optional masks per prior (n_theta * T flags, prior th at th * T), in place of `positions`.
  const std::uint8_t* prior_positions = nullptr;
  // Whether a position left out by a mask counts as done for the progress (control->done).
  bool advance_skipped = true;
  // w_inf_all_pairs only: certified skipping of interior positions (docs/long-chains.md,
  // markov_skip.hpp): the same values as the direct computation at every position (false),
  // which remains its fallback wherever the certificate fails. Ignored with kLogReference and
  // with prior_positions.
  bool skip_interior = true;
  // The window m of the skipping (0: chosen per prior; > 0: that window, tests).
  std::size_t skip_window = 0;
  // w_inf_all_pairs only, when not null: what the skipping did (tests, benchmarks, cost models).
  struct SkipStats* skip_stats = nullptr;
};

// What the skipping of w_inf_all_pairs did, over all priors: the priors with a usable plan, the
// most rounds of representatives one prior took, the representatives computed, the interior
// positions that got a representative's value, and the positions left to the direct computation.
struct SkipStats {
  std::size_t planned = 0, rounds = 0, representatives = 0, certified = 0, direct = 0;
};

// Calls emit(theta, i, laws) for every theta and position i in [0, T), with laws[a] the law
// given X_i = a for every state a. Priors are processed in parallel (parallel_for over theta);
// emit must be thread-safe across different theta values (and positions, see options).
// Returns, per theta, whether some law needed the extended (or log) representation.
using PositionFn = std::function<void(std::size_t, std::size_t, const std::vector<Law>&)>;
std::vector<std::uint8_t> sum_laws(const MarkovChainSpec& spec, unsigned threads, const PositionFn& emit,
                                   const SumLawsOptions& options = {});

// W_inf(law | X_i = a, law | X_i = b) for every theta, position i and pair a < b (pairs in
// lexicographic order), by the certified level walk above on the laws as they are computed
// (no law is stored). With options.skip_interior, the positions far from both ends get the
// value of a representative position when the certificate of docs/long-chains.md (Theorems 6
// and 7) proves it is the value the walk would give there; the others are computed. out has n_theta * T * k(k-1)/2 entries; a pair with an impossible secret
// gets -1; entries of positions left out by options.positions are not written. Returns the
// per-theta flags of sum_laws.
std::vector<std::uint8_t> w_inf_all_pairs(const MarkovChainSpec& spec, unsigned threads, double* out,
                                          const SumLawsOptions& options = {});

// Certified support of the quantile coupling of two conditional laws, for the plan-based
// mechanisms (markov_plans.cpp: Ding 2022 Thm 2, Pierquin et al. 2024 Thm 4.5): the level
// comparisons of w_inf_all_pairs, used inside a sum_laws emit call. An entry (x, y) is a pair of
// reachable atoms of law a and law b whose level intervals may overlap, with mass_ub >= the
// exact normalised overlap (> 0). Levels closer than their error bounds are of unknown order
// (certify = false), or compared exactly modulo random primes (certify = true: equal levels tie,
// different ones stay of unknown order); unknown order counts as overlapping, so the entries
// hold every entry of the exact coupling (and with it the largest |x - y|).
struct CouplingEntry {
  double x, y, mass_ub;
};

class LevelCertifier {
 public:
  // positions_per_prior: the number of emit calls per prior (T, or the count of a positions
  // mask): the exact images of a prior are freed after its last position (done()).
  LevelCertifier(const MarkovChainSpec& spec, std::size_t positions_per_prior, const JobControl* control);
  ~LevelCertifier();
  LevelCertifier(const LevelCertifier&) = delete;
  LevelCertifier& operator=(const LevelCertifier&) = delete;

  class Position {
   public:
    ~Position();
    Position(Position&&) noexcept;
    // Entries for the pair (a, b) of states at this position (both laws possible).
    void entries(std::size_t a, std::size_t b, bool certify, std::vector<CouplingEntry>& out);
    struct Impl;

   private:
    friend class LevelCertifier;
    explicit Position(std::unique_ptr<Impl> p);
    std::unique_ptr<Impl> impl_;
  };
  // The laws of prior th at position i (as sum_laws hands them to emit).
  Position at(std::size_t th, std::size_t i, const std::vector<Law>& laws);
  // Call once per (th, position) after its last use of at(): frees the prior's images at the end.
  void done(std::size_t th);
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Bytes one worker allocates for one prior, everything included (see the header comment);
// span = max value - min value.
double workspace_bytes(std::size_t k, std::size_t T, std::size_t span, Arithmetic arithmetic,
                       std::size_t period = 1);

// Upper bound of the bytes sum_laws / w_inf_all_pairs allocate for n_theta priors on `threads`
// threads (0: all), as they schedule them (the output table excluded).
// period: matrices per prior (their split copies and exact images are counted per prior in flight).
double peak_bytes(std::size_t k, std::size_t T, std::size_t span, std::size_t n_theta, unsigned threads,
                  Arithmetic arithmetic, std::size_t period = 1);

// Multiply-adds of one prior: k sum_i |F_i| |B_i| for the convolutions (plain-double path) and
// 2 T k^2 R for the passes.
double prior_operations(std::size_t k, std::size_t T, std::size_t span);

}  // namespace puffer::models
