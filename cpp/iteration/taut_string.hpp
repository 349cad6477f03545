// Optimal shift allocation for privacy amplification by iteration (Pierquin et al. 2024,
// Thm 5.2; Feldman et al. 2018): the greatest convex minorant ("taut string") of the points
// (tau_t, S_t), t = 0..T, with S_t = s_1 + ... + s_t (cumulative shifts) and tau_t = w_1 + ... + w_t
// (w_t = 1, or sigma_t^2 for Gaussian noise of varying scale).
//
// Contract. Inputs: s[0..T) finite and >= 0; w either null (unit weights) or w[0..T) finite > 0.
// Output: a[0..T) with a_t = w_t * (slope of the minorant over (tau_{t-1}, tau_t]), so that
// A_t = a_1 + ... + a_t is the minorant at tau_t: A_t <= S_t, A_T = S_T, a_t >= 0 (up to rounding).
// Among all allocations with A_t <= S_t and A_T = S_T it minimises sum_t w_t phi(a_t / w_t) for
// every convex phi (majorisation of the minorant's slopes), in particular sum a_t^2 / sigma_t^2.
// O(T) time (pool-adjacent-violators), O(T) thread-local scratch. Sums are plain float sums (relative error <= T u);
// callers that need a certified feasible allocation must absorb the rounding (puffer.iteration
// does, on the last step).
#pragma once
#include <cstddef>

namespace puffer::iteration {

// Writes the allocation into a (length T). Throws InvalidArgument on negative / non-finite input.
void taut_string_allocation(const double* s, const double* w, std::size_t T, double* a);

}  // namespace puffer::iteration
