// Certified skipping of interior positions of a long chain (docs/long-chains.md): the window
// oscillation that bounds how much a conditional law can change from one position to the next
// of the same phase, and the comparison rule under which one computed position's W-infinity is
// that of every interior position within D steps of it (Theorems 6 and 7 of that page).
//
// Window identity (Lemma 1): for m <= t and t + p + m <= T - 1,
//   J_t^a     = sum_{x,y} u_{t-m}[x] K_t(x, y)  w_{t+p+m}[y],   K_t  = Pi(t-m, m)[x,a]   Pi(t, m+p)[a,y]
//   J_{t+p}^a = sum_{x,y} u_{t-m}[x] K'_t(x, y) w_{t+p+m}[y],   K'_t = Pi(t-m, m+p)[x,a] Pi(t+p, m)[a,y]
// (Pi(t0, n): the polynomial matrix of n steps from time t0, entries generating the sums of the
// n states after t0). All coefficients are >= 0, so a per-coefficient ratio bound
// l <= K'/K <= h on common supports carries to J (Lemma 2); omega = log(h / l) per step.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/job.hpp"
#include "models/markov.hpp"
#include "models/markov_modp.hpp"

namespace puffer::models {

// The smallest p dividing spec.period under which prior th's matrices repeat bit for bit.
std::size_t minimal_period(const MarkovChainSpec& spec, std::size_t th);

// Window oscillations of one prior for a window m and period p.
struct WindowDrift {
  std::size_t m = 0, period = 1, k = 0;
  // omega[phi * k + a]: certified upper bound of log(h / l) of Lemma 2 for the step t -> t + p of
  // phase phi = t mod p and state a (rounding included); +inf where a support differs.
  std::vector<double> omega;
  // Exact images of K and K' equal modulo the primes (Theorem 7), per (phi, a); filled by
  // windows_identical() only.
  std::vector<std::uint8_t> identical;
  double max_omega() const;
};

// omega of prior th for the window m (m >= 1) and the period p (a divisor of spec.period under
// which the matrices repeat: minimal_period). Multiply-adds ~ 2 p k^3 (m + p)^2 span^2.
WindowDrift window_drift(const MarkovChainSpec& spec, std::size_t th, std::size_t period, std::size_t m,
                         const JobControl* control);

// Fills d.identical: whether K_t == K'_t exactly (modulo each of the primes) for every (x, y)
// and every coefficient, per phase and state.
void windows_identical(const MarkovChainSpec& spec, std::size_t th, WindowDrift& d,
                       const std::uint64_t primes[kModPrimes], const JobControl* control);

// Multiply-adds of window_drift (for choosing m against the cost of the positions it saves).
double window_operations(std::size_t k, std::size_t span, std::size_t period, std::size_t m);

// The drift over the farthest interior position that the window of a plan aims at (the plan's
// eta_target). The representatives' margins are typically 1e-5 .. 1e-3: a drift above a margin
// only shortens the range a representative certifies, and the next round's representatives
// cover the rest, while a longer window costs ~k m^2 T span^2 at the ends (T = 17,520, second
// eigenvalue 0.93, stationary law (0.1, 0.9): 1e-6 took m = 1024 and 7.2 CPU s, 1e-4 m = 512
// and 4.0 CPU s, every interior position certified by one representative).
inline constexpr double kSkipDrift = 1e-4;

// The skipping plan of one prior: the window, the positions computed exactly at both ends
// ([0, m) and (T - 1 - m, T - 1]) and one representative per phase near the middle. Empty
// (usable == false) when skipping would not pay (short chain, slow mixing, a long period).
struct SkipPlan {
  bool usable = false;
  WindowDrift drift;
  std::vector<std::size_t> reps;  // reps[phi]: the representative position of phase phi
  // interior positions: [lo, hi] (= [m, T - 1 - m])
  std::size_t lo = 0, hi = 0;
};

// Chooses m by doubling from 8 (m_max last) until the drift over the farthest interior position
// is <= eta_target, while omega still falls, or until the windows tried (every period and window
// together, the first included) would cost more than 5 % of the prior's direct computation: not
// usable then (a short chain with many states); two bisection steps then shorten the window that
// met the target. A drift above a representative's margins shortens the stretch it certifies;
// w_inf_all_pairs then places more representatives (markov_walk.cpp). window > 0:
// that m and the chain's own period, usable whenever every omega is finite (tests: a short
// window certifies fewer positions).
SkipPlan plan_skip(const MarkovChainSpec& spec, std::size_t th, double eta_target, const JobControl* control,
                   std::size_t window = 0);

}  // namespace puffer::models
