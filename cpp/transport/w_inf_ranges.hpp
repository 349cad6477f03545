// W-infinity of two 1-D laws from three-valued comparisons of their cumulative levels.
//
// In 1-D the optimal coupling for W_inf is the quantile coupling (Pierquin et al. 2024): atom u
// of P (levels (F_{u-1}, F_u]) and atom v of Q (levels (G_{v-1}, G_v]) are paired exactly when
// the two level intervals overlap, F_{u-1} < G_v and G_{v-1} < F_u. For each u the partners form
// a range of v, and |x_u - y_v| is largest at an end of it, so W_inf = max over u of the distance
// to the two ends. cmp(u, v) compares F_u with G_v and may answer kUnknown ("different, order
// not known"): the walk then widens the ranges to every pair that may overlap, so the result is
// an upper bound of W_inf, exact when no comparison is kUnknown. Only comparisons that are known
// move a range end inward, so a wrong kEqual or strict answer is the only way to under-report.
//
// Mode "lower bound": let cmp answer kEqual for every comparison it cannot decide; ends whose
// pair is not certainly coupled (lo > hi) are skipped, so only certainly paired atoms count and
// the result is a lower bound of W_inf.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>

namespace puffer::transport {

enum class LevelCmp { kLess, kEqual, kGreater, kUnknown };

// The walk itself: visit(u, lo, hi) for every atom u of P whose partner range [lo, hi] of Q
// atoms is not empty (the pairs that may overlap, see above; the plan-based Markov mechanisms
// take these as the entries of the coupling, markov_plans.cpp). n, m: the numbers of atoms.
template <class Cmp, class Visit>
void coupled_ranges(std::size_t n, std::size_t m, Cmp&& cmp, Visit&& visit) {
  std::size_t lo = 0, hi = 0;
  for (std::size_t u = 0; u < n; ++u) {
    // hi: the last v with G_{v-1} possibly below F_u
    while (hi + 1 < m) {
      const LevelCmp c = cmp(u, hi);
      if (c != LevelCmp::kGreater && c != LevelCmp::kUnknown) break;
      ++hi;
    }
    // lo: the first v with G_v possibly above F_{u-1}
    if (u > 0)
      while (lo + 1 < m) {
        const LevelCmp c = cmp(u - 1, lo);
        if (c != LevelCmp::kGreater && c != LevelCmp::kEqual) break;
        ++lo;
      }
    if (lo <= hi) visit(u, lo, hi);
  }
}

// x: n ascending atoms of P, y: m ascending atoms of Q (reachable atoms only). cmp(u, v):
// F_u versus G_v (F_{n-1} = G_{m-1} = 1).
template <class Cmp>
double w_inf_ranges(const double* x, std::size_t n, const double* y, std::size_t m, Cmp&& cmp) {
  double w = 0.0;
  coupled_ranges(n, m, cmp, [&](std::size_t u, std::size_t lo, std::size_t hi) {
    w = std::max(w, std::max(std::fabs(x[u] - y[lo]), std::fabs(x[u] - y[hi])));
  });
  return w;
}

}  // namespace puffer::transport
