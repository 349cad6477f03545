// Theorem 2 of Ding 2022 and the DAGWM log-moment of Pierquin et al. 2024 (Thm 4.5) per plan,
// and their batches over the worker pool. The bisection, brackets and group order follow
// puffer.mechanisms.kantorovich's reference (thm2_eta); the only change is the rounding margin
// added to h, which keeps the returned eta feasible (h(eta) <= 0 for the exact h).
#include "transport/kantorovich.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>
#include <utility>

#include "common/errors.hpp"
#include "common/parallel.hpp"
#include "common/rounding.hpp"
#include "transport/transport.hpp"

namespace puffer::transport {
namespace {

constexpr double kU = 0x1p-53;
constexpr double kInf = std::numeric_limits<double>::infinity();
// Pruning slack of the smallest root (relative) and the witness band (see thm2_eta).
constexpr double kSlack = 0x1p-40;

// Entry indices of the groups of equal key, in ascending key order, entry order kept inside a
// group (a stable sort; plans of the quantile coupling are already sorted).
void group_order(const double* key, std::size_t n, std::vector<std::size_t>& idx) {
  idx.resize(n);
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  bool sorted = true;
  for (std::size_t k = 1; k < n && sorted; ++k) sorted = key[k] >= key[k - 1];
  if (!sorted) std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return key[a] < key[b]; });
}

// Root of one row or column: h(eta) = log sum m exp(eta d) - eps - log M (increasing).
struct Group {
  const double* d;
  const std::size_t* idx;
  std::size_t n;
  double* logm = nullptr;  // n log-masses, filled by stats()
  bool ready = false;
  double target = 0.0, abs_logm = 0.0, dmax = 0.0, extra = 0.0;
  double lo = 0.0, hi = 0.0, lb = 0.0, ub = 0.0, E = 0.0, M = 0.0, m0 = 0.0, dmin = 0.0;
  int kind = 0;
  double key = 0.0;

  // h plus its rounding bound: >= the exact h at eta (so h <= 0 certifies feasibility).
  // slope (optional): h'(eta), the mean of d under the tilted masses m exp(eta d).
  double h(double eta, double* slope = nullptr) const {
    double mx = -kInf, tmax = 0.0;  // tmax: the largest |term| that enters the sum
    for (std::size_t k = 0; k < n; ++k) {
      const double t = logm[k] + eta * d[idx[k]];
      mx = std::max(mx, t);
      if (t > -kInf) tmax = std::max(tmax, std::fabs(logm[k]) + eta * d[idx[k]]);
    }
    double s = 0.0, sd = 0.0;
    for (std::size_t k = 0; k < n; ++k) {
      const double w = std::exp(logm[k] + eta * d[idx[k]] - mx);
      s += w;
      sd += w * d[idx[k]];
    }
    if (slope) *slope = sd / s;
    const double v = mx + std::log(s) - target;
    double big = tmax;
    if (std::isfinite(mx)) big = std::max(big, std::fabs(mx));
    if (std::isfinite(target)) big += std::fabs(target);
    return v + lse_margin(n, big) + extra;
  }
};

// Group statistics: the log-masses and target of h, and the quantities of the bracket.
void stats(Group& g, const double* mass, double eps) {
  const std::size_t n = g.n;
  double dmax = 0.0, M = 0.0, m0 = 0.0, dmin = kInf;
  for (std::size_t k = 0; k < n; ++k) {
    const double d = g.d[g.idx[k]], m = mass[g.idx[k]];
    dmax = std::max(dmax, d);
    M += m;
    if (d == 0.0) m0 += m;
    if (d > 0.0) dmin = std::min(dmin, d);
  }
  g.dmax = dmax;
  g.M = M;
  g.m0 = m0;
  g.dmin = dmin;
  g.abs_logm = 0.0;
  for (std::size_t k = 0; k < n; ++k) {
    g.logm[k] = std::log(mass[g.idx[k]]);
    if (std::isfinite(g.logm[k])) g.abs_logm = std::max(g.abs_logm, std::fabs(g.logm[k]));
  }
  g.target = eps + std::log(M);
  g.ready = true;
}

// The brackets of the reference: h(eps / dmax) <= 0 (every d <= dmax) and the analytic upper
// end from the mass at d = 0 and the smallest positive d, each guarded against rounding.
void bracket(Group& g, double eps) {
  double lo = eps / g.dmax;
  double hi = std::log((std::exp(eps) * g.M - g.m0) / std::max(g.M - g.m0, 1e-300)) / g.dmin * (1 + 1e-9) + 1e-300;
  if (!(hi >= lo)) hi = lo;  // subnormal masses can put the analytic end below lo (or NaN)
  for (int r = 0; r < 64 && g.h(hi) < 0.0; ++r) hi *= 2.0;
  for (int r = 0; r < 64 && g.h(lo) > 0.0; ++r) lo *= (1 - 1e-12);
  g.lo = lo;
  g.hi = hi;
}

// Bisection keeping lo feasible (h(lo) <= 0 < h(hi)); the result lies in [lo, max(lo, hi)).
// The bracket is first narrowed by Newton steps from hi (h is convex: the tangent root lies
// at or above the root) and chord steps from lo (the chord root lies at or below it); each
// proposal is only a trial point whose computed sign decides which end moves, as in the
// bisection, so the end result is the bisection's up to its own rounding noise.
double solve(const Group& g) {
  double lo = g.lo, hi = g.hi;
  if (lo < hi && std::isfinite(hi)) {
    double hl = g.h(lo), sh = 0.0, hh = g.h(hi, &sh);
    for (int r = 0; r < 12 && (hi - lo) > 4e-16 * hi; ++r) {
      double x = hi - hh / sh;  // Newton from the right
      if (x > lo && x < hi) {
        double sx = 0.0;
        const double hx = g.h(x, &sx);
        if (hx <= 0.0) { lo = x; hl = hx; }
        else { hi = x; hh = hx; sh = sx; }
      }
      if (!(hh > hl)) break;
      x = lo - hl * (hi - lo) / (hh - hl);  // chord from the left
      // aim a hair above the chord root: the root is usually within a few ulps of it by now
      x = std::min(x * (1 + 1e-15), 0.5 * (x + hi));
      if (x > lo && x < hi) {
        double sx = 0.0;
        const double hx = g.h(x, &sx);
        if (hx <= 0.0) { lo = x; hl = hx; }
        else { hi = x; hh = hx; sh = sx; }
      }
      if (!(sh > 0.0) || !std::isfinite(hh) || !std::isfinite(hl)) break;
    }
  }
  for (int r = 0; r < 200; ++r) {
    const double mid = 0.5 * (lo + hi);
    if (!(mid > lo && mid < hi)) break;
    if (g.h(mid) <= 0.0) lo = mid;
    else hi = mid;
  }
  return lo;
}

}  // namespace

double lse_margin(std::size_t n, double tmax) {
  // t = log m + eta d (2 roundings), exp(t - mx) (2), a sum of n positive terms ((n - 1) u
  // relative), log and the final two additions: <= (2n + 16) u + 8 u max|t| absolute.
  return (2.0 * static_cast<double>(n) + 16.0) * kU + 8.0 * kU * tmax;
}

Thm2 thm2_eta(const double* d, const double* mass, const double* row, const double* col, std::size_t n,
              double eps, double mass_rtol) {
  require(eps > 0.0 && std::isfinite(eps), "eps", eps, "a finite eps > 0");
  require(mass_rtol >= 0.0 && mass_rtol < 1e-3, "mass_rtol", mass_rtol, "a relative tolerance in [0, 1e-3)");
  Thm2 best;
  if (n == 0) return best;
  for (std::size_t k = 0; k < n; ++k) {
    if (!(d[k] >= 0.0) || !std::isfinite(d[k])) throw InvalidArgument("d", to_str(d[k]), "finite distances >= 0");
    if (!(mass[k] >= 0.0) || !std::isfinite(mass[k]))
      throw InvalidArgument("mass", to_str(mass[k]), "finite plan masses >= 0");
  }
  // Pass 1, the smallest root: groups in order of their lower bound eps / dmax (the bisection
  // never returns less than the guarded lo >= eps / dmax (1 - 1e-12)^64). Once a root `best`
  // is known, a group whose bound exceeds it, or whose h is <= 0 at best (1 - kSlack) (its root
  // is at least that), is skipped; so the minimum over all groups is >= best (1 - kSlack), the
  // value returned (rounded down): a feasible eta at most kSlack below the exact minimum.
  thread_local std::vector<std::size_t> idx_r, idx_c;
  thread_local std::vector<double> lm_r, lm_c;
  thread_local std::vector<Group> groups;
  std::size_t ng = 0;
  double min_ub = kInf;
  lm_r.resize(n);
  lm_c.resize(n);
  for (int kind = 1; kind <= 2; ++kind) {
    const double* key = kind == 1 ? row : col;
    std::vector<std::size_t>& idx = kind == 1 ? idx_r : idx_c;
    double* lm = kind == 1 ? lm_r.data() : lm_c.data();
    group_order(key, n, idx);
    for (std::size_t b = 0; b < n;) {
      std::size_t e = b;
      double dmax = 0.0, M = 0.0, S = 0.0;
      const double kb = key[idx[b]];
      for (; e < n && key[idx[e]] == kb; ++e) {
        const double de = d[idx[e]], me = mass[idx[e]];
        dmax = std::max(dmax, de);
        M += me;
        S += me * de;
      }
      if (dmax > 0.0) {  // else all mass at d = 0: unconstrained
        if (ng == groups.size()) groups.emplace_back();
        Group& g = groups[ng++];  // reused storage: every field read later is set here or in stats()
        g.ready = false;
        g.d = d;
        g.idx = idx.data() + b;
        g.n = e - b;
        g.logm = lm + b;
        g.extra = 2.0 * mass_rtol;
        g.kind = kind;
        g.key = kb;
        g.dmax = dmax;
        g.lb = eps / dmax * (1.0 - 1e-10);
        g.E = S / M;
        g.ub = g.E > 0.0 && std::isfinite(g.E) ? eps / g.E * (1.0 + 1e-9) : kInf;
        min_ub = std::min(min_ub, g.ub);
      }
      b = e;
    }
  }
  if (ng == 0) return best;
  // Candidates. Cheap bounds per group from p = m / M and E = E_p[d]: Jensen gives
  // sum p e^(eta d) >= e^(eta E), so the root is <= eps / E; the chord of e^(eta d) over
  // [0, dmax] gives sum p e^(eta d) <= 1 + (E / dmax)(e^(eta dmax) - 1), so the root is >=
  // log1p(expm1(eps) dmax / E) / dmax. The computed root sits below the exact one by at most
  // (h's margin) / eps relatively (eta h'(eta) >= eps at the root, h convex), which the lower
  // bound's slack covers; eps / dmax (1 - 1e-10) is a bound of the bisection itself. Groups
  // whose lower bound exceeds the smallest upper bound are dropped.
  // (log1p(y) >= 2y / (2 + y) screens first, without a logarithm.)
  thread_local std::vector<std::size_t> cand;
  const double em1 = std::expm1(eps);
  cand.clear();
  for (std::size_t o = 0; o < ng; ++o) {
    Group& g = groups[o];
    if (g.lb > min_ub) continue;
    if (std::isfinite(g.ub)) {
      const double dh = g.extra + lse_margin(g.n, 2000.0 + 2.0 * g.ub * g.dmax + eps);
      const double slack = 1.0 - 1e-9 - 4.0 * dh / eps, y = em1 * (g.dmax / g.E);
      if (2.0 * y / (2.0 + y) / g.dmax * slack > min_ub) continue;
      g.lb = std::max(g.lb, std::log1p(y) / g.dmax * slack);
      if (g.lb > min_ub) continue;
    }
    cand.push_back(o);
  }
  std::stable_sort(cand.begin(), cand.end(), [&](std::size_t a, std::size_t b) { return groups[a].ub < groups[b].ub; });
  double low = kInf;
  std::size_t low_pos = 0;
  for (std::size_t o : cand) {
    Group& g = groups[o];
    if (g.lb > low) continue;
    stats(g, mass, eps);
    if (low < kInf && g.h(low * (1.0 - kSlack)) <= 0.0) continue;
    bracket(g, eps);
    const double eta = solve(g);
    if (eta < low) {
      low = eta;
      low_pos = o;
    }
  }
  best.eta = next_down(low * (1.0 - kSlack));
  // Pass 2, the witness: the first group in the reference's order (rows by key, then columns)
  // whose root is below best (1 + kWitnessBand), i.e. h > 0 there -- a rule that does not
  // depend on the rounding noise between near-equal roots.
  const double x = best.eta * (1.0 + kWitnessBand);
  std::size_t wit = low_pos;
  for (std::size_t o = 0; o < ng && o < low_pos; ++o) {
    Group& g = groups[o];
    if (g.lb > x) continue;
    if (g.ub <= x) {  // Jensen: the root is at most ub
      wit = o;
      break;
    }
    if (!g.ready) stats(g, mass, eps);
    const double hx = g.h(x);
    bool within = hx > 0.0;
    if (std::isnan(hx)) {  // no mass in the group (M = 0): its root is the bracket's lo
      bracket(g, eps);
      within = solve(g) <= x;
    }
    if (within) {
      wit = o;
      break;
    }
  }
  best.kind = groups[wit].kind;
  best.key = groups[wit].key;
  return best;
}

void thm2_batch(const double* d, const double* mass, const double* row, const double* col,
                const std::int64_t* off, std::size_t K, double eps, double mass_rtol, unsigned threads,
                const CancelFn& cancel, Thm2* out) {
  for (std::size_t k = 0; k < K; ++k)
    require(off[k + 1] >= off[k] && off[k] >= 0, "offsets", off[k + 1], "non-decreasing plan offsets");
  parallel_for(K, threads, [&](std::size_t k) {
    if (cancel && cancel()) throw Cancelled();
    const std::size_t b = static_cast<std::size_t>(off[k]), n = static_cast<std::size_t>(off[k + 1] - off[k]);
    out[k] = thm2_eta(d + b, mass + b, row + b, col + b, n, eps, mass_rtol);
  });
}

void thm2_laws_batch(const double* x, const double* p, const std::int64_t* offp, std::size_t n_p,
                     const double* y, const double* q, const std::int64_t* offq, std::size_t n_q, std::size_t K,
                     double eps, unsigned threads, const CancelFn& cancel, Thm2* out, double* dmax) {
  auto check = [K](const std::int64_t* off, std::size_t total, const char* name) {
    require(off[0] == 0 && off[K] == static_cast<std::int64_t>(total), name, off[K],
            "offsets from 0 to the number of atoms");
    for (std::size_t k = 0; k < K; ++k) require(off[k + 1] > off[k], name, off[k + 1], "increasing offsets (no empty law)");
  };
  check(offp, n_p, "offsets_p");
  check(offq, n_q, "offsets_q");
  parallel_for(K, threads, [&](std::size_t k) {
    if (cancel && cancel()) throw Cancelled();
    const std::size_t bp = static_cast<std::size_t>(offp[k]), bq = static_cast<std::size_t>(offq[k]);
    const Plan plan = coupling_1d(x + bp, p + bp, static_cast<std::size_t>(offp[k + 1]) - bp, y + bq, q + bq,
                                  static_cast<std::size_t>(offq[k + 1]) - bq, kDefaultRtol, kDefaultSumTol);
    thread_local std::vector<double> d, row, col;
    const std::size_t n = plan.mass.size();
    d.resize(n);
    row.resize(n);
    col.resize(n);
    double dm = 0.0;
    for (std::size_t e = 0; e < n; ++e) {
      row[e] = x[bp + static_cast<std::size_t>(plan.src[e])];
      col[e] = y[bq + static_cast<std::size_t>(plan.dst[e])];
      d[e] = std::fabs(row[e] - col[e]);
      dm = std::max(dm, d[e]);
    }
    out[k] = thm2_eta(d.data(), plan.mass.data(), row.data(), col.data(), n, eps);
    dmax[k] = dm;
  });
}

void dagwm_log_moments(const double* logm, const double* s, const std::int64_t* idx, std::size_t n_s,
                       const std::int64_t* off, std::size_t K, double a2m1, unsigned threads,
                       const CancelFn& cancel, double* out) {
  require(a2m1 > 0.0 && std::isfinite(a2m1), "alpha", a2m1 + 1.0, "a finite order > 1");
  for (std::size_t k = 0; k < K; ++k)
    require(off[k + 1] > off[k] && off[k] >= 0, "offsets", off[k + 1], "increasing plan offsets (no empty plan)");
  const std::size_t total = K ? static_cast<std::size_t>(off[K]) : 0;
  for (std::size_t j = 0; j < total; ++j)
    require(idx[j] >= 0 && static_cast<std::size_t>(idx[j]) < n_s, "idx", idx[j], "indices into s");
  parallel_for(K, threads, [&](std::size_t k) {
    if (cancel && cancel()) throw Cancelled();
    const std::size_t b = static_cast<std::size_t>(off[k]), e = static_cast<std::size_t>(off[k + 1]);
    double mx = -kInf, tmax = 0.0;
    for (std::size_t j = b; j < e; ++j) {
      const double t = logm[j] + a2m1 * s[idx[j]];
      mx = std::max(mx, t);
      if (std::isfinite(t)) tmax = std::max(tmax, std::fabs(t));
    }
    double acc = 0.0;
    for (std::size_t j = b; j < e; ++j) acc += std::exp(logm[j] + a2m1 * s[idx[j]] - mx);
    out[k] = mx + std::log(acc) + lse_margin(e - b, tmax);
  });
}

void dagwm_merge(const double* logm, const std::int64_t* idx, const std::int64_t* off, std::size_t K,
                 unsigned threads, std::vector<double>& logm_out, std::vector<std::int64_t>& idx_out,
                 std::vector<std::int64_t>& off_out) {
  for (std::size_t k = 0; k < K; ++k)
    require(off[k + 1] > off[k] && off[k] >= 0, "offsets", off[k + 1], "increasing plan offsets (no empty plan)");
  // per plan: (idx, entry) sorted, then one log-sum-exp per run of equal idx
  std::vector<std::vector<double>> lm(K);
  std::vector<std::vector<std::int64_t>> ix(K);
  parallel_for(K, threads, [&](std::size_t k) {
    thread_local std::vector<std::pair<std::int64_t, std::size_t>> e;
    e.clear();
    for (std::size_t j = static_cast<std::size_t>(off[k]); j < static_cast<std::size_t>(off[k + 1]); ++j)
      e.emplace_back(idx[j], j);
    std::sort(e.begin(), e.end());
    for (std::size_t a = 0; a < e.size();) {
      std::size_t b = a + 1;
      while (b < e.size() && e[b].first == e[a].first) ++b;
      double v = logm[e[a].second];
      if (b - a > 1) {
        double mx = -kInf, tmax = 0.0;
        for (std::size_t c = a; c < b; ++c) {
          mx = std::max(mx, logm[e[c].second]);
          if (std::isfinite(logm[e[c].second])) tmax = std::max(tmax, std::fabs(logm[e[c].second]));
        }
        double s = 0.0;
        for (std::size_t c = a; c < b; ++c) s += std::exp(logm[e[c].second] - mx);
        v = mx + std::log(s) + lse_margin(b - a, tmax);
      }
      lm[k].push_back(v);
      ix[k].push_back(e[a].first);
      a = b;
    }
  });
  off_out.assign(1, 0);
  logm_out.clear();
  idx_out.clear();
  for (std::size_t k = 0; k < K; ++k) {
    logm_out.insert(logm_out.end(), lm[k].begin(), lm[k].end());
    idx_out.insert(idx_out.end(), ix[k].begin(), ix[k].end());
    off_out.push_back(static_cast<std::int64_t>(logm_out.size()));
  }
}

}  // namespace puffer::transport
