// Greatest convex minorant of cumulative shifts (see taut_string.hpp for the contract).
//
// The slopes of the greatest convex minorant of the cumulative sum diagram (tau_t, S_t) are the
// weighted isotonic (non-decreasing) regression of s_t / w_t with weights w_t (Barlow,
// Bartholomew, Bremner, Brunk 1972, Thm 1.1), so the minorant is computed by pool-adjacent-
// violators on a stack of blocks: no prefix sums (no cancellation), one pass, and each block's
// total is the plain sum of its own shifts.
#include "iteration/taut_string.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "common/errors.hpp"

namespace puffer::iteration {

namespace {
struct Block {
  double sum;       // sum of s_t over the block
  double weight;    // sum of w_t (the block length for unit weights)
  std::size_t len;  // number of steps
};

// Scratch reused across calls on this thread (a 10^6-step call would otherwise page-fault in
// 24 MB of fresh memory each time).
std::vector<Block>& scratch(std::size_t n) {
  thread_local std::vector<Block> buf;
  if (buf.size() < n) buf.resize(n);
  return buf;
}
}  // namespace

void taut_string_allocation(const double* s, const double* w, std::size_t T, double* a) {
  if (T == 0) return;
  bool ok = true;
  for (std::size_t t = 0; t < T; ++t) ok &= (s[t] >= 0.0) & (s[t] <= std::numeric_limits<double>::max());
  if (!ok) {
    for (std::size_t t = 0; t < T; ++t)
      require(std::isfinite(s[t]) && s[t] >= 0.0, "shifts", s[t], "finite shifts >= 0");
  }
  if (w) {
    for (std::size_t t = 0; t < T; ++t)
      require(std::isfinite(w[t]) && w[t] > 0.0, "sigma2", w[t], "finite per-step variances > 0");
  }
  Block* b = scratch(T).data();
  std::size_t n = 0;
  for (std::size_t t = 0; t < T; ++t) {
    Block cur{s[t], w ? w[t] : 1.0, 1};
    // pool while the previous block's mean is >= the current one (a non-convex turn of the minorant)
    while (n > 0 && b[n - 1].sum * cur.weight >= cur.sum * b[n - 1].weight) {
      cur.sum += b[n - 1].sum;
      cur.weight += b[n - 1].weight;
      cur.len += b[n - 1].len;
      --n;
    }
    b[n++] = cur;
  }
  std::size_t t = 0;
  for (std::size_t h = 0; h < n; ++h) {
    const double g = b[h].sum / b[h].weight;
    const std::size_t end = t + b[h].len;
    if (w) {
      for (; t < end; ++t) a[t] = g * w[t];
    } else {
      for (; t < end; ++t) a[t] = g;
    }
  }
}

}  // namespace puffer::iteration
