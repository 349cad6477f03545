// Shared helpers of the 1-D transport routines: input validation and compensated sums.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>
#include <algorithm>

#include "common/errors.hpp"

namespace puffer::transport::detail {

// Kahan-Babuska running sum: s + c carries the exact sum of the terms to ~2 ulps whatever
// their number (the level rule needs levels accurate to a few ulps, Ding 2022).
struct KSum {
  double s = 0.0, c = 0.0;
  inline void add(double x) {
    double t = s + x;
    double z = t - s;
    c += (s - (t - z)) + (x - z);
    s = t;
  }
  inline double val() const { return s + c; }
};

constexpr std::size_t kBlock = 64;

// A total-mass tolerance: NaN or a value >= 1 (inf) would disable the mass check silently. A
// negative value is the documented "any positive total" mode (internal callers with unnormalised
// laws); the public facade accepts only [0, 1).
inline void check_sum_tol(double sum_tol) {
  if (std::isnan(sum_tol) || sum_tol >= 1.0)
    throw InvalidArgument("sum_tol", to_str(sum_tol), "a tolerance in [0, 1) (or < 0: any positive total)");
}

// Compensated total of p with 4 independent lanes (vectorisable), and input checks.
// Returns the total; throws InvalidArgument naming `pname` / `xname` on bad input.
inline double checked_total(const double* x, const double* p, std::size_t n, double sum_tol,
                            const char* xname, const char* pname, double* min_mass = nullptr) {
  check_sum_tol(sum_tol);
  if (n == 0) throw InvalidArgument(xname, "an empty law", "at least one atom");
  if (!std::isfinite(x[0]) || !std::isfinite(x[n - 1]))
    throw InvalidArgument(xname, "a non-finite atom", "finite atoms");
  const double inf = std::numeric_limits<double>::infinity();
  double s[4] = {0, 0, 0, 0}, c[4] = {0, 0, 0, 0}, mn[4] = {inf, inf, inf, inf};
  bool sorted = true;
  std::size_t k = 0;
  for (; k + 4 <= n; k += 4) {
    for (int l = 0; l < 4; ++l) {
      double v = p[k + l];
      double t = s[l] + v;
      double z = t - s[l];
      c[l] += (s[l] - (t - z)) + (v - z);
      s[l] = t;
      mn[l] = v < mn[l] ? v : mn[l];
    }
  }
  double tail_min = inf;
  KSum rest;
  for (; k < n; ++k) {
    rest.add(p[k]);
    tail_min = p[k] < tail_min ? p[k] : tail_min;
  }
  for (std::size_t i = 1; i < n; ++i) sorted &= (x[i] >= x[i - 1]);  // false on NaN
  if (!sorted) {
    for (std::size_t i = 1; i < n; ++i)
      if (!(x[i] >= x[i - 1]))
        throw InvalidArgument(xname, "unsorted or NaN at index " + std::to_string(i),
                              "atoms sorted ascending, without NaN");
  }
  KSum tot;
  for (int l = 0; l < 4; ++l) {
    tot.add(s[l]);
    tot.add(c[l]);
  }
  tot.add(rest.s);
  tot.add(rest.c);
  double T = tot.val();
  double m = std::min(std::min(mn[0], mn[1]), std::min(std::min(mn[2], mn[3]), tail_min));
  if (!std::isfinite(T) || m < 0.0) {
    for (std::size_t i = 0; i < n; ++i)
      if (!(p[i] >= 0.0) || !std::isfinite(p[i]))
        throw InvalidArgument(pname, to_str(p[i]) + " at index " + std::to_string(i),
                              "finite masses >= 0");
    throw InvalidArgument(pname, "sum " + to_str(T), "a finite total");
  }
  if (!(T > 0.0)) throw InvalidArgument(pname, "all zero", "masses with a positive sum");
  if (min_mass) *min_mass = m;
  if (sum_tol >= 0.0 && std::fabs(T - 1.0) > sum_tol)
    throw InvalidArgument(pname, "sum " + to_str(T), "masses summing to 1 within " + to_str(sum_tol));
  return T;
}

// ---- Canonical levels (the one definition shared by every float path, so the careful walk
// and the fast path take identical decisions). Atoms are grouped in blocks of kBlock:
//   t_b       = plain left-to-right sum of the masses of block b;
//   L_b, R_b  = compensated sums of t_0..t_{b-1} and of t_{b+1}..;
//   F_i       = fl(fl(L_b + (p_{b0} + ... + p_i)) * inv)         (inner sum left to right)
//   S_i       = fl(fl(R_b + (p_{i+1} + ... + p_{b_end})) * inv)  (inner sum right to left)
// with inv = 1/T. Relative error of F_i (or S_i) <= (2 (kBlock - 1) + 6) u whatever n is.
constexpr double kLevelErrU = 2.0 * (kBlock - 1) + 6.0;  // in units of u = 2^-53

// Atoms: finite, sorted ascending (duplicates allowed). Throws InvalidArgument.
inline void check_atoms(const double* x, std::size_t n, const char* xname) {
  if (n == 0) throw InvalidArgument(xname, "an empty law", "at least one atom");
  if (!std::isfinite(x[0]) || !std::isfinite(x[n - 1]))
    throw InvalidArgument(xname, "a non-finite atom", "finite atoms");
  bool sorted = true;
  for (std::size_t i = 1; i < n; ++i) sorted &= (x[i] >= x[i - 1]);  // false on NaN
  if (!sorted)
    for (std::size_t i = 1; i < n; ++i)
      if (!(x[i] >= x[i - 1]))
        throw InvalidArgument(xname, "unsorted or NaN at index " + std::to_string(i),
                              "atoms sorted ascending, without NaN");
}

// Masses of one law: block totals, the canonical bases L, R and total T (= compensated sum of
// the block totals), the smallest mass. Throws on negative / non-finite masses or a total
// farther than sum_tol from 1 (sum_tol < 0: any positive total).
struct LawSetup {
  double T = 0.0;
  double min_mass = 0.0;
};
inline LawSetup setup_law(const double* p, std::size_t n, double sum_tol, const char* pname,
                          std::vector<double>& L, std::vector<double>& R) {
  check_sum_tol(sum_tol);
  if (n == 0) throw InvalidArgument(pname, "an empty law", "at least one atom");
  const std::size_t nb = (n + kBlock - 1) / kBlock;
  L.resize(nb);
  R.resize(nb);
  double mn = std::numeric_limits<double>::infinity();
  // t_b into R (reused as scratch): four interleaved partial sums of consecutive masses
  // (vectorisable), combined as (s0 + s1) + (s2 + s3); error <= 18 u relative per block.
  for (std::size_t b = 0; b < nb; ++b) {
    const std::size_t s0i = b * kBlock, e = std::min(n, s0i + kBlock);
    double s4[4] = {0, 0, 0, 0}, m4[4] = {mn, mn, mn, mn};
    std::size_t i = s0i;
    for (; i + 4 <= e; i += 4)
      for (int l = 0; l < 4; ++l) {
        const double v = p[i + l];
        s4[l] += v;
        m4[l] = v < m4[l] ? v : m4[l];
      }
    for (; i < e; ++i) {
      s4[0] += p[i];
      m4[0] = p[i] < m4[0] ? p[i] : m4[0];
    }
    R[b] = (s4[0] + s4[1]) + (s4[2] + s4[3]);
    mn = std::min(std::min(m4[0], m4[1]), std::min(m4[2], m4[3]));
  }
  KSum a;
  for (std::size_t k = 0; k < nb; ++k) {
    L[k] = a.val();
    a.add(R[k]);
  }
  const double T = a.val();
  if (!std::isfinite(T) || !(mn >= 0.0)) {
    for (std::size_t i = 0; i < n; ++i)
      if (!(p[i] >= 0.0) || !std::isfinite(p[i]))
        throw InvalidArgument(pname, to_str(p[i]) + " at index " + std::to_string(i), "finite masses >= 0");
    throw InvalidArgument(pname, "sum " + to_str(T), "a finite total");
  }
  if (!(T > 0.0)) throw InvalidArgument(pname, "all zero", "masses with a positive sum");
  if (sum_tol >= 0.0 && std::fabs(T - 1.0) > sum_tol)
    throw InvalidArgument(pname, "sum " + to_str(T), "masses summing to 1 within " + to_str(sum_tol));
  // levels are sums times 1/T: a total below ~2^-1024 (possible with sum_tol < 0) would make
  // 1/T infinite and every level NaN or inf
  if (!std::isfinite(1.0 / T))
    throw InvalidArgument(pname, "sum " + to_str(T), "a total whose reciprocal is finite (>= 2^-1024)");
  KSum c;
  for (std::size_t k = nb; k-- > 0;) {
    const double t = R[k];
    R[k] = c.val();
    c.add(t);
  }
  return {T, mn};
}

// Level comparison of the level rule: a, b are the two levels in the representation where
// they are small. Returns -1 (a first), 0 (tie), +1 (b first). near_tie counts non-bitwise ties.
inline int level_cmp(double a, double b, double rtol, std::int64_t& near_tie) {
  if (a == b) return 0;
  double d = a - b;
  double mx = a > b ? a : b;
  if (std::fabs(d) <= rtol * mx) {
    ++near_tie;
    return 0;
  }
  return d < 0 ? -1 : 1;
}

inline void check_rtol(double rtol) {
  if (!(rtol >= 0.0 && rtol < 1e-3)) throw InvalidArgument("rtol", to_str(rtol), "a relative tolerance in [0, 1e-3)");
}

// The careful staircase W_inf (coupling_1d.cpp); the fast path falls back to it.
double w_inf_1d_careful(const double* x, const double* p, std::size_t n, const double* y, const double* q,
                        std::size_t m, double rtol, double sum_tol);

}  // namespace puffer::transport::detail
