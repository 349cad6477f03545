// Fast 1-D W_inf on presorted float arrays (the hot path of calibration, w_inf_sorted and the
// batches).
//
// It returns exactly the value of the careful staircase walk (coupling_1d.cpp; the level rule
// of transport.hpp on the canonical block levels of common_1d.hpp) without walking:
//   1. one pass over the masses per law (block totals, bases, total, checks);
//   2. one pass per law writing a monotone int64 key per atom (bits of F while F <= 1/2,
//      2 bits(1/2) - bits(S) above), so key order is the order the careful walk compares;
//   3. ranks instead of a merge: P atom i overlaps the Q atoms lo(i) .. hi(i) with
//      lo(i) = #{Q keys <= key_{i-1}} and hi(i) = #{Q keys < key_i}; since y is sorted, the
//      largest |x_i - y_j| over that range is at one of its ends. One pass over P advances the
//      Q rank through windows of four keys (a branch-free step in the usual case), so there
//      is no unpredictable branch per atom, unlike a two-pointer walk.
// With exact comparisons the staircase of the careful walk is exactly these ranges. Whenever a
// key lies within the (loose) tie band of a key of the other law or of level 1/2, an atom's
// range is empty (collapsed atom), a law has a zero mass, or more than two keys tie exactly,
// the whole problem goes to the careful walk, so near-tie semantics live in one place only.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/errors.hpp"
#include "transport/common_1d.hpp"
#include "transport/transport.hpp"

namespace puffer::transport {
namespace {

constexpr double kU = 0x1p-53;
using detail::kBlock;
using detail::kLevelErrU;

struct Scratch {
  std::vector<double> LP, RP, LQ, RQ;
};
thread_local Scratch tl_scratch;

enum class Status { ok, fallback, unsorted };

inline std::int64_t bits(double v) {
  std::int64_t k;
  std::memcpy(&k, &v, sizeof k);
  return k;
}
inline double from_bits(std::int64_t k) {
  double v;
  std::memcpy(&v, &k, sizeof v);
  return v;
}
const std::int64_t kHalf = bits(0.5);
const std::int64_t kTop = 2 * bits(0.5);  // key of S = 0 (the top atom)

// Monotone int64 key of every atom's end level: bits(F_i) while F_i <= 1/2, else
// 2 bits(1/2) - bits(S_i). F, S are the canonical levels (identical arithmetic to levels() in
// coupling_1d.cpp), so key order = the order the careful walk uses.
void keys_law(const double* p, std::size_t n, double T, const std::vector<double>& L, const std::vector<double>& R,
              std::int64_t* k) {
  const double inv = 1.0 / T;
  const std::size_t nb = L.size();
  // 0: every F in the block <= 1/2; 2: every F > 1/2; 1: the block holding level 1/2.
  auto mode = [&](std::size_t b) {
    const double lo_end = (b + 1 < nb ? L[b + 1] : T) * inv;
    if (lo_end < 0.5 * (1 - 1e-12)) return 0;
    if (L[b] * inv > 0.5 * (1 + 1e-12)) return 2;
    return 1;
  };
  std::size_t b = 0;
  while (b < nb) {
    const int md = mode(b);
    // four full blocks of the same mode: interleave their (independent) recurrences
    if (md != 1 && b + 4 < nb && mode(b + 3) == md && (b + 4) * kBlock <= n) {
      if (md == 0) {
        double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        const double B0 = L[b], B1 = L[b + 1], B2 = L[b + 2], B3 = L[b + 3];
        const double* q0 = p + b * kBlock;
        std::int64_t* k0 = k + b * kBlock;
        for (std::size_t t = 0; t < kBlock; ++t) {
          a0 += q0[t], a1 += q0[t + kBlock], a2 += q0[t + 2 * kBlock], a3 += q0[t + 3 * kBlock];
          k0[t] = bits((B0 + a0) * inv), k0[t + kBlock] = bits((B1 + a1) * inv);
          k0[t + 2 * kBlock] = bits((B2 + a2) * inv), k0[t + 3 * kBlock] = bits((B3 + a3) * inv);
        }
      } else {
        double c0 = 0, c1 = 0, c2 = 0, c3 = 0;
        const double B0 = R[b], B1 = R[b + 1], B2 = R[b + 2], B3 = R[b + 3];
        const double* q0 = p + b * kBlock;
        std::int64_t* k0 = k + b * kBlock;
        for (std::size_t t = kBlock; t-- > 0;) {
          k0[t] = kTop - bits((B0 + c0) * inv), k0[t + kBlock] = kTop - bits((B1 + c1) * inv);
          k0[t + 2 * kBlock] = kTop - bits((B2 + c2) * inv), k0[t + 3 * kBlock] = kTop - bits((B3 + c3) * inv);
          c0 += q0[t], c1 += q0[t + kBlock], c2 += q0[t + 2 * kBlock], c3 += q0[t + 3 * kBlock];
        }
      }
      b += 4;
      continue;
    }
    const std::size_t s0 = b * kBlock, e = std::min(n, s0 + kBlock);
    if (md != 0) {
      double c = 0.0;
      for (std::size_t i = e; i-- > s0;) {
        k[i] = kTop - bits((R[b] + c) * inv);
        c += p[i];
      }
    }
    if (md != 2) {
      double a = 0.0;
      for (std::size_t i = s0; i < e; ++i) {
        a += p[i];
        const double f = (L[b] + a) * inv;
        if (md == 0 || f <= 0.5) k[i] = bits(f);
      }
    }
    ++b;
  }
}

struct RankScratch {
  std::vector<std::int64_t> kp, kq;
};
thread_local RankScratch tl_rank;

// W_inf by ranks instead of a walk. The staircase pairs P atom i with the Q atoms lo(i) ..
// hi(i), lo(i) = #{Q keys <= key_{i-1}} (0 for i = 0), hi(i) = #{Q keys < key_i}; as y is
// sorted, the largest |x_i - y_j| of that range is at an end. Any key within the loose tie band of a key of the other law, or of
// level 1/2, or an empty range (collapsed atom) returns fallback.
Status ranked(const double* x, const double* p, std::size_t n, const double* y, const double* q, std::size_t m,
              double TP, double TQ, const std::vector<double>& LP, const std::vector<double>& RP,
              const std::vector<double>& LQ, const std::vector<double>& RQ, double rtol, double& w_out) {
  RankScratch& S = tl_rank;
  constexpr std::size_t kPad = 8;
  if (S.kp.size() < n) S.kp.resize(n);
  if (S.kq.size() < m + kPad) S.kq.resize(m + kPad);
  std::int64_t* kp = S.kp.data();
  std::int64_t* kq = S.kq.data();
  keys_law(p, n, TP, LP, RP, kp);
  keys_law(q, m, TQ, LQ, RQ, kq);
  for (std::size_t t = 0; t < kPad; ++t) kq[m + t] = std::numeric_limits<std::int64_t>::max();
  // Loose band in key units: a relative gap r spans at most r 2^54 ulps (normal numbers).
  const double loose = rtol + 2.0 * kLevelErrU * kU;
  const std::int64_t D = static_cast<std::int64_t>(loose * 0x1p54) + 64;
  bool bad = false;
  for (std::size_t j = 0; j < m; ++j) bad |= std::llabs(kq[j] - kHalf) <= D;
  bool sorted = true;
  for (std::size_t i = 1; i < n; ++i) sorted &= x[i] >= x[i - 1];
  for (std::size_t j = 1; j < m; ++j) sorted &= y[j] >= y[j - 1];
  double w = 0.0;
  std::int64_t prev_u = 0, j = 0, prev_k = std::numeric_limits<std::int64_t>::min();
  const std::int64_t M = static_cast<std::int64_t>(m);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t k = kp[i];
    bad |= k < prev_k;  // keys must be non-decreasing (else let the careful walk decide)
    prev_k = k;
    // l = #{Q keys < k}: advance j through a window of four keys at a time (kq is sorted and
    // padded with INT64_MAX, so the keys below k form a prefix of the window)
    while (true) {
      const std::int64_t c = (kq[j] < k) + (kq[j + 1] < k) + (kq[j + 2] < k) + (kq[j + 3] < k);
      j += c;
      if (c < 4) break;
    }
    const std::int64_t l = j;
    // keys equal to k (exact ties): one is followed here, more go to the careful walk
    const std::int64_t e0 = kq[l] == k;
    bad |= e0 & (kq[l + 1] == k);
    const std::int64_t u = l + e0;
    // nearest Q keys below and above k (near-tie check), and level 1/2
    bad |= (l > 0 && k - kq[l > 0 ? l - 1 : 0] <= D) | (u < M && kq[u] - k <= D) | (std::llabs(k - kHalf) <= D);
    const std::int64_t lo = prev_u, hi = l < M ? l : M - 1;
    bad |= lo > hi;
    const double xi = x[i];
    const double d1 = std::fabs(xi - y[lo < hi ? lo : hi]), d2 = std::fabs(xi - y[hi]);
    const double d = d1 > d2 ? d1 : d2;
    w = d > w ? d : w;
    prev_u = u;
  }
  if (bad) return Status::fallback;
  if (!sorted) return Status::unsorted;
  w_out = w;
  return Status::ok;
}

}  // namespace

double w_inf_1d(const double* x, const double* p, std::size_t n, const double* y, const double* q,
                std::size_t m, double rtol, double sum_tol) {
  detail::check_rtol(rtol);
  if (n == 0) throw InvalidArgument("P.atoms", "an empty law", "at least one atom");
  if (m == 0) throw InvalidArgument("Q.atoms", "an empty law", "at least one atom");
  if (!std::isfinite(x[0]) || !std::isfinite(x[n - 1])) detail::check_atoms(x, n, "P.atoms");
  if (!std::isfinite(y[0]) || !std::isfinite(y[m - 1])) detail::check_atoms(y, m, "Q.atoms");
  Scratch& S = tl_scratch;
  const detail::LawSetup sp = detail::setup_law(p, n, sum_tol, "P.probs", S.LP, S.RP);
  const detail::LawSetup sq = detail::setup_law(q, m, sum_tol, "Q.probs", S.LQ, S.RQ);
  if (sp.min_mass > 0.0 && sq.min_mass > 0.0) {
    double w = 0.0;
    const Status st = ranked(x, p, n, y, q, m, sp.T, sq.T, S.LP, S.RP, S.LQ, S.RQ, rtol, w);
    if (st == Status::ok) return w;
    if (st == Status::unsorted) {
      detail::check_atoms(x, n, "P.atoms");
      detail::check_atoms(y, m, "Q.atoms");
    }
  }
  return detail::w_inf_1d_careful(x, p, n, y, q, m, rtol, sum_tol);
}

}  // namespace puffer::transport
