// Quantile coupling of two laws given by normalised natural-log masses (Seeman et al. 2024:
// W_inf is tail-driven, so tail levels are compared as log F below 1/2 and -log S above), the
// C++ form of puffer.transport's log-space plan (same keys, tie band and masses).
#pragma once
#include <cstddef>
#include <vector>

#include "transport/transport.hpp"

namespace puffer::transport {

// Level keys of a law with log-masses lp[0..n) (normalised, finite): key_i = log F_i where
// log F_i <= log(1/2), else -log S_i (+inf for the top atom); cumulative sums by the
// log-add-exp recurrence of numpy's logaddexp.accumulate.
void log_level_keys(const double* lp, std::size_t n, std::vector<double>& key);

// The staircase over the keys (ties within (n + m + 16) 2^-53 relative), entry masses from the
// key levels (0 where rounding leaves no overlap; atoms left over at the end get mass 0).
// Fills plan.src / plan.dst / plan.mass (atom indices).
void coupling_log_1d(const double* lp, std::size_t n, const double* lq, std::size_t m, Plan& plan);

// numpy's logaddexp(x, y) (the same formula, so cumulative keys agree with the reference).
double np_logaddexp(double x, double y);

}  // namespace puffer::transport
