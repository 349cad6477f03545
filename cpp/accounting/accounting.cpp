#include "accounting/accounting.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "common/errors.hpp"
#include "common/rounding.hpp"

namespace puffer::accounting {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

void check_csr(const std::int64_t* indptr, const std::int64_t* indices, std::size_t n_rows, std::size_t k) {
  require(indptr[0] == 0, "indptr[0]", indptr[0], "0");
  for (std::size_t f = 0; f < n_rows; ++f) {
    require(indptr[f + 1] >= indptr[f], "indptr", f, "a non-decreasing offset array");
    for (std::int64_t q = indptr[f]; q < indptr[f + 1]; ++q) {
      require(indices[q] >= 0 && static_cast<std::size_t>(indices[q]) < k, "indices", indices[q],
              "a member index in [0, k)");
      require(q == indptr[f] || indices[q] > indices[q - 1], "indices", indices[q],
              "sorted distinct members within each row");
    }
  }
}

void check_terms(const double* t, std::size_t k, const char* name) {
  for (std::size_t i = 0; i < k; ++i) require(t[i] >= 0.0, name, t[i], "terms >= 0 (inf allowed, not NaN)");
}
}  // namespace

double group_factor(double n, double eps) {
  require(n >= 0.0, "n", n, "a group size >= 0");
  require(eps >= 0.0 && std::isfinite(eps), "eps", eps, "a finite eps >= 0");
  if (std::isinf(n)) return kInf;
  if (n == 0.0) return 0.0;
  if (eps == 0.0) return n;
  if (n == 1.0) return 1.0;  // [1]_eps = 1 for every eps (e^eps - 1 overflows from eps = 710 on)
  if (eps * n < 700.0) {
    // eps*n, expm1 (<= 1 ulp each in glibc), the division: covered by 6 ulps.
    return round_up(std::expm1(eps * n) / std::expm1(eps), 6);
  }
  // log space: log [n]_eps = eps (n - 1) + log1p(-e^{-eps n}) - log1p(-e^{-eps}); both
  // expm1 overflow for eps >= 710 (inf / inf made the accountant's terms NaN, issue 29), and
  // the quotient stays finite up to eps (n - 1) ~ 709. Each term is rounded relative to its
  // size: 8 eps (eps n + 1) absolute covers them (and exp's ulp).
  const double lf = eps * (n - 1.0) + std::log1p(-std::exp(-eps * n)) - std::log1p(-std::exp(-eps));
  const double err = 8.0 * std::numeric_limits<double>::epsilon() * (eps * n + 1.0);
  return round_up(std::exp(lf + err), 4);
}

double ext_mul(double a, double n) {
  require(a >= 0.0, "a", a, "a privacy parameter >= 0");
  require(n >= 0.0, "n", n, "a distance >= 0 (inf allowed)");
  if (std::isinf(n) || std::isinf(a)) return (n == 0.0 || a == 0.0) && !std::isinf(n) ? 0.0 : kInf;
  return a * n;
}

std::size_t bfs_multi(const std::int64_t* indptr, const std::int64_t* indices, std::size_t n_vertices,
                      const std::int64_t* sources, std::size_t n_sources, std::int64_t cap,
                      std::int64_t* dist_out) {
  std::fill(dist_out, dist_out + n_vertices, -1);
  std::vector<std::int64_t> frontier, next;
  for (std::size_t s = 0; s < n_sources; ++s) {
    require(sources[s] >= 0 && static_cast<std::size_t>(sources[s]) < n_vertices, "sources", sources[s],
            "a vertex index in [0, n_vertices)");
    if (dist_out[sources[s]] < 0) {
      dist_out[sources[s]] = 0;
      frontier.push_back(sources[s]);
    }
  }
  std::size_t reached = frontier.size();
  std::int64_t level = 0;
  while (!frontier.empty() && (cap < 0 || level < cap)) {
    ++level;
    next.clear();
    for (std::int64_t v : frontier)
      for (std::int64_t q = indptr[v]; q < indptr[v + 1]; ++q) {
        const std::int64_t w = indices[q];
        if (dist_out[w] < 0) {
          dist_out[w] = level;
          next.push_back(w);
        }
      }
    reached += next.size();
    frontier.swap(next);
  }
  return reached;
}

FootprintMax footprint_max_single(const std::int64_t* indptr, const std::int64_t* indices, std::size_t n_fp,
                                  const double* t1, std::size_t k) {
  check_csr(indptr, indices, n_fp, k);
  check_terms(t1, k, "t1");
  FootprintMax r{0.0, -1, -1, 0, n_fp};
  for (std::size_t f = 0; f < n_fp; ++f) {
    double w = 0.0;
    for (std::int64_t q = indptr[f]; q < indptr[f + 1]; ++q) w += t1[indices[q]];
    r.terms = std::max<std::size_t>(r.terms, static_cast<std::size_t>(indptr[f + 1] - indptr[f]));
    if (r.s < 0 || w > r.value) {
      r.value = w;
      r.s = static_cast<std::int64_t>(f);
    }
  }
  return r;
}

FootprintMax footprint_max_pair(const std::int64_t* indptr, const std::int64_t* indices, std::size_t n_fp,
                                const std::uint8_t* self_ok, const double* t1, const double* t2, std::size_t k) {
  check_csr(indptr, indices, n_fp, k);
  check_terms(t1, k, "t1");
  check_terms(t2, k, "t2");
  FootprintMax r{0.0, -1, -1, 0, 0};
  if (n_fp == 0) return r;
  // u(S) = sum_{i in S} max(t1_i, t2_i / 2) bounds each footprint's share of a pair's loss:
  // loss(S, T) <= u(S) + u(T). Visiting footprints by decreasing u lets the search stop as soon
  // as no remaining pair can beat the best loss found (exact maximum, not a heuristic).
  std::vector<double> u(n_fp, 0.0);
  for (std::size_t f = 0; f < n_fp; ++f)
    for (std::int64_t q = indptr[f]; q < indptr[f + 1]; ++q) {
      const std::int64_t i = indices[q];
      u[f] += std::max(t1[i], 0.5 * t2[i]);
    }
  std::vector<std::size_t> order(n_fp);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return u[a] > u[b]; });
  // The bound is itself a float sum; widen it by the worst relative summation error so the
  // pruning never discards a pair whose exact loss exceeds the best found.
  std::size_t max_len = 0;
  for (std::size_t f = 0; f < n_fp; ++f)
    max_len = std::max<std::size_t>(max_len, static_cast<std::size_t>(indptr[f + 1] - indptr[f]));
  const double widen = 1.0 + 4.0 * static_cast<double>(2 * max_len + 2) * std::numeric_limits<double>::epsilon();
  bool have = false;
  for (std::size_t a = 0; a < n_fp; ++a) {
    const std::size_t S = order[a];
    if (have && 2.0 * u[S] * widen < r.value) break;
    for (std::size_t b = a; b < n_fp; ++b) {
      const std::size_t T = order[b];
      if (have && (u[S] + u[T]) * widen < r.value) break;
      if (S == T && !self_ok[S]) continue;
      // merge the two sorted member lists
      double w = 0.0;
      std::int64_t p = indptr[S], pe = indptr[S + 1], q = indptr[T], qe = indptr[T + 1];
      std::size_t n_terms = 0;
      while (p < pe || q < qe) {
        if (q >= qe || (p < pe && indices[p] < indices[q])) {
          w += t1[indices[p++]];
        } else if (p >= pe || indices[q] < indices[p]) {
          w += t1[indices[q++]];
        } else {
          w += t2[indices[p]];
          ++p;
          ++q;
        }
        ++n_terms;
      }
      ++r.pairs_evaluated;
      r.terms = std::max(r.terms, n_terms);
      if (!have || w > r.value) {
        have = true;
        r.value = w;
        r.s = static_cast<std::int64_t>(S);
        r.t = static_cast<std::int64_t>(T);
        if (std::isinf(w)) return r;
      }
    }
  }
  return r;
}

}  // namespace puffer::accounting
