// Per-plan quantities of two plan-based mechanisms, over batches of quantile-coupling plans:
//   * Theorem 2 of Ding 2022 (Kantorovich mechanism, relaxed conditions (16a)/(16b)): per row x
//     and per column x' of the plan pi*, the root eta_k of sum m exp(eta d) = e^eps M_k, and the
//     smallest of them (with the binding row/column);
//   * the exponential-moment transport cost of the Distribution-Aware GWM (Pierquin et al.
//     2024, Thm 4.5): log sum_k m_k exp((a'-1) s(v_k)) per plan.
//
// Safe side: both evaluate a log-sum-exp; its computed value is moved up by a bound on its
// rounding error (plus 2 * mass_rtol for the caller's mass uncertainty), so the Theorem 2 root
// is a feasible (lower) eta -- more noise -- and the log-moment an upper bound.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <vector>

#include "common/job.hpp"

namespace puffer::transport {

// Polled once per plan (batches); returning true stops the kernel, which then throws
// puffer::Cancelled (common/job.hpp, the one cancellation exception). An empty function never
// cancels. The Markov consumers (models/markov_plans.hpp) take a JobControl instead.
using CancelFn = std::function<bool()>;
using puffer::Cancelled;

// Witnesses are reported as the first candidate within this relative band of the extreme (the
// first group whose root is <= eta (1 + band), rows by ascending key, then columns by ascending
// key), so that near-equal roots -- a plan whose entries all move by the same distance has
// hundreds, equal up to rounding -- do not make the witness depend on rounding noise.
constexpr double kWitnessBand = 1e-9;

// Theorem 2 for one plan. eta: the smallest root over the constrained rows and columns, less
// at most 2^-40 relative (pruning slack, rounded down: more noise); kind: 0 = nothing
// constrained (eta = +inf), 1 = row, 2 = column; key = the row's source atom or the column's
// target atom of the witness (see kWitnessBand).
struct Thm2 {
  double eta = std::numeric_limits<double>::infinity();
  int kind = 0;
  double key = 0.0;
};

// One plan of n entries: distance d[k] >= 0, mass[k] >= 0 (0 allowed: log-space plans),
// row key row[k] (source atom), column key col[k] (target atom). Groups are the entries of
// equal key, taken in entry order.
Thm2 thm2_eta(const double* d, const double* mass, const double* row, const double* col, std::size_t n,
              double eps, double mass_rtol = 0.0);

// K plans in CSR form (plan k = entries off[k]..off[k+1]); out[k] = thm2_eta of plan k.
void thm2_batch(const double* d, const double* mass, const double* row, const double* col,
                const std::int64_t* off, std::size_t K, double eps, double mass_rtol, unsigned threads,
                const CancelFn& cancel, Thm2* out);

// K pairs of float laws in CSR form (law k of P: atoms x / masses p [offp[k], offp[k+1]), same
// for Q; atoms ascending, masses summing to 1 within kDefaultSumTol): out[k] = thm2_eta on the
// quantile coupling of pair k (coupling_1d, default level rule, d = |x - x'|) and dmax[k] =
// the largest |x - x'| over that plan. Throws InvalidArgument as coupling_1d does.
void thm2_laws_batch(const double* x, const double* p, const std::int64_t* offp, std::size_t n_p,
                     const double* y, const double* q, const std::int64_t* offq, std::size_t n_q, std::size_t K,
                     double eps, unsigned threads, const CancelFn& cancel, Thm2* out, double* dmax);

// DAGWM log-moments of K plans (CSR offsets off): out[k] = log sum_{j in plan k}
// exp(logm[j] + a2m1 * s[idx[j]]), an upper bound (s: shift divergences of the distinct
// displacements, idx: index of entry j's displacement in s).
void dagwm_log_moments(const double* logm, const double* s, const std::int64_t* idx, std::size_t n_s,
                       const std::int64_t* off, std::size_t K, double a2m1, unsigned threads,
                       const CancelFn& cancel, double* out);

// Merges, per plan, the entries with the same displacement index: one entry per distinct
// idx (ascending) whose log-mass bounds the log of their total mass from above. Output CSR
// (logm_out, idx_out, off_out with K + 1 offsets). The log-moments of the merged plans are
// >= those of the original ones.
void dagwm_merge(const double* logm, const std::int64_t* idx, const std::int64_t* off, std::size_t K,
                 unsigned threads, std::vector<double>& logm_out, std::vector<std::int64_t>& idx_out,
                 std::vector<std::int64_t>& off_out);

// The log-sum-exp error bound used above (absolute): n terms, largest |term| tmax.
double lse_margin(std::size_t n, double tmax);

}  // namespace puffer::transport
