// The certified W-infinity walk over the Markov sum laws of markov.hpp (w_inf_all_pairs, the
// plan-based mechanisms' LevelCertifier), and the skipping of interior positions
// (docs/long-chains.md, markov_skip.hpp).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <random>

#include "common/errors.hpp"
#include "common/modp.hpp"
#include "common/parallel.hpp"
#include "models/markov.hpp"
#include "models/markov_ext.hpp"
#include "models/markov_internal.hpp"
#include "models/markov_modp.hpp"
#include "models/markov_skip.hpp"
#include "transport/w_inf_ranges.hpp"

namespace puffer::models {
namespace {

// Extended-range value m 2^e (m in [1, 2) or 0) for the cumulative levels of the laws.
struct XVal {
  double m = 0.0;
  std::int64_t e = 0;
};

inline void xadd(XVal& a, double m, std::int64_t e) {  // a += m 2^e, m > 0 normal
  const std::int32_t q0 = ext::exponent_of(m);
  m *= ext::pow2i(-q0);
  e += q0;
  if (a.m == 0.0) {
    a.m = m;
    a.e = e;
    return;
  }
  const std::int64_t d = e - a.e;
  if (d <= 0) {
    if (d >= -ext::kDrop) a.m += m * ext::pow2i(d);
  } else {
    a.m = d <= ext::kDrop ? a.m * ext::pow2i(-d) + m : m;
    a.e = e;
  }
  const std::int32_t q = ext::exponent_of(a.m);
  a.m *= ext::pow2i(-q);
  a.e += q;
}

// Cumulative levels of one law for the certified W_inf walk (reachable atoms only): F_u / total
// and S_u / total (mass strictly above atom u) as m 2^e with m in [1, 2) (sm = 0 at the top atom),
// each with relative error <= err; g is the atom's index on the sum grid.
struct Levels {
  std::vector<double> x, fm, sm;
  std::vector<std::int64_t> fe, se;
  std::vector<std::size_t> g;
  double err = 0.0;
  bool f_half(std::size_t u) const { return fe[u] < -1 || (fe[u] == -1 && fm[u] == 1.0); }  // F <= 1/2
};

inline void xdiv(const XVal& a, const XVal& b, double& m, std::int64_t& e) {  // a / b, a, b > 0
  m = a.m / b.m;  // in (1/2, 2)
  e = a.e - b.e;
  if (m < 1.0) {
    m *= 2.0;
    --e;
  }
}

// The levels of a plain-double law (every mass one double; mass >= 2^-1000, total <= 2^1000,
// smallest mass / total >= 2^-1000) by plain double sums and quotients, in the same order: bit
// for bit those of the extended-range path below (xadd and xdiv only rescale by powers of two,
// exact while every partial sum, the total and every quotient are normal doubles, which those
// bounds give; a term xadd drops, 2^-1000 below the sum, leaves a double sum unchanged too).
// (Issue 34: the levels were ~30 % of a position at T = 2000; with this path the whole
// computation of k = 2, T = 2000 chains takes ~20 % less CPU time.)
// False (nothing written) outside those bounds: the caller takes the extended-range path.
bool plain_levels(const std::vector<double>& lm, Levels& L) {
  const std::size_t n = lm.size();
  double tot = 0.0, mn = std::numeric_limits<double>::infinity();
  for (std::size_t u = 0; u < n; ++u) {
    tot += lm[u];
    mn = std::min(mn, lm[u]);
  }
  // partial sums >= mn and <= tot: normal; every quotient >= mn / tot: normal
  if (n == 0 || !(mn >= 0x1p-1000) || !(tot <= 0x1p1000) || !(mn / tot >= 0x1p-1000)) return false;
  auto split = [](double q, double& m, std::int64_t& e) {
    e = ext::exponent_of(q);
    m = q * ext::pow2i(-e);
  };
  double F = 0.0;
  for (std::size_t u = 0; u < n; ++u) {
    F += lm[u];
    split(F / tot, L.fm[u], L.fe[u]);
  }
  L.sm[n - 1] = 0.0;
  L.se[n - 1] = 0;
  double S = 0.0;
  for (std::size_t u = n - 1; u-- > 0;) {
    S += lm[u + 1];
    split(S / tot, L.sm[u], L.se[u]);
  }
  return true;
}

// err: relative error bound of a computed mass (markov.hpp: sums of products of positive terms,
// ~(T (k + 1) + R) ulps; taken with a 2x margin) plus the n-term level sum and the division.
void make_levels(const Law& law, double base, std::size_t T, std::size_t k, std::size_t R, Levels& L) {
  L.x.clear();
  L.g.clear();
  std::vector<double> lm;
  std::vector<std::int64_t> le;
  double log_extent = 0.0;
  if (law.log_space) {
    double mx = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < law.n; ++j) mx = std::max(mx, law.mass[j]);
    for (std::size_t j = 0; j < law.n; ++j)
      if (law.reachable(j)) {
        // m 2^e = exp(l - mx): split the exponent so that no value underflows
        const double l2 = (law.mass[j] - mx) / 0.69314718055994530942;
        const double fl = std::floor(l2);
        L.x.push_back(law.atoms[j]);
        lm.push_back(std::exp2(l2 - fl));
        le.push_back(static_cast<std::int64_t>(fl));
        log_extent = std::max(log_extent, std::fabs(law.mass[j]) + std::fabs(mx));
      }
  } else {
    for (std::size_t j = 0; j < law.n; ++j)
      if (law.reachable(j)) {
        L.x.push_back(law.atoms[j]);
        lm.push_back(law.mass[j]);
        le.push_back(law.exp2 == nullptr ? 0 : law.exp2[j]);
      }
  }
  const std::size_t n = L.x.size();
  for (std::size_t u = 0; u < n; ++u) L.g.push_back(static_cast<std::size_t>(L.x[u] - base));
  const double TT = static_cast<double>(T), K = static_cast<double>(k), RR = static_cast<double>(R);
  L.err = (4.0 * TT * (K + 2.0) + 4.0 * RR + 64.0) * 0x1p-53;
  // the log-space reference path: log-sum-exp rounding grows with the magnitude of the logs
  if (law.log_space) L.err += 8.0 * (TT * K + RR) * (1.0 + log_extent) * 0x1p-53;
  L.fm.resize(n);
  L.fe.resize(n);
  L.sm.resize(n);
  L.se.resize(n);
  if (law.plain() && plain_levels(lm, L)) return;
  XVal F, S, tot;
  for (std::size_t u = 0; u < n; ++u) xadd(tot, lm[u], le[u]);
  for (std::size_t u = 0; u < n; ++u) {
    xadd(F, lm[u], le[u]);
    xdiv(F, tot, L.fm[u], L.fe[u]);
  }
  L.sm[n - 1] = 0.0;
  L.se[n - 1] = 0;
  for (std::size_t u = n - 1; u-- > 0;) {
    xadd(S, lm[u + 1], le[u + 1]);
    xdiv(S, tot, L.sm[u], L.se[u]);
  }
}

// a versus b (positive, m in [1, 2)) with relative tolerance band: -1, +1, or 0 (too close).
inline int rel_cmp(double am, std::int64_t ae, double bm, std::int64_t be, double band) {
  const std::int64_t d = ae - be;
  if (d >= 2) return 1;
  if (d <= -2) return -1;
  const double a = am * ext::pow2i(d);
  const double diff = a - bm, mx = a > bm ? a : bm;
  if (std::fabs(diff) <= band * mx) return 0;
  return diff < 0.0 ? -1 : 1;
}

enum class Mode { kUpper, kLower, kCertified };

// Exact equality of the levels F_u (law a) and G_v (law b) modulo both primes, by
// cross-multiplication with the totals.
inline bool mod_equal(const ModChain& mc, const std::vector<std::uint64_t>* ca, const std::vector<std::uint64_t>* cb,
                      std::size_t ga, std::size_t gb) {
  const std::size_t top = mc.grid_size() - 1;
  for (int q = 0; q < kModPrimes; ++q) {
    const std::uint64_t p = mc.prime(q);
    if (modp::mul(ca[q][ga], cb[q][top], p) != modp::mul(cb[q][gb], ca[q][top], p)) return false;
  }
  return true;
}

// The three-valued comparison F_u (law P) versus G_v (law Q) of the certified walk.
struct PairCmp {
  const Levels& P;
  const Levels& Q;
  double band;
  Mode mode = Mode::kUpper;
  bool close = false;
  const ModChain* mc = nullptr;
  const std::vector<std::uint64_t>*ca = nullptr, *cb = nullptr;

  PairCmp(const Levels& p, const Levels& q) : P(p), Q(q), band(p.err + q.err + 4.0 * 0x1p-53) {}

  transport::LevelCmp operator()(std::size_t u, std::size_t v) {
    using transport::LevelCmp;
    int r;
    if (P.f_half(u) || Q.f_half(v)) {
      r = rel_cmp(P.fm[u], P.fe[u], Q.fm[v], Q.fe[v], band);
    } else if (P.sm[u] == 0.0 || Q.sm[v] == 0.0) {  // a top atom: its level is exactly 1
      r = P.sm[u] == Q.sm[v] ? 2 : (P.sm[u] == 0.0 ? 1 : -1);
    } else {
      r = -rel_cmp(P.sm[u], P.se[u], Q.sm[v], Q.se[v], band);
    }
    if (r == 2) return LevelCmp::kEqual;
    if (r < 0) return LevelCmp::kLess;
    if (r > 0) return LevelCmp::kGreater;
    close = true;
    if (mode == Mode::kUpper) return LevelCmp::kUnknown;
    if (mode == Mode::kLower) return LevelCmp::kEqual;
    return mod_equal(*mc, ca, cb, P.g[u], Q.g[v]) ? LevelCmp::kEqual : LevelCmp::kUnknown;
  }

  // An upper bound (> 0) on the exact overlap of the level intervals of atoms u and v: the two
  // algebraically equal forms min(F_u, G_v) - max(F_{u-1}, G_{v-1}) and
  // min(S_{u-1}, T_{v-1}) - max(S_u, T_v) (S, T: mass above), each from the levels with their
  // relative error bounds and the absolute error of a subnormal.
  double overlap_ub(std::size_t u, std::size_t v) const {
    const double e = P.err + Q.err + 8.0 * 0x1p-53, tiny = 0x1p-1070;
    auto val = [](double m, std::int64_t ex) {
      return ex < -1100 ? 0.0 : std::ldexp(m, static_cast<int>(std::min<std::int64_t>(ex, 1100)));
    };
    auto F = [&](const Levels& L, std::size_t j) { return val(L.fm[j], L.fe[j]); };
    auto S = [&](const Levels& L, std::size_t j) { return L.sm[j] == 0.0 ? 0.0 : val(L.sm[j], L.se[j]); };
    const double f_hi = std::min(F(P, u), F(Q, v));
    const double f_lo = std::max(u > 0 ? F(P, u - 1) : 0.0, v > 0 ? F(Q, v - 1) : 0.0);
    const double s_hi = std::min(u > 0 ? S(P, u - 1) : 1.0, v > 0 ? S(Q, v - 1) : 1.0);
    const double s_lo = std::max(S(P, u), S(Q, v));
    const double ub_f = f_hi * (1.0 + e) - f_lo * (1.0 - e) + tiny;
    const double ub_s = s_hi * (1.0 + e) - s_lo * (1.0 - e) + tiny;
    return std::max(std::min({ub_f, ub_s, 1.0}), std::numeric_limits<double>::denorm_min());
  }
};

// Per-call state of the W-infinity walk: the random primes and, per prior, the exact images
// built when one of its positions first needs a tie certified (released with release(th)),
// with a pool of recomputed segments (one per worker in use; a worker takes the one holding its
// position's segment when there is one).
struct WalkShared {
  const MarkovChainSpec& spec;
  Geometry g;
  double base;
  const JobControl* control;
  std::uint64_t primes[kModPrimes];
  std::vector<std::shared_ptr<const ModChain>> chains;
  std::unique_ptr<std::mutex[]> chain_mu;
  std::mutex seg_mu;
  std::vector<std::unique_ptr<ModSegment>> segs;

  WalkShared(const MarkovChainSpec& s, const JobControl* ctl)
      : spec(s), g(geometry(s)), control(ctl), chains(s.n_theta), chain_mu(new std::mutex[s.n_theta]) {
    base = static_cast<double>(g.T) * static_cast<double>(s.values[0] - static_cast<std::int64_t>(g.dv[0]));
    std::random_device rd;
    std::mt19937_64 rng((static_cast<std::uint64_t>(rd()) << 32) ^ rd());
    for (int q = 0; q < kModPrimes;) {
      primes[q] = modp::random_prime(rng);
      if (std::find(primes, primes + q, primes[q]) == primes + q) ++q;  // distinct primes
    }
  }
  std::shared_ptr<const ModChain> chain_of(std::size_t th) {
    std::lock_guard<std::mutex> lk(chain_mu[th]);
    if (!chains[th])
      chains[th] = std::make_shared<const ModChain>(g.k, g.T, g.span, g.dv.data(), spec.prior(th), spec.period,
                                                    spec.init + th * g.k, primes, control);
    return chains[th];
  }
  void release(std::size_t th) {
    std::lock_guard<std::mutex> lk(chain_mu[th]);
    chains[th].reset();
  }
  std::unique_ptr<ModSegment> take_segment(const ModChain& mc, std::size_t i) {
    std::lock_guard<std::mutex> lk(seg_mu);
    if (segs.empty()) return std::make_unique<ModSegment>();
    std::size_t pick = segs.size() - 1;
    for (std::size_t q = 0; q < segs.size(); ++q)
      if (segs[q]->holds(mc, i)) pick = q;
    auto s = std::move(segs[pick]);
    segs.erase(segs.begin() + static_cast<std::ptrdiff_t>(pick));
    return s;
  }
  void give_segment(std::unique_ptr<ModSegment> s) {
    std::lock_guard<std::mutex> lk(seg_mu);
    segs.push_back(std::move(s));
  }
};

// The walks of one position (th, i): its levels and, on demand, the exact images of its laws.
struct PositionWalk {
  WalkShared& W;
  std::size_t th, i;
  std::vector<Levels> L;
  std::vector<std::uint8_t> possible;
  std::shared_ptr<const ModChain> mc;
  std::unique_ptr<ModSegment> seg;
  std::vector<std::vector<std::uint64_t>> cum;

  PositionWalk(WalkShared& w, std::size_t th_, std::size_t i_, const std::vector<Law>& laws)
      : W(w), th(th_), i(i_), L(w.g.k), possible(w.g.k, 0), cum(kModPrimes * w.g.k) {
    for (std::size_t a = 0; a < w.g.k; ++a)
      if (laws[a].n != 0) {
        make_levels(laws[a], w.base, w.g.T, w.g.k, w.g.R, L[a]);
        possible[a] = 1;
      }
  }
  ~PositionWalk() {  // the segment goes back to the pool however the walk ends (Cancelled included)
    if (seg) W.give_segment(std::move(seg));
  }
  PositionWalk(const PositionWalk&) = delete;
  PositionWalk& operator=(const PositionWalk&) = delete;

  const std::vector<std::uint64_t>* cum_of(std::size_t a) {
    if (!mc) mc = W.chain_of(th);
    if (!seg) seg = W.take_segment(*mc, i);
    if (cum[kModPrimes * a].empty()) seg->cumulative(*mc, i, a, &cum[kModPrimes * a]);
    return &cum[kModPrimes * a];
  }

  // W_inf of every pair a < b into o (the direct computation, markov.hpp): -1 for an impossible
  // secret; the upper walk, then the lower one if some comparison was close, then the walk with
  // ties certified modulo the primes if they differ.
  void all_pairs(double* o) {
    for (std::size_t a = 0; a < W.g.k; ++a)
      for (std::size_t b = a + 1; b < W.g.k; ++b, ++o) {
        if (!possible[a] || !possible[b]) {
          *o = -1.0;
          continue;
        }
        const Levels &P = L[a], &Q = L[b];
        PairCmp cmp(P, Q);
        const double upper = transport::w_inf_ranges(P.x.data(), P.x.size(), Q.x.data(), Q.x.size(), cmp);
        if (!cmp.close) {  // every comparison was decided by the float levels
          *o = upper;
          continue;
        }
        cmp.mode = Mode::kLower;
        if (transport::w_inf_ranges(P.x.data(), P.x.size(), Q.x.data(), Q.x.size(), cmp) == upper) {
          *o = upper;
          continue;
        }
        cmp.mode = Mode::kCertified;
        cmp.ca = cum_of(a);
        cmp.cb = cum_of(b);
        cmp.mc = mc.get();
        *o = transport::w_inf_ranges(P.x.data(), P.x.size(), Q.x.data(), Q.x.size(), cmp);
      }
  }
};

// ------------------------------------------------------------------ skipping (docs/long-chains.md)

// F <= 1/4 and F >= 3/4 of a level m 2^e (m in [1, 2)).
inline bool at_most_quarter(double m, std::int64_t e) { return e < -2 || (e == -2 && m == 1.0); }
inline bool at_least_three_quarters(double m, std::int64_t e) { return e >= 0 || (e == -1 && m >= 1.5); }

// The comparison table A'_eta of the page (Lemma 5): a comparison is decided only when the
// levels differ by more than the widened band in the domain every position within the drift
// would use (both domains when the smaller level lies in [1/4, 3/4]); top atoms (level exactly
// 1) compare exactly. Undecided: unknown (upper), equal (lower), or exact modulo the primes
// (certified, identical windows only: Theorem 7).
struct DriftCmp {
  const Levels& P;
  const Levels& Q;
  double band;
  Mode mode = Mode::kUpper;
  const ModChain* mc = nullptr;
  const std::vector<std::uint64_t>*ca = nullptr, *cb = nullptr;

  transport::LevelCmp operator()(std::size_t u, std::size_t v) const {
    using transport::LevelCmp;
    const bool tp = P.sm[u] == 0.0, tq = Q.sm[v] == 0.0;
    if (tp || tq) return tp && tq ? LevelCmp::kEqual : (tp ? LevelCmp::kGreater : LevelCmp::kLess);
    const int rf = rel_cmp(P.fm[u], P.fe[u], Q.fm[v], Q.fe[v], band);
    const int rs = -rel_cmp(P.sm[u], P.se[u], Q.sm[v], Q.se[v], band);
    int r;
    if (at_most_quarter(P.fm[u], P.fe[u]) || at_most_quarter(Q.fm[v], Q.fe[v]))
      r = rf;
    else if (at_least_three_quarters(P.fm[u], P.fe[u]) && at_least_three_quarters(Q.fm[v], Q.fe[v]))
      r = rs;
    else
      r = rf == rs ? rf : 0;
    if (r < 0) return LevelCmp::kLess;
    if (r > 0) return LevelCmp::kGreater;
    if (mode == Mode::kUpper) return LevelCmp::kUnknown;
    if (mode == Mode::kLower) return LevelCmp::kEqual;
    return mod_equal(*mc, ca, cb, P.g[u], Q.g[v]) ? LevelCmp::kEqual : LevelCmp::kUnknown;
  }
};

// The widened band beta' of the page for a drift eta (rounded up).
inline double drift_band(const Levels& P, const Levels& Q, double eta) {
  const double u = 0x1p-53, beta = P.err + Q.err + 4.0 * u;
  return (eta + 3.0 * (P.err + Q.err) + 2.0 * beta + 64.0 * u) * (1.0 + 8.0 * u);
}

// Theorem 6: every interior position within D steps of the representative has the
// representative's W_inf V for the pair when the upper and lower walks on A'_eta give V.
bool certifies(const Levels& P, const Levels& Q, double eta, double V) {
  if (!(eta <= 0.1)) return false;
  DriftCmp cmp{P, Q, drift_band(P, Q, eta)};
  const double up = transport::w_inf_ranges(P.x.data(), P.x.size(), Q.x.data(), Q.x.size(), cmp);
  if (up != V) return false;
  cmp.mode = Mode::kLower;
  return transport::w_inf_ranges(P.x.data(), P.x.size(), Q.x.data(), Q.x.size(), cmp) == V;
}

// One prior's skipping: its plan, the exact window identities (computed on first need), the
// interior positions left to the direct computation. Each representative answers for a stretch
// of interior positions of its phase (the first round: the whole phase); a stretch its
// certified D leaves uncovered gets representatives of its own in a later round (streams kept
// at them only) when that costs less than computing its positions directly.
struct PriorSkip {
  SkipPlan plan;
  std::mutex mu;
  bool identity_done = false;
  std::vector<std::size_t> left, right;  // end positions to compute (masked), ascending
  KeptSlices keep;                        // the representatives' slices (this round)
  std::vector<std::size_t> keep_phase;    // phase of keep.at[j]
  std::vector<std::size_t> s_lo, s_hi;    // stretch of keep.at[j]: positions of its phase in [s_lo, s_hi]
  std::vector<std::size_t> keep_D;        // certified D of keep.at[j] (steps of the period)
  unsigned round = 0;
  struct Rep {
    std::size_t r, phi, lo, hi;  // a representative of a later round and its stretch
  };
  std::vector<Rep> pending;  // beyond the memory cap of a round: the next round's
};

// Multiply-adds of the laws of one position (k convolutions of a forward and a backward row).
double position_operations(std::size_t k, std::size_t T, std::size_t span, std::size_t t) {
  return static_cast<double>(k) * static_cast<double>((t + 1) * span + 1) * static_cast<double>((T - 1 - t) * span + 1);
}

// Multiply-adds of the two streams of a round (k^2 steps of a slice per position, both ways).
double streams_operations(std::size_t k, std::size_t T, std::size_t span) {
  return static_cast<double>(k * k) * static_cast<double>(T) * static_cast<double>(T * span + 1);
}

// The next round of representatives of a prior: in every stretch that its representative left
// partly uncovered (D_j steps certified), representatives spaced 2 D_j + 1 steps apart, each
// answering for the D_j steps on either side; at most `cap` of them per round (the memory that
// the streams' kept slices may take; the others wait in ps.pending for the next round), and
// only when their laws and the two streams cost less than half of the uncovered positions
// computed directly. Returns whether a round is set up (keep.at, keep_phase and the stretches
// replaced; the new representatives' todo flags cleared).
bool next_round(PriorSkip& ps, const MarkovChainSpec& spec, std::uint8_t* todo, std::size_t cap, unsigned max_rounds,
                const std::function<bool(std::size_t)>& wanted) {
  const SkipPlan& pl = ps.plan;
  const std::size_t k = spec.k, T = spec.T, p = pl.drift.period;
  std::size_t span = 0;
  {
    std::int64_t lo = spec.values[0], hi = spec.values[0];
    for (std::size_t x = 0; x < k; ++x) {
      lo = std::min(lo, spec.values[x]);
      hi = std::max(hi, spec.values[x]);
    }
    span = static_cast<std::size_t>(hi - lo);
  }
  std::vector<PriorSkip::Rep> reps = std::move(ps.pending);
  ps.pending.clear();
  auto cover = [&](std::size_t a, std::size_t b, std::size_t phi, std::size_t D) {  // positions a, a + p, .., b
    if (D == 0) return;  // one representative per position: the direct computation does that
    const std::size_t step = (2 * D + 1) * p;
    for (std::size_t lo = a; lo <= b; lo += step) {
      const std::size_t hi = std::min(b, lo + step - p);
      reps.push_back(PriorSkip::Rep{std::min(hi, lo + D * p), phi, lo, hi});
      if (hi + p > b) break;
    }
  };
  for (std::size_t j = 0; j < ps.keep.at.size(); ++j) {
    const std::size_t r = ps.keep.at[j], D = ps.keep_D[j], phi = ps.keep_phase[j];
    if (r >= ps.s_lo[j] + (D + 1) * p) cover(ps.s_lo[j], r - (D + 1) * p, phi, D);
    if (ps.s_hi[j] >= r + (D + 1) * p) cover(r + (D + 1) * p, ps.s_hi[j], phi, D);
  }
  if (reps.empty() || ps.round + 1 >= max_rounds) return false;
  if (ps.round == 0) {
    // the whole plan against the direct computation of the positions it would cover (later
    // rounds only finish what this one started)
    double cost = streams_operations(k, T, span) * std::ceil(static_cast<double>(reps.size()) / static_cast<double>(cap));
    double uncovered = 0.0;
    for (const PriorSkip::Rep& q : reps) {
      cost += position_operations(k, T, span, q.r);
      for (std::size_t t = q.lo; t <= q.hi; t += p)
        if (wanted(t)) uncovered += position_operations(k, T, span, t);
    }
    if (!(cost <= 0.5 * uncovered)) return false;
  }
  if (reps.size() > cap) {
    ps.pending.assign(reps.begin() + static_cast<std::ptrdiff_t>(cap), reps.end());
    reps.resize(cap);
  }
  std::sort(reps.begin(), reps.end(), [](const PriorSkip::Rep& a, const PriorSkip::Rep& b) { return a.r < b.r; });
  ps.keep = KeptSlices{};
  ps.keep_phase.clear();
  ps.s_lo.clear();
  ps.s_hi.clear();
  for (const PriorSkip::Rep& q : reps) {
    ps.keep.at.push_back(q.r);
    ps.keep_phase.push_back(q.phi);
    ps.s_lo.push_back(q.lo);
    ps.s_hi.push_back(q.hi);
    todo[q.r] = 0;  // computed from the kept slices
  }
  ps.keep_D.assign(reps.size(), 0);
  ++ps.round;
  return true;
}

}  // namespace

namespace {

// The direct computation (every position of the masks), as markov.hpp describes.
std::vector<std::uint8_t> w_inf_direct(const MarkovChainSpec& spec, unsigned threads, double* out,
                                       const SumLawsOptions& options, WalkShared& W) {
  const std::size_t k = spec.k, T = spec.T, n_pairs = k * (k - 1) / 2, n_theta = spec.n_theta;
  SumLawsOptions opt = options;
  opt.concurrent_positions = true;  // every (theta, i) writes its own entries of out
  std::unique_ptr<std::atomic<std::size_t>[]> remaining(new std::atomic<std::size_t>[n_theta]);
  for (std::size_t th = 0; th < n_theta; ++th) {
    const std::uint8_t* mask = options.prior_positions != nullptr ? options.prior_positions + th * T : options.positions;
    std::size_t n = T;
    if (mask != nullptr) {
      n = 0;
      for (std::size_t i = 0; i < T; ++i) n += mask[i] != 0;
    }
    remaining[th] = n;
  }
  return sum_laws(spec, threads, [&](std::size_t th, std::size_t i, const std::vector<Law>& laws) {
    {
      PositionWalk pw(W, th, i, laws);
      pw.all_pairs(out + (th * T + i) * n_pairs);
    }
    if (--remaining[th] == 0) W.release(th);
  }, opt);
}

}  // namespace

std::vector<std::uint8_t> w_inf_all_pairs(const MarkovChainSpec& spec, unsigned threads, double* out,
                                          const SumLawsOptions& options) {
  WalkShared W(spec, options.control);
  if (!options.skip_interior || options.arithmetic != Arithmetic::kAuto || options.prior_positions != nullptr)
  {
    if (options.skip_stats != nullptr) {
      std::size_t n = 0;
      for (std::size_t th = 0; th < spec.n_theta; ++th)
        for (std::size_t i = 0; i < spec.T; ++i) {
          const std::uint8_t* mask = options.prior_positions != nullptr ? options.prior_positions + th * spec.T
                                                                       : options.positions;
          n += mask == nullptr || mask[i] != 0;
        }
      *options.skip_stats = SkipStats{0, 0, 0, 0, n};
    }
    return w_inf_direct(spec, threads, out, options, W);
  }

  const std::size_t k = spec.k, T = spec.T, n_pairs = k * (k - 1) / 2, n_theta = spec.n_theta;
  JobControl* ctl = options.control;
  const unsigned hw = threads == 0 ? std::min(hardware_threads(), kMaxThreads) : threads;
  const std::uint8_t* mask = options.positions;
  auto wanted = [&](std::size_t i) { return mask == nullptr || mask[i] != 0; };
  std::vector<std::uint8_t> todo(n_theta * T, 0);
  std::unique_ptr<std::atomic<std::uint8_t>[]> flag(new std::atomic<std::uint8_t>[n_theta]);  // extended range used
  for (std::size_t th = 0; th < n_theta; ++th) flag[th] = 0;
  std::vector<std::unique_ptr<PriorSkip>> skip(n_theta);
  std::atomic<std::size_t> n_planned{0}, n_rounds{0}, n_reps{0}, n_certified{0};

  // Plan a prior: the window, the end positions, the representatives (positions masked out are
  // counted done at once).
  auto plan = [&](std::size_t th) {
    auto ps = std::make_unique<PriorSkip>();
    ps->plan = plan_skip(spec, th, kSkipDrift, ctl, options.skip_window);
    const SkipPlan& pl = ps->plan;
    std::size_t masked_out = 0;
    for (std::size_t i = 0; i < T; ++i) {
      if (!wanted(i)) {
        ++masked_out;
        continue;
      }
      if (!pl.usable) todo[th * T + i] = 1;
      else if (i < pl.lo) ps->left.push_back(i);
      else if (i > pl.hi) ps->right.push_back(i);
    }
    advance(ctl, masked_out);
    if (pl.usable) {
      ++n_planned;
      const std::size_t p = pl.drift.period;
      std::vector<std::uint8_t> need(p, 0);
      for (std::size_t i = pl.lo; i <= pl.hi; ++i)
        if (wanted(i)) need[i % p] = 1;
      std::vector<std::pair<std::size_t, std::size_t>> reps;
      for (std::size_t phi = 0; phi < p; ++phi)
        if (need[phi]) reps.emplace_back(pl.reps[phi], phi);
      std::sort(reps.begin(), reps.end());
      for (const auto& r : reps) {
        ps->keep.at.push_back(r.first);
        ps->keep_phase.push_back(r.second);
        // the stretch of the first round: every interior position of the phase
        const std::size_t first = pl.lo + (r.second + p - pl.lo % p) % p;
        ps->s_lo.push_back(first);
        ps->s_hi.push_back(first + (pl.hi - first) / p * p);
      }
      ps->keep_D.assign(reps.size(), 0);
    }
    skip[th] = std::move(ps);
  };

  auto emit_end = [&](std::size_t th, std::size_t i, const std::vector<Law>& laws) {
    PositionWalk pw(W, th, i, laws);
    pw.all_pairs(out + (th * T + i) * n_pairs);
    advance(ctl);
  };

  // The representative keep.at[j] of prior th: its W_inf, then for each pair the largest D
  // that Theorem 6 (or 7) certifies; interior positions of its phase within the smallest D get
  // its values, the others go to the direct computation.
  auto represent = [&](std::size_t th, std::size_t j) {
    PriorSkip& ps = *skip[th];
    const SkipPlan& pl = ps.plan;
    const std::size_t p = pl.drift.period, phi = ps.keep_phase[j], r = ps.keep.at[j];
    const std::size_t s_lo = ps.s_lo[j], s_hi = ps.s_hi[j];
    const std::size_t dmax = std::max(r - s_lo, s_hi - r) / p;
    std::size_t D = dmax;
    double* o = out + (th * T + r) * n_pairs;
    std::vector<double> V(n_pairs);
    if (kept_laws(spec, th, ps.keep, j, [&](std::size_t, std::size_t, const std::vector<Law>& laws) {
      PositionWalk pw(W, th, r, laws);
      pw.all_pairs(V.data());
      std::size_t pr = 0;
      for (std::size_t a = 0; a < k; ++a)
        for (std::size_t b = a + 1; b < k; ++b, ++pr) {
          if (!pw.possible[a] || !pw.possible[b] || D == 0) continue;  // impossible on every interior position
          const Levels &P = pw.L[a], &Q = pw.L[b];
          const double om = pl.drift.omega[phi * k + a] + pl.drift.omega[phi * k + b];
          auto eta = [&](std::size_t d) { return static_cast<double>(d) * om * (1.0 + 0x1p-50); };
          if (certifies(P, Q, eta(D), V[pr])) continue;
          // identical windows (Theorem 7): the laws of the phase do not change at all
          bool identical = false;
          {
            std::lock_guard<std::mutex> lk(ps.mu);
            if (!ps.identity_done) {
              windows_identical(spec, th, ps.plan.drift, W.primes, ctl);
              ps.identity_done = true;
            }
            identical = pl.drift.identical[phi * k + a] && pl.drift.identical[phi * k + b];
          }
          if (identical) {
            DriftCmp cmp{P, Q, drift_band(P, Q, 0.0), Mode::kCertified};
            cmp.ca = pw.cum_of(a);
            cmp.cb = pw.cum_of(b);
            cmp.mc = pw.mc.get();
            if (transport::w_inf_ranges(P.x.data(), P.x.size(), Q.x.data(), Q.x.size(), cmp) == V[pr]) {
              cmp.mode = Mode::kLower;
              if (transport::w_inf_ranges(P.x.data(), P.x.size(), Q.x.data(), Q.x.size(), cmp) == V[pr]) continue;
            }
          }
          // the largest D that certifies (the test is monotone in D)
          std::size_t lo = 0, hi = D;  // certifies(lo) (lo = 0: nothing to certify), not hi
          while (hi - lo > 1) {
            const std::size_t mid = lo + (hi - lo) / 2;
            if (certifies(P, Q, eta(mid), V[pr])) lo = mid;
            else hi = mid;
          }
          D = lo;
        }
    }))
      flag[th] = 1;
    ps.keep_D[j] = D;
    std::size_t covered = 0;
    if (wanted(r)) {
      std::copy(V.begin(), V.end(), o);
      ++covered;
    }
    for (std::size_t t = s_lo; t <= s_hi; t += p) {
      if (t == r || !wanted(t)) continue;
      const std::size_t d = (t > r ? t - r : r - t) / p;
      if (d <= D) {
        std::copy(V.begin(), V.end(), out + (th * T + t) * n_pairs);
        todo[th * T + t] = 0;
        ++covered;
      } else {
        todo[th * T + t] = 1;
      }
    }
    advance(ctl, covered);
    ++n_reps;
    n_certified += covered - (wanted(r) ? 1 : 0);
  };
  // Rounds of representatives per prior: at most kMaxRounds (the first included), each keeping
  // the slices of at most the representatives that peak_bytes provides for.
  constexpr unsigned kMaxRounds = 6;
  const std::size_t rep_cap = T / (2 * checkpoint_stride(T) + 1) + 64;
  auto another_round = [&](std::size_t th) {
    PriorSkip& ps = *skip[th];
    if (!ps.plan.usable) return false;
    const bool more = next_round(ps, spec, todo.data() + th * T, rep_cap, kMaxRounds, wanted);
    if (!more) {  // the prior's last round
      std::size_t r = n_rounds.load();
      while (r < ps.round + 1 && !n_rounds.compare_exchange_weak(r, ps.round + 1)) {
      }
    }
    return more;
  };

  auto streams = [&](std::size_t th, int which) {
    PriorSkip& ps = *skip[th];
    if (!ps.plan.usable) return;
    // the forward stream fills keep.fm / fe, the backward one keep.bm / be (the end positions
    // in the first round only)
    static const std::vector<std::size_t> none;
    const std::vector<std::size_t>& ends = ps.round > 0 ? none : (which == 0 ? ps.right : ps.left);
    if (stream_laws(spec, th, which, ends, ps.keep, emit_end, ctl)) flag[th] = 1;
  };

  if (n_theta >= hw) {
    // priors in parallel: each worker plans, streams and certifies a prior alone
    parallel_for(n_theta, threads, [&](std::size_t th) {
      plan(th);
      do {
        streams(th, 0);
        streams(th, 1);
        for (std::size_t j = 0; j < skip[th]->keep.at.size(); ++j) represent(th, j);
      } while (another_round(th));
      skip[th].reset();
      W.release(th);
    });
  } else {
    // few priors: the two streams of a prior run side by side, then its representatives
    parallel_for(n_theta, threads, plan);
    std::vector<std::size_t> live(n_theta);
    for (std::size_t th = 0; th < n_theta; ++th) live[th] = th;
    while (!live.empty()) {
      parallel_for(2 * live.size(), threads, [&](std::size_t q) { streams(live[q / 2], static_cast<int>(q % 2)); });
      std::vector<std::pair<std::size_t, std::size_t>> reps;
      for (std::size_t th : live)
        for (std::size_t j = 0; j < skip[th]->keep.at.size(); ++j) reps.emplace_back(th, j);
      parallel_for(reps.size(), threads, [&](std::size_t q) { represent(reps[q].first, reps[q].second); });
      std::vector<std::size_t> next;
      for (std::size_t th : live)
        if (another_round(th)) next.push_back(th);
      live.swap(next);
    }
    for (std::size_t th = 0; th < n_theta; ++th) W.release(th);
    skip.clear();
  }

  std::vector<std::uint8_t> used(n_theta);
  for (std::size_t th = 0; th < n_theta; ++th) used[th] = flag[th];
  // The rest: the direct computation at the positions no representative covers.
  bool any = false;
  std::size_t n_direct = 0;
  for (std::uint8_t f : todo) {
    any |= f != 0;
    n_direct += f != 0;
  }
  if (options.skip_stats != nullptr)
    *options.skip_stats = SkipStats{n_planned.load(), n_rounds.load(), n_reps.load(), n_certified.load(), n_direct};
  if (any) {
    SumLawsOptions opt = options;
    opt.positions = nullptr;
    opt.prior_positions = todo.data();
    opt.advance_skipped = false;
    const auto u = w_inf_direct(spec, threads, out, opt, W);
    for (std::size_t th = 0; th < n_theta; ++th) used[th] |= u[th];
  }
  return used;
}

void drift_walks(const Law& a, const Law& b, std::size_t T, std::size_t k, std::size_t R, double base, double eta,
                 double& upper, double& lower) {
  Levels P, Q;
  make_levels(a, base, T, k, R, P);
  make_levels(b, base, T, k, R, Q);
  DriftCmp cmp{P, Q, drift_band(P, Q, eta)};
  upper = transport::w_inf_ranges(P.x.data(), P.x.size(), Q.x.data(), Q.x.size(), cmp);
  cmp.mode = Mode::kLower;
  lower = transport::w_inf_ranges(P.x.data(), P.x.size(), Q.x.data(), Q.x.size(), cmp);
}

// ------------------------------------------------------------------ LevelCertifier
struct LevelCertifier::Impl {
  const MarkovChainSpec& spec;
  Geometry g;
  double base;
  const JobControl* control;
  std::uint64_t primes[kModPrimes];
  std::vector<std::shared_ptr<const ModChain>> chains;
  std::unique_ptr<std::mutex[]> chain_mu;
  std::unique_ptr<std::atomic<std::size_t>[]> remaining;

  Impl(const MarkovChainSpec& s, std::size_t per_prior, const JobControl* ctl)
      : spec(s), g(geometry(s)), control(ctl), chains(s.n_theta), chain_mu(new std::mutex[s.n_theta]),
        remaining(new std::atomic<std::size_t>[s.n_theta]) {
    base = static_cast<double>(g.T) * static_cast<double>(s.values[0] - static_cast<std::int64_t>(g.dv[0]));
    std::random_device rd;
    std::mt19937_64 rng((static_cast<std::uint64_t>(rd()) << 32) ^ rd());
    for (int q = 0; q < kModPrimes;) {
      primes[q] = modp::random_prime(rng);
      if (std::find(primes, primes + q, primes[q]) == primes + q) ++q;  // distinct primes
    }
    for (std::size_t th = 0; th < s.n_theta; ++th) remaining[th] = per_prior;
  }
  std::shared_ptr<const ModChain> chain_of(std::size_t th) {
    std::lock_guard<std::mutex> lk(chain_mu[th]);
    if (!chains[th])
      chains[th] = std::make_shared<const ModChain>(g.k, g.T, g.span, g.dv.data(), spec.prior(th), spec.period,
                                                    spec.init + th * g.k, primes, control);
    return chains[th];
  }
};

struct LevelCertifier::Position::Impl {
  LevelCertifier::Impl* owner;
  std::size_t th, i;
  std::vector<Levels> L;
  std::shared_ptr<const ModChain> mc;
  std::vector<std::vector<std::uint64_t>> cum;
  // the position's segment of the exact images, recomputed from the chain's checkpoints when a
  // pair first needs certifying (rare: only for an entry the float plan lacks)
  std::unique_ptr<ModSegment> seg;
  const std::vector<std::uint64_t>* cum_of(std::size_t a) {
    if (!mc) mc = owner->chain_of(th);
    if (cum[kModPrimes * a].empty()) {
      if (!seg) seg = std::make_unique<ModSegment>();
      seg->cumulative(*mc, i, a, &cum[kModPrimes * a]);
    }
    return &cum[kModPrimes * a];
  }
};

LevelCertifier::LevelCertifier(const MarkovChainSpec& spec, std::size_t positions_per_prior,
                               const JobControl* control)
    : impl_(new Impl(spec, positions_per_prior, control)) {}
LevelCertifier::~LevelCertifier() = default;
LevelCertifier::Position::Position(std::unique_ptr<Impl> p) : impl_(std::move(p)) {}
LevelCertifier::Position::Position(Position&&) noexcept = default;
LevelCertifier::Position::~Position() = default;

LevelCertifier::Position LevelCertifier::at(std::size_t th, std::size_t i, const std::vector<Law>& laws) {
  std::unique_ptr<Position::Impl> p(new Position::Impl{impl_.get(), th, i, {}, nullptr, {}, nullptr});
  const std::size_t k = impl_->g.k;
  p->L.resize(k);
  p->cum.resize(kModPrimes * k);
  for (std::size_t a = 0; a < k; ++a)
    if (laws[a].n != 0) make_levels(laws[a], impl_->base, impl_->g.T, k, impl_->g.R, p->L[a]);
  return Position(std::move(p));
}

void LevelCertifier::done(std::size_t th) {
  if (--impl_->remaining[th] == 0) {
    std::lock_guard<std::mutex> lk(impl_->chain_mu[th]);
    impl_->chains[th].reset();
  }
}

void LevelCertifier::Position::entries(std::size_t a, std::size_t b, bool certify, std::vector<CouplingEntry>& out) {
  out.clear();
  const Levels &P = impl_->L[a], &Q = impl_->L[b];
  if (P.x.empty() || Q.x.empty()) return;
  PairCmp cmp(P, Q);
  if (certify) {
    cmp.mode = Mode::kCertified;
    cmp.ca = impl_->cum_of(a);
    cmp.cb = impl_->cum_of(b);
    cmp.mc = impl_->mc.get();
  }
  transport::coupled_ranges(P.x.size(), Q.x.size(), cmp, [&](std::size_t u, std::size_t lo, std::size_t hi) {
    for (std::size_t v = lo; v <= hi; ++v) out.push_back(CouplingEntry{P.x[u], Q.x[v], cmp.overlap_ub(u, v)});
  });
}

}  // namespace puffer::models
