#include "models/poisson_binomial.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/errors.hpp"

namespace puffer::models {

std::vector<double> poisson_binomial(const double* p, std::size_t n, std::size_t skip) {
  for (std::size_t k = 0; k < n; ++k)
    require(std::isfinite(p[k]) && p[k] >= 0.0 && p[k] <= 1.0, "p", p[k], "probabilities in [0, 1]");
  // Deterministic users (p = 0 or 1) shift the support; the others spread it.
  std::size_t shift = 0;
  std::vector<double> q;
  double log_floor = 0.0;
  for (std::size_t k = 0; k < n; ++k) {
    if (k == skip) continue;
    if (p[k] == 1.0) ++shift;
    else if (p[k] > 0.0) {
      q.push_back(p[k]);
      log_floor += std::log(std::min(p[k], 1.0 - p[k]));
    }
  }
  const std::size_t m = q.size();
  const std::size_t n_out = (skip < n ? n - 1 : n) + 1;
  std::vector<double> out(n_out, 0.0);
  std::vector<double> f(m + 1, 0.0);
  if (log_floor > std::log(1e-300)) {
    // Each reachable entry is a sum of path products >= prod min(p, 1-p) > 1e-300: no underflow.
    f[0] = 1.0;
    for (std::size_t j = 0; j < m; ++j) {
      const double pj = q[j], qj = 1.0 - q[j];
      for (std::size_t c = j + 1; c > 0; --c) f[c] = f[c] * qj + f[c - 1] * pj;
      f[0] *= qj;
    }
    double tot = 0.0;
    for (double v : f) tot += v;
    for (std::size_t c = 0; c <= m; ++c) out[shift + c] = f[c] / tot;
  } else {
    const double ninf = -std::numeric_limits<double>::infinity();
    std::fill(f.begin(), f.end(), ninf);
    f[0] = 0.0;
    auto lse = [&](double a, double b) {
      if (a == ninf) return b;
      if (b == ninf) return a;
      return a > b ? a + std::log1p(std::exp(b - a)) : b + std::log1p(std::exp(a - b));
    };
    for (std::size_t j = 0; j < m; ++j) {
      const double lp = std::log(q[j]), lq = std::log1p(-q[j]);
      for (std::size_t c = j + 1; c > 0; --c) f[c] = lse(f[c] + lq, f[c - 1] + lp);
      f[0] += lq;
    }
    double lt = ninf;
    for (double v : f) lt = lse(lt, v);
    for (std::size_t c = 0; c <= m; ++c) {
      double v = std::exp(f[c] - lt);
      out[shift + c] = v > 0.0 ? v : std::numeric_limits<double>::denorm_min();
    }
  }
  return out;
}

}  // namespace puffer::models
