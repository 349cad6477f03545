// Transport kernel: quantile (north-west corner) couplings and W_inf in 1-D, bottleneck W_inf
// in d dimensions, the (z, delta)-nearness radius, and batches of 1-D W_inf.
//
// Theory: Pierquin et al. 2024 (couplings, W_inf, W_p; the monotone coupling is optimal in 1-D for W_p
// and W_inf), the nearness radius (by the interval greedy), the bottleneck W_inf in R^d
// (bottleneck transport = binary search over candidate distances + max-flow feasibility,
// Strassen/Hall); Ding 2022 (two-pointer on sorted supports; float residues must not invent
// far-apart pairs).
//
// Float tolerance rule (the "level rule", used by every float 1-D routine here):
//   * each law is normalised by its own total T (compensated sum of block totals);
//   * the end level of atom i is computed from the left, F_i = sum_{k<=i} p_k / T, and from the
//     right, S_i = sum_{k>i} p_k / T, by the canonical block formulas of common_1d.hpp, whose
//     relative error is <= E = min(k + 4, 132) * 2^-53 (k = number of summed masses);
//   * two end levels (one per law) are compared in the representation where they are small:
//     F if min(F_P, F_Q) <= 1/2, else S (reversed). With a, b the two values they are TIED iff
//         |a - b| <= max(a, b) * (rtol + E_a + E_b),
//     the error bounds of both computed levels plus `rtol` for the rounding of the inputs
//     themselves (default 8 * 2^-53). A tie advances both pointers, so rounding leftovers never
//     create an entry (Ding 2022: 99 instead of 1);
//   * otherwise the smaller level ends first. Every atom of positive mass appears in at least
//     one plan entry, so a 1e-300 atom (or a subnormal one) is never dropped, in either tail.
//   Levels that differ (relatively, in their small tail) by more than the band are ordered
//   exactly, so W_inf is never under-reported for them; levels equal in the intended (decimal
//   or rational) law are tied. Only two distinct intended levels closer than the band are
//   indistinguishable from rounding; exact mode decides those.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace puffer::transport {

using i128 = __int128;

constexpr double kDefaultRtol = 8.0 * 0x1p-53;
constexpr double kDefaultSumTol = 1e-9;

// COO transport plan. mass[k] is the float mass; for exact plans, mass_hi/mass_lo hold the
// 128-bit numerator of the exact mass over den_p * den_q (mass_lo is the low 64 bits).
struct Plan {
  std::vector<std::int64_t> src, dst;
  std::vector<double> mass;
  std::vector<std::int64_t> mass_hi;
  std::vector<std::uint64_t> mass_lo;
  std::int64_t near_ties = 0;  // tie decisions between levels that were not bitwise equal
};

// ------------------------------------------------------------------ 1-D, float masses
// x (n atoms, ascending, finite; duplicates allowed) with masses p (finite, >= 0; zero-mass
// atoms are skipped), same for y/q. Each total must be within sum_tol of 1 (sum_tol < 0: any
// positive total, renormalised). Throws InvalidArgument on bad input.
double w_inf_1d(const double* x, const double* p, std::size_t n, const double* y, const double* q,
                std::size_t m, double rtol = kDefaultRtol, double sum_tol = kDefaultSumTol);

Plan coupling_1d(const double* x, const double* p, std::size_t n, const double* y, const double* q,
                 std::size_t m, double rtol = kDefaultRtol, double sum_tol = kDefaultSumTol);

// Exact: masses a[i] / den_p and b[j] / den_q (non-negative int64 numerators summing exactly
// to the denominators, denominators in [1, 2^62]). Comparisons in 128-bit integers.
Plan coupling_1d_exact(const double* x, const std::int64_t* a, std::size_t n, std::int64_t den_p,
                       const double* y, const std::int64_t* b, std::size_t m, std::int64_t den_q);

// W_inf between laws given by precomputed monotone "level keys" (e.g. log F in the lower half,
// -log S in the upper half; Seeman et al. 2024): key_p[i] is the end level of atom i, non-decreasing,
// +inf allowed for the last atom. Keys a, b tie iff a == b or |a-b| <= tol*max(1,|a|,|b|).
double w_inf_keys(const double* x, const double* kp, std::size_t n, const double* y, const double* kq,
                  std::size_t m, double tol);

// K pairs in CSR form: law k of P is x[offp[k]:offp[k+1]], likewise Q. out[k] = W_inf.
void w_inf_1d_batch(const double* x, const double* p, const std::int64_t* offp, std::size_t n_total_p,
                    const double* y, const double* q, const std::int64_t* offq, std::size_t n_total_q,
                    std::size_t K, double* out, unsigned threads, double rtol = kDefaultRtol,
                    double sum_tol = kDefaultSumTol);

// ------------------------------------------------------------------ d-D bottleneck W_inf
// X: n x d row-major, Y: m x d. norm: 1, 2, or 0 (= l_inf). Float masses are normalised; a
// threshold z is feasible iff every atom has a partner within z and the max-flow through the
// edges of length <= z ships every atom of either law up to band * (its own mass),
// band = rtol + 4 (n + m + 4) 2^-53 (the d-D form of the level rule: a stranded atom counts
// however small its mass; decimal rounding leftovers do not).
struct Bottleneck {
  double value = 0.0;
  Plan plan;  // filled when want_plan
};
Bottleneck w_inf_nd(const double* X, const double* p, std::size_t n, const double* Y, const double* q,
                    std::size_t m, std::size_t d, int norm, bool want_plan, double rtol = kDefaultRtol,
                    double sum_tol = kDefaultSumTol);
// Exact: integer masses over denominators (each <= 2^62), max-flow in 128-bit integers.
Bottleneck w_inf_nd_exact(const double* X, const std::int64_t* a, std::size_t n, std::int64_t den_p,
                          const double* Y, const std::int64_t* b, std::size_t m, std::int64_t den_q,
                          std::size_t d, int norm, bool want_plan);

// ------------------------------------------------------------------ (z, delta)-nearness, 1-D
// Smallest z in {0} U {|x_i - y_j|} with max_pi pi{|X - Y| <= z} >= 1 - delta, by the
// interval greedy (Pierquin et al. 2024) and binary search over the sorted candidates.
// Float: the matched mass counts as >= 1 - delta iff mass >= (1 - delta) * (1 - rtol*(n+m)).
double near_radius_1d(const double* x, const double* p, std::size_t n, const double* y, const double* q,
                      std::size_t m, double delta, double rtol = kDefaultRtol, double sum_tol = kDefaultSumTol);
// Exact: masses a/den_p, b/den_q; `need` = required matched mass in units 1/(den_p*den_q).
double near_radius_1d_exact(const double* x, const std::int64_t* a, std::size_t n, std::int64_t den_p,
                            const double* y, const std::int64_t* b, std::size_t m, std::int64_t den_q,
                            i128 need);

// Distance under norm (1, 2, 0 = inf) between rows of length d.
double distance(const double* u, const double* v, std::size_t d, int norm);

}  // namespace puffer::transport
