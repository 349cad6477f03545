// Poisson-binomial laws (sums of independent Bernoulli(p_k)), the conditional laws of the
// counting query over independent users (Ding 2022). Computed by the product-form
// recursion in doubles when no reachable mass can fall below 1e-300 of the maximum (checked
// a priori from prod_k min(p_k, 1 - p_k)), otherwise in log space, so no positive-probability
// count is ever lost to underflow (Seeman et al. 2024: a lost tail atom shrinks W-infinity).
#pragma once
#include <cstddef>
#include <vector>

namespace puffer::models {

// pmf over {0, ..., n} of sum_k Bernoulli(p[k]); entries outside the reachable range are 0.
// `skip` (if < n) leaves p[skip] out (the law of the others, used for X | S_i = a).
// Returns the pmf normalised to sum 1; every reachable count has mass > 0 (denormals are
// rounded up to the smallest positive double rather than to 0).
std::vector<double> poisson_binomial(const double* p, std::size_t n, std::size_t skip);

}  // namespace puffer::models
