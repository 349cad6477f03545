// Fast 1-D W_inf on presorted float arrays (the hot path of calibration and of w_inf_sorted).
//
// It takes exactly the decisions of the careful staircase walk (coupling_1d.cpp; the level
// rule of transport.hpp, on the canonical block levels of common_1d.hpp) and so returns the
// same value, but streams the data:
//   1. one pass over the masses per law (block totals, bases, total, checks);
//   2. the staircase from the bottom with levels F computed on the fly, while the smaller end
//      level is <= 1/2 (where the careful walk compares F), and, interleaved with it, the same
//      staircase from the top with survival levels S computed on the fly (where the careful
//      walk compares S), until the two walks meet; atom order is checked on the way.
// In a merge of two sorted sequences with exact comparisons the path does not depend on the
// direction, so the two walks meet exactly at the forward walk's last pair. Any comparison
// inside the tie band (a near tie), a zero mass, or a failure to meet hands the whole problem
// to the careful walk, so near-tie semantics live in one place only.
#include <algorithm>
#include <cmath>
#include <vector>
#include <cstdio>
#include <cstdlib>

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

// Exact band of the level rule for values a != b with ka, kb summed terms.
inline bool in_band(double a, double b, double ka, double kb, double rtol) {
  const double mx = a > b ? a : b;
  return std::fabs(a - b) <= mx * (rtol + (std::min(ka + 4.0, kLevelErrU) + std::min(kb + 4.0, kLevelErrU)) * kU);
}

enum class Status { ok, fallback, unsorted };

// Moves the held atom of a backward walk from k to k-1, keeping c = the canonical in-block
// suffix sum above it: c_{k-1} = c_k + p_k inside a block, 0 at the end of the previous block.
inline void down(const double* pr, std::size_t& k, double& c, std::size_t& blk) {
  const std::size_t nk = k - 1;
  if (nk / kBlock == blk) {
    c += pr[k];
  } else {
    c = 0.0;
    blk = nk / kBlock;
  }
  k = nk;
}

Status lean(const double* x, const double* p, std::size_t n, const double* y, const double* q, std::size_t m,
            double TP, double TQ, const std::vector<double>& LP, const std::vector<double>& RP,
            const std::vector<double>& LQ, const std::vector<double>& RQ, double rtol, double& w_out) {
  const double ip = 1.0 / TP, iq = 1.0 / TQ;
  const double loose = rtol + 2.0 * kLevelErrU * kU;  // superset of every band
  double w = 0.0;
  bool sorted = true;
  // Forward walk: current pair (i, j) and the canonical end levels F_i, G_j.
  std::size_t i = 0, j = 0;
  double ap = p[0], aq = q[0];
  double F = (LP[0] + ap) * ip, G = (LQ[0] + aq) * iq;
  // Backward walk: pair (bi, bj); SPe, SQe = S of atoms bi, bj (their end levels from the
  // top); SP, SQ = S of atoms bi-1, bj-1 (their start levels), held with in-block suffix sums.
  std::size_t bi = n - 1, bj = m - 1;
  std::size_t hp = n - 1, hq = m - 1, blp = (n - 1) / kBlock, blq = (m - 1) / kBlock;
  double cp = 0.0, cq = 0.0, SPe = 0.0, SQe = 0.0, SP = 1.0, SQ = 1.0;
  if (n > 1) {
    down(p, hp, cp, blp);
    SP = (RP[blp] + cp) * ip;
  }
  if (m > 1) {
    down(q, hq, cq, blq);
    SQ = (RQ[blq] + cq) * iq;
  }
  // One backward step: emit (bi, bj), then move to the previous pair. Returns 0 (moved),
  // 1 (paused: the previous pair may belong to the forward walk), -1 (give up).
  const double pause = 0.5 * (1.0 - 0x1p-20);
  auto back_step = [&](bool may_pause) -> int {
    const double d = std::fabs(x[bi] - y[bj]);
    w = d > w ? d : w;
    if (bi == 0 && bj == 0) return -1;
    if (SP != SQ && std::fabs(SP - SQ) <= (SP > SQ ? SP : SQ) * loose &&
        in_band(SP, SQ, double(n - bi), double(m - bj), rtol))
      return -1;
    const bool dec_p = SP <= SQ, dec_q = SQ <= SP;  // the smaller survival starts higher
    if (may_pause) {
      // the previous pair is clearly in the upper half (both F > 1/2) only if both its end
      // survivals are clearly below 1/2
      const double e1 = dec_p ? SP : SPe, e2 = dec_q ? SQ : SQe;
      if ((e1 > e2 ? e1 : e2) >= pause) return 1;
    }
    if (dec_p) {
      if (bi == 0) return -1;
      sorted &= x[bi] >= x[bi - 1];
      --bi;
      SPe = SP;
      if (bi == 0) {
        SP = 1.0;
      } else {
        down(p, hp, cp, blp);
        SP = (RP[blp] + cp) * ip;
      }
    }
    if (dec_q) {
      if (bj == 0) return -1;
      sorted &= y[bj] >= y[bj - 1];
      --bj;
      SQe = SQ;
      if (bj == 0) {
        SQ = 1.0;
      } else {
        down(q, hq, cq, blq);
        SQ = (RQ[blq] + cq) * iq;
      }
    }
    return 0;
  };
  bool paused = false;
  while (true) {
    const double d = std::fabs(x[i] - y[j]);
    w = d > w ? d : w;
    if (F > 0.5 && G > 0.5) break;  // the careful walk compares S from here on
    if (F != G && std::fabs(F - G) <= (F > G ? F : G) * loose && in_band(F, G, double(i + 1), double(j + 1), rtol))
      return Status::fallback;
    // Branch-free advance (the comparison is unpredictable). Multiplying by 0.0 / 1.0 is exact,
    // so ap and aq follow the canonical recurrences bit for bit; F, G are recomputed from the
    // same inputs when their atom does not move (same value).
    const std::size_t adv_p = F <= G, adv_q = G <= F;
    i += adv_p;
    j += adv_q;
    if (__builtin_expect(i >= n || j >= m, 0)) return Status::fallback;
    sorted &= (x[i] >= x[i - adv_p]) & (y[j] >= y[j - adv_q]);
    const double rp = double(adv_p & ((i % kBlock) == 0)), rq = double(adv_q & ((j % kBlock) == 0));
    ap = ap * (1.0 - rp) + double(adv_p) * p[i];
    aq = aq * (1.0 - rq) + double(adv_q) * q[j];
    F = (LP[i / kBlock] + ap) * ip;
    G = (LQ[j / kBlock] + aq) * iq;
    // interleave one backward step while its pairs are clearly in the upper half
    if (!paused) {
      const int r = back_step(true);
      if (r < 0) return Status::fallback;
      paused = r == 1;
    }
  }
  // (i, j) is the forward walk's last pair: the backward walk must arrive exactly there.
  while (!(bi == i && bj == j)) {
    if (bi < i || bj < j) return Status::fallback;
    if (back_step(false) != 0) return Status::fallback;
  }
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
    const Status st = lean(x, p, n, y, q, m, sp.T, sq.T, S.LP, S.RP, S.LQ, S.RQ, rtol, w);
    if (st == Status::ok) return w;
    if (st == Status::unsorted) {
      detail::check_atoms(x, n, "P.atoms");
      detail::check_atoms(y, m, "Q.atoms");
    }
  }
  return detail::w_inf_1d_careful(x, p, n, y, q, m, rtol, sum_tol);
}

}  // namespace puffer::transport
