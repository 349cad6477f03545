// Fast 1-D W_inf on presorted float arrays (the hot path of calibration and of w_inf_sorted).
//
// It takes exactly the decisions of the careful staircase walk (coupling_1d.cpp, the level
// rule of transport.hpp) and so returns the same value, but it is organised for speed:
//   1. one vectorisable validation pass per law (sortedness, finiteness, masses, total);
//   2. one pass building a monotone int64 key per atom: bits(F_i) while F_i <= 1/2 and
//      2 bits(1/2) - bits(S_i) above (F and S computed by the same recurrences as the careful
//      walk, left-to-right and right-to-left, four independent chains interleaved);
//   3. the staircase as an exact merge of the two key arrays, split by level into four
//      independent segments walked in lock step (instruction-level parallelism).
// Whenever two keys fall within the tie band of the level rule (a near tie), or a law has a
// zero mass, the routine hands the whole problem to the careful walk, so near-tie semantics
// live in one place only.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/errors.hpp"
#include "transport/common_1d.hpp"
#include "transport/transport.hpp"

namespace puffer::transport {
namespace {

constexpr double kU = 0x1p-53;

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
const std::int64_t kTop = 2 * bits(0.5);  // key of S = 0 (the last atom)

struct Buffers {
  std::vector<std::int64_t> kp, kq;
};
thread_local Buffers tl_buf;

// Keys of one law: identical arithmetic to levels() in coupling_1d.cpp (the canonical block
// levels of common_1d.hpp); an atom is "lower" iff F_i <= 1/2.
void keys_law(const double* p, std::size_t n, double T, std::int64_t* k, std::vector<double>& L,
              std::vector<double>& R) {
  using detail::kBlock;
  const double inv = 1.0 / T;
  detail::block_bases(p, n, L, R);
  const std::size_t nb = L.size();
  for (std::size_t b = 0; b < nb; ++b) {
    const std::size_t s0 = b * kBlock, e = std::min(n, s0 + kBlock);
    const double lo_end = (b + 1 < nb ? L[b + 1] : T) * inv;
    if (lo_end < 0.5 * (1 - 1e-12)) {  // every F in the block is <= 1/2
      double a = 0.0;
      const double base = L[b];
      for (std::size_t i = s0; i < e; ++i) {
        a += p[i];
        k[i] = bits((base + a) * inv);
      }
    } else if (L[b] * inv > 0.5 * (1 + 1e-12)) {  // every F in the block is > 1/2
      double c = 0.0;
      const double base = R[b];
      for (std::size_t i = e; i-- > s0;) {
        k[i] = kTop - bits((base + c) * inv);
        c += p[i];
      }
    } else {  // the block holding level 1/2: decide atom by atom from F
      double c = 0.0;
      for (std::size_t i = e; i-- > s0;) {
        k[i] = kTop - bits((R[b] + c) * inv);
        c += p[i];
      }
      double a = 0.0;
      for (std::size_t i = s0; i < e; ++i) {
        a += p[i];
        const double f = (L[b] + a) * inv;
        if (f <= 0.5) k[i] = bits(f);
      }
    }
  }
}

}  // namespace

double w_inf_1d(const double* x, const double* p, std::size_t n, const double* y, const double* q,
                std::size_t m, double rtol, double sum_tol) {
  detail::check_rtol(rtol);
  double minp = 0, minq = 0;
  const double TP = detail::checked_total(x, p, n, sum_tol, "P.atoms", "P.probs", &minp);
  const double TQ = detail::checked_total(y, q, m, sum_tol, "Q.atoms", "Q.probs", &minq);
  if (!(minp > 0.0) || !(minq > 0.0) || n < 64 || m < 64)
    return detail::w_inf_1d_careful(x, p, n, y, q, m, rtol, sum_tol);
  Buffers& B = tl_buf;
  if (B.kp.size() < n) B.kp.resize(n);
  if (B.kq.size() < m) B.kq.resize(m);
  std::int64_t* kp = B.kp.data();
  std::int64_t* kq = B.kq.data();
  std::vector<double> bl, br;
  keys_law(p, n, TP, kp, bl, br);
  keys_law(q, m, TQ, kq, bl, br);
  // Prefilter for near ties: a relative band r spans at most r * 2^53 + 2 ulps.
  const double band_max = rtol + 2.0 * detail::kLevelErrU * kU;
  const std::int64_t D = static_cast<std::int64_t>(band_max * 0x1p54) + 64;
  bool fallback = false;
  // Exact near-tie test of the careful walk at (i, j).
  auto near_tie = [&](std::size_t i, std::size_t j) -> bool {
    std::int64_t a = kp[i], b = kq[j];
    // Levels near 1/2 are represented from the left for one law and from the right for the
    // other: let the careful walk decide those.
    if (std::llabs(a - kHalf) <= D || std::llabs(b - kHalf) <= D) return true;
    double va, vb, ka, kb;
    bool lo_a = a <= kHalf, lo_b = b <= kHalf;
    if (lo_a && lo_b) {
      va = from_bits(a), vb = from_bits(b);
      ka = std::min(double(i + 1) + 4.0, detail::kLevelErrU), kb = std::min(double(j + 1) + 4.0, detail::kLevelErrU);
    } else if (!lo_a && !lo_b) {
      va = from_bits(kTop - a), vb = from_bits(kTop - b);
      ka = std::min(double(n - 1 - i) + 4.0, detail::kLevelErrU), kb = std::min(double(m - 1 - j) + 4.0, detail::kLevelErrU);
    } else {
      return true;  // straddles 1/2: let the careful walk decide
    }
    double mx = va > vb ? va : vb;
    return std::fabs(va - vb) <= mx * (rtol + (ka + kb) * kU);
  };
  // Segment starts: P indices at quarter positions, Q index = first key > key of previous P atom.
  constexpr int L = 4;
  std::size_t si[L + 1], sj[L + 1];
  si[0] = 0;
  sj[0] = 0;
  for (int l = 1; l < L; ++l) {
    std::size_t s = n * l / L;
    si[l] = s;
    sj[l] = static_cast<std::size_t>(std::upper_bound(kq, kq + m, kp[s - 1]) - kq);
  }
  si[L] = n;
  sj[L] = m;
  for (int l = 1; l <= L; ++l)
    if (sj[l] < sj[l - 1] || sj[l] > m) return detail::w_inf_1d_careful(x, p, n, y, q, m, rtol, sum_tol);
  // Four lanes in local registers; STEP is one staircase step of a lane (emit, compare keys,
  // advance). The near-tie prefilter branch is almost never taken.
  const double* __restrict X = x;
  const double* __restrict Y = y;
  const std::int64_t* __restrict KP = kp;
  const std::int64_t* __restrict KQ = kq;
  std::size_t i0 = si[0], j0 = sj[0], i1 = si[1], j1 = sj[1], i2 = si[2], j2 = sj[2], i3 = si[3], j3 = sj[3];
  const std::size_t e0 = si[1], e1 = si[2], e2 = si[3], e3 = si[4];
  double w0 = 0, w1 = 0, w2 = 0, w3 = 0;
  std::size_t bad_i = 0, bad_j = 0;
#define PUFFER_STEP(I, J, W)                                                  \
  {                                                                           \
    const double d_ = std::fabs(X[I] - Y[J]);                                 \
    W = d_ > W ? d_ : W;                                                      \
    const std::int64_t diff_ = KP[I] - KQ[J];                                 \
    if (__builtin_expect(diff_ != 0 && diff_ <= D && diff_ >= -D, 0)) {       \
      bad_i = I;                                                              \
      bad_j = J;                                                              \
      if (near_tie(bad_i, bad_j)) fallback = true;                            \
    }                                                                         \
    I += (diff_ <= 0);                                                        \
    J += (diff_ >= 0);                                                        \
  }
  while (i0 < e0 && i1 < e1 && i2 < e2 && i3 < e3 && j3 < m && !fallback) {
    PUFFER_STEP(i0, j0, w0)
    PUFFER_STEP(i1, j1, w1)
    PUFFER_STEP(i2, j2, w2)
    PUFFER_STEP(i3, j3, w3)
  }
  while (i0 < e0 && j0 < m && !fallback) PUFFER_STEP(i0, j0, w0)
  while (i1 < e1 && j1 < m && !fallback) PUFFER_STEP(i1, j1, w1)
  while (i2 < e2 && j2 < m && !fallback) PUFFER_STEP(i2, j2, w2)
  while (i3 < e3 && j3 < m && !fallback) PUFFER_STEP(i3, j3, w3)
#undef PUFFER_STEP
  if (fallback) return detail::w_inf_1d_careful(x, p, n, y, q, m, rtol, sum_tol);
  // Each lane must end where the next one started (else rounding broke the split).
  if (i0 != si[1] || j0 != sj[1] || i1 != si[2] || j1 != sj[2] || i2 != si[3] || j2 != sj[3])
    return detail::w_inf_1d_careful(x, p, n, y, q, m, rtol, sum_tol);
  return std::max(std::max(w0, w1), std::max(w2, w3));
}

}  // namespace puffer::transport
