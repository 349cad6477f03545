#include "models/markov_skip.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/modp.hpp"
#include "models/markov_ext.hpp"

namespace puffer::models {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kU = 0x1p-53;
// Largest total exponent range (bits) of two factors convolved in plain doubles: every product
// of reachable entries is then >= 2^-962 of the largest (normal), as in markov.cpp.
constexpr std::int64_t kPlainRange = 960;
// A window whose largest omega is not below this certifies no range worth a representative.
constexpr double kUsableOmega = 0.05;

struct Poly {  // extended-range polynomial: m[j] 2^e[j], m in [1, 2) (0 with kNoExp: unreachable)
  std::vector<double> m;
  std::vector<std::int32_t> e;
  std::size_t n() const { return m.size(); }
};

struct Shape {
  std::size_t k, span, period;
  std::vector<std::size_t> dv;
};

Shape shape_of(const MarkovChainSpec& spec, std::size_t period) {
  Shape s{spec.k, 0, period, std::vector<std::size_t>(spec.k)};
  std::int64_t lo = spec.values[0], hi = spec.values[0];
  for (std::size_t x = 0; x < spec.k; ++x) {
    lo = std::min(lo, spec.values[x]);
    hi = std::max(hi, spec.values[x]);
  }
  for (std::size_t x = 0; x < spec.k; ++x) s.dv[x] = static_cast<std::size_t>(spec.values[x] - lo);
  s.span = static_cast<std::size_t>(hi - lo);
  return s;
}

// Rows e_{x0} Pi(tau0, n) for n = n1 and n = n2 (n1 <= n2): out1[y], out2[y] (k polynomials of
// n span + 1 coefficients each). Step j uses the matrix of time tau0 + j (mod the period).
void forward_rows(const MarkovChainSpec& spec, std::size_t th, const Shape& S, std::size_t x0, std::size_t tau0,
                  std::size_t n1, std::size_t n2, std::vector<Poly>& out1, std::vector<Poly>& out2,
                  const JobControl* ctl) {
  const std::size_t k = S.k, span = S.span, cap = n2 * span + 1;
  std::vector<double> cm(k * cap, 0.0), nm(k * cap, 0.0), acc(cap, 0.0);
  std::vector<std::int32_t> ce(k * cap, ext::kNoExp), ne(k * cap, ext::kNoExp);
  cm[x0 * cap] = 1.0;
  ce[x0 * cap] = 0;
  std::vector<ext::Src> src;
  auto snap = [&](std::size_t j, std::vector<Poly>& out) {
    out.assign(k, Poly{});
    const std::size_t len = j * span + 1;
    for (std::size_t y = 0; y < k; ++y) {
      out[y].m.assign(cm.begin() + static_cast<std::ptrdiff_t>(y * cap),
                      cm.begin() + static_cast<std::ptrdiff_t>(y * cap + len));
      out[y].e.assign(ce.begin() + static_cast<std::ptrdiff_t>(y * cap),
                      ce.begin() + static_cast<std::ptrdiff_t>(y * cap + len));
    }
  };
  if (n1 == 0) snap(0, out1);
  for (std::size_t j = 0; j < n2; ++j) {
    if ((j & 63) == 0) poll(ctl);
    const double* P = spec.step(th, (tau0 + j) % S.period);
    const std::size_t ns = j * span + 1, nd = (j + 1) * span + 1;
    for (std::size_t y = 0; y < k; ++y) {
      src.clear();
      for (std::size_t x = 0; x < k; ++x) {
        const double p = P[x * k + y];
        if (!(p > 0.0)) continue;
        ext::Src s{cm.data() + x * cap, ce.data() + x * cap, ns, 0.0, 0, S.dv[y]};
        ext::split(p, s.pm, s.pe);
        src.push_back(s);
      }
      ext::gather(nm.data() + y * cap, ne.data() + y * cap, nd, src.data(), src.size(), acc.data());
    }
    cm.swap(nm);
    ce.swap(ne);
    if (j + 1 == n1) snap(n1, out1);
  }
  snap(n2, out2);
}

// Reachable index range of a polynomial; empty when every coefficient is 0.
bool reach(const Poly& a, std::size_t& lo, std::size_t& hi) {
  lo = a.n();
  hi = 0;
  for (std::size_t j = 0; j < a.n(); ++j)
    if (a.m[j] != 0.0) {
      if (lo == a.n()) lo = j;
      hi = j;
    }
  return lo != a.n();
}

void extent(const Poly& a, std::size_t lo, std::size_t hi, std::int64_t& mx, std::int64_t& mn) {
  mx = std::numeric_limits<std::int64_t>::min();
  mn = std::numeric_limits<std::int64_t>::max();
  for (std::size_t j = lo; j <= hi; ++j)
    if (a.m[j] != 0.0) {
      mx = std::max<std::int64_t>(mx, a.e[j]);
      mn = std::min<std::int64_t>(mn, a.e[j]);
    }
}

// c = a * b in the extended range: out.m[s] 2^out.e[s] (m > 0 exactly where some product of
// reachable coefficients lands), with relative error <= (min(len a, len b) + 2) u.
void convolve(const Poly& a, const Poly& b, Poly& out, std::vector<double>& sa, std::vector<double>& sb,
              std::vector<double>& sc) {
  const std::size_t n = a.n() + b.n() - 1;
  out.m.assign(n, 0.0);
  out.e.assign(n, ext::kNoExp);
  std::size_t alo, ahi, blo, bhi;
  if (!reach(a, alo, ahi) || !reach(b, blo, bhi)) return;
  std::int64_t amx, amn, bmx, bmn;
  extent(a, alo, ahi, amx, amn);
  extent(b, blo, bhi, bmx, bmn);
  const std::size_t na = ahi - alo + 1, nb = bhi - blo + 1;
  if ((amx - amn) + (bmx - bmn) + 2 <= kPlainRange) {
    sa.assign(na, 0.0);
    sb.assign(nb, 0.0);
    sc.assign(na + nb - 1, 0.0);
    for (std::size_t j = 0; j < na; ++j)
      if (a.m[alo + j] != 0.0) sa[j] = a.m[alo + j] * ext::pow2i(a.e[alo + j] - amx);
    for (std::size_t j = 0; j < nb; ++j)
      if (b.m[blo + j] != 0.0) sb[j] = b.m[blo + j] * ext::pow2i(b.e[blo + j] - bmx);
    for (std::size_t i = 0; i < na; ++i) {
      const double x = sa[i];
      if (x == 0.0) continue;
      double* c = sc.data() + i;
      for (std::size_t j = 0; j < nb; ++j) c[j] += x * sb[j];
    }
    for (std::size_t s = 0; s < na + nb - 1; ++s)
      if (sc[s] > 0.0) {
        double mm;
        std::int32_t ee;
        ext::split(sc[s], mm, ee);
        out.m[alo + blo + s] = mm;
        out.e[alo + blo + s] = static_cast<std::int32_t>(ee + amx + bmx);
      }
    return;
  }
  std::vector<double> J(na + nb - 1);
  std::vector<std::int32_t> E(na + nb - 1);
  ext::convolve_ext(J.data(), E.data(), a.m.data() + alo, a.e.data() + alo, na, b.m.data() + blo, b.e.data() + blo,
                    nb);
  for (std::size_t s = 0; s < na + nb - 1; ++s)
    if (J[s] > 0.0) {
      double mm;
      std::int32_t ee;
      ext::split(J[s], mm, ee);
      out.m[alo + blo + s] = mm;
      out.e[alo + blo + s] = static_cast<std::int32_t>(ee + E[s]);
    }
}

// The window polynomials of every phase: left[x][n][a] = Pi(t - m, n)[x, a] and
// right[a][n][y] = Pi(t, n)[a, y] for n in {m, m + p} (index 0: m, 1: m + p).
struct Windows {
  // [phase][start state][0/1] -> k polynomials (end states)
  std::vector<std::vector<std::vector<Poly>>> left, right;
};

}  // namespace

std::size_t minimal_period(const MarkovChainSpec& spec, std::size_t th) {
  const std::size_t P = spec.period, kk = spec.k * spec.k;
  for (std::size_t p = 1; p < P; ++p) {
    if (P % p != 0) continue;
    bool same = true;
    for (std::size_t t = p; t < P && same; ++t)
      same = std::memcmp(spec.step(th, t), spec.step(th, t - p), kk * sizeof(double)) == 0;
    if (same) return p;
  }
  return P;
}

double WindowDrift::max_omega() const {
  double w = 0.0;
  for (double o : omega) w = std::max(w, o);
  return w;
}

double window_operations(std::size_t k, std::size_t span, std::size_t period, std::size_t m) {
  const double K = static_cast<double>(k), L1 = static_cast<double>(m * span + 1),
               L2 = static_cast<double>((m + period) * span + 1);
  // per phase: 2 k passes of m + p steps (k^2 (m + p)^2 span / 2 each) and 2 k^3 convolutions
  return static_cast<double>(period) * (2.0 * K * K * K * L1 * L2 + K * K * K * L2 * static_cast<double>(m + period));
}

WindowDrift window_drift(const MarkovChainSpec& spec, std::size_t th, std::size_t period, std::size_t m,
                         const JobControl* ctl) {
  const Shape S = shape_of(spec, period);
  const std::size_t k = S.k, p = period;
  WindowDrift d;
  d.m = m;
  d.period = p;
  d.k = k;
  d.omega.assign(p * k, 0.0);
  const double W = static_cast<double>(2 * m + p), K = static_cast<double>(k);
  std::vector<Poly> r1, r2, tmp1, tmp2;
  std::vector<double> sa, sb, sc;
  Poly KK, KP;
  // Rows from each state at a time of phase tau: [x] -> (n = m, n = m + p) end-state polynomials
  auto rows = [&](std::size_t tau, std::vector<std::vector<Poly>>& at_m, std::vector<std::vector<Poly>>& at_mp) {
    at_m.assign(k, {});
    at_mp.assign(k, {});
    for (std::size_t x = 0; x < k; ++x) forward_rows(spec, th, S, x, tau, m, m + p, at_m[x], at_mp[x], ctl);
  };
  std::vector<std::vector<Poly>> Lm, Lmp, Rm, Rmp;
  for (std::size_t phi = 0; phi < p; ++phi) {
    const std::size_t tauL = (phi + p * (m / p + 1) - m) % p;  // phase of t - m
    rows(tauL, Lm, Lmp);
    if (tauL == phi) {
      Rm = Lm;
      Rmp = Lmp;
    } else {
      rows(phi, Rm, Rmp);
    }
    for (std::size_t a = 0; a < k; ++a) {
      double lo = kInf, hi = -kInf, big = 0.0;
      bool differ = false;
      for (std::size_t x = 0; x < k && !differ; ++x)
        for (std::size_t y = 0; y < k && !differ; ++y) {
          poll(ctl);
          // K = Pi(t-m, m)[x,a] Pi(t, m+p)[a,y],  K' = Pi(t-m, m+p)[x,a] Pi(t+p, m)[a,y]
          convolve(Lm[x][a], Rmp[a][y], KK, sa, sb, sc);
          convolve(Lmp[x][a], Rm[a][y], KP, sa, sb, sc);
          const std::size_t n = std::max(KK.n(), KP.n());
          for (std::size_t s = 0; s < n; ++s) {
            const double u = s < KK.n() ? KK.m[s] : 0.0, v = s < KP.n() ? KP.m[s] : 0.0;
            if ((u == 0.0) != (v == 0.0)) {
              differ = true;
              break;
            }
            if (u == 0.0) continue;
            const double lr = static_cast<double>(static_cast<std::int64_t>(KP.e[s]) - KK.e[s]) * 0.69314718055994530942 +
                              std::log(v / u);
            lo = std::min(lo, lr);
            hi = std::max(hi, lr);
            big = std::max(big, std::fabs(lr));
          }
        }
      double& om = d.omega[phi * k + a];
      if (differ) {
        om = kInf;
        continue;
      }
      if (lo > hi) continue;  // the state is never visited inside the window: J is 0 on both sides
      // per-coefficient relative error of K and K' (passes of <= W steps, convolutions of
      // <= (m + p) span + 1 terms), 2.02 (e_K + e_K') for the true ratios, and the rounding of
      // the logs and of this sum
      const double L = static_cast<double>((m + p) * S.span + 1);
      const double e = (4.0 * W * (K + 2.0) + 4.0 * L + 64.0) * kU;
      om = ((hi - lo) + 4.04 * e + 16.0 * kU + 8.0 * kU * big) * (1.0 + 8.0 * kU);
    }
  }
  return d;
}

void windows_identical(const MarkovChainSpec& spec, std::size_t th, WindowDrift& d,
                       const std::uint64_t primes[kModPrimes], const JobControl* ctl) {
  using modp::u128;
  using modp::u64;
  const Shape S = shape_of(spec, d.period);
  const std::size_t k = S.k, p = d.period, m = d.m, span = S.span;
  d.identical.assign(p * k, 1);
  // residue rows e_x Pi(tau, n) for n = m and m + p: [x][0/1][y] -> coefficients
  auto rows = [&](u64 pr, const std::vector<u64>& Pm, std::size_t tau,
                  std::vector<std::vector<std::vector<std::vector<u64>>>>& out) {
    out.assign(k, std::vector<std::vector<std::vector<u64>>>(2, std::vector<std::vector<u64>>(k)));
    const std::size_t cap = (m + p) * span + 1;
    for (std::size_t x0 = 0; x0 < k; ++x0) {
      std::vector<u64> cur(k * cap, 0), nxt(k * cap, 0);
      cur[x0 * cap] = 1;
      auto snap = [&](std::size_t j, int w) {
        for (std::size_t y = 0; y < k; ++y)
          out[x0][w][y].assign(cur.begin() + static_cast<std::ptrdiff_t>(y * cap),
                               cur.begin() + static_cast<std::ptrdiff_t>(y * cap + j * span + 1));
      };
      if (m == 0) snap(0, 0);
      for (std::size_t j = 0; j < m + p; ++j) {
        if ((j & 15) == 0) poll(ctl);
        const u64* P = Pm.data() + ((tau + j) % p) * k * k;
        std::fill(nxt.begin(), nxt.end(), u64{0});
        const std::size_t ns = j * span + 1;
        for (std::size_t y = 0; y < k; ++y)
          for (std::size_t x = 0; x < k; ++x) {
            const u64 c = P[x * k + y];
            if (c == 0) continue;
            const u64* f = cur.data() + x * cap;
            u64* g = nxt.data() + y * cap + S.dv[y];
            for (std::size_t s = 0; s < ns; ++s) g[s] = static_cast<u64>((static_cast<u128>(f[s]) * c + g[s]) % pr);
          }
        cur.swap(nxt);
        if (j + 1 == m) snap(m, 0);
      }
      snap(m + p, 1);
    }
  };
  auto conv = [](u64 pr, const std::vector<u64>& a, const std::vector<u64>& b, std::vector<u64>& c) {
    c.assign(a.size() + b.size() - 1, 0);
    std::vector<u128> acc(c.size(), 0);
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i] == 0) continue;
      for (std::size_t j = 0; j < b.size(); ++j) acc[i + j] += static_cast<u128>(a[i]) * b[j];
    }
    for (std::size_t s = 0; s < c.size(); ++s) c[s] = static_cast<u64>(acc[s] % pr);
  };
  std::vector<std::vector<std::vector<std::vector<u64>>>> L, R;
  std::vector<u64> c1, c2;
  for (int q = 0; q < kModPrimes; ++q) {
    const modp::Field fld(primes[q]);
    std::vector<u64> Pm(p * k * k);
    for (std::size_t ph = 0; ph < p; ++ph)
      for (std::size_t j = 0; j < k * k; ++j) Pm[ph * k * k + j] = fld.of(spec.step(th, ph)[j]);
    for (std::size_t phi = 0; phi < p; ++phi) {
      const std::size_t tauL = (phi + p * (m / p + 1) - m) % p;
      rows(primes[q], Pm, tauL, L);
      if (tauL == phi) R = L;
      else rows(primes[q], Pm, phi, R);
      for (std::size_t a = 0; a < k; ++a) {
        if (!d.identical[phi * k + a]) continue;
        bool same = true;
        for (std::size_t x = 0; x < k && same; ++x)
          for (std::size_t y = 0; y < k && same; ++y) {
            poll(ctl);
            conv(primes[q], L[x][0][a], R[a][1][y], c1);
            conv(primes[q], L[x][1][a], R[a][0][y], c2);
            same = c1 == c2;
          }
        d.identical[phi * k + a] = same ? 1 : 0;
      }
    }
  }
}

namespace {

// The window for period p: doubling m from 8 while the drift over the farthest interior
// position exceeds eta_target and a larger window still pays; the best drift found.
bool choose_window(const MarkovChainSpec& spec, std::size_t th, std::size_t p, double eta_target, double& budget,
                   std::size_t m_max, WindowDrift& best, const JobControl* ctl) {
  const Shape S = shape_of(spec, p);
  const double steps = std::ceil((static_cast<double>(spec.T) / 2.0) / static_cast<double>(p));
  bool have = false;
  std::size_t m_fail = 0;  // the largest window tried whose drift missed the target
  // m = 8, 16, 32, ..., and m_max last (the largest window the memory estimate provides for)
  for (std::size_t m = 8; m <= m_max; m = m == m_max ? m_max + 1 : std::min(2 * m, m_max)) {
    if (2 * m + 4 * p > spec.T) break;
    // every window tried counts against the budget, the first one included: on a short chain
    // with many states (k^3 per window against k per position) one window can cost most of
    // the direct computation, which then runs anyway
    const double ops = window_operations(spec.k, S.span, p, m);
    if (ops > budget) break;
    budget -= ops;
    WindowDrift d = window_drift(spec, th, p, m, ctl);
    // A persistent chain (second eigenvalue 0.9 - 0.98) forgets its start only after tens of
    // steps: before that, doubling the window may shrink omega by less than half (P = [[0.935,
    // 0.065], [0.033, 0.967]]: 5.00 at m = 8, 2.58 at 16, 1.3e-4 at 128, 6.9e-10 at 256), so the
    // doubling goes on while the budget lasts; it stops once omega no longer falls (the rounding
    // bound, which grows with m, dominates it) and a window is already usable.
    const bool improves = !have || d.max_omega() < best.max_omega();
    if (improves) {
      best = std::move(d);
      have = true;
    }
    if (best.max_omega() * steps <= eta_target) break;
    m_fail = m;
    if (!improves && best.max_omega() < kUsableOmega) break;
  }
  // The positions near both ends cost ~k m^2 T span^2 (each a short row against a long one),
  // the most of a persistent chain's computation: bisect twice between the last window that
  // missed the target and the one that met it (T = 17,520, second eigenvalue 0.93: 384 steps
  // instead of 512)
  if (have && m_fail > 0 && best.m > m_fail && best.max_omega() * steps <= eta_target) {
    std::size_t lo = m_fail, hi = best.m;
    for (int it = 0; it < 2 && hi - lo >= 16; ++it) {
      const std::size_t m = (lo + hi) / 2;
      const double ops = window_operations(spec.k, S.span, p, m);
      if (ops > budget) break;
      budget -= ops;
      WindowDrift d = window_drift(spec, th, p, m, ctl);
      if (d.max_omega() * steps <= eta_target) {
        best = std::move(d);
        hi = m;
      } else {
        lo = m;
      }
    }
  }
  return have;
}

// The plan for a chosen window: the interior and one representative per phase in its middle.
SkipPlan with_reps(const MarkovChainSpec& spec, WindowDrift d) {
  SkipPlan plan;
  const std::size_t T = spec.T;
  plan.usable = true;
  plan.drift = std::move(d);
  const std::size_t p = plan.drift.period;
  plan.lo = plan.drift.m;
  plan.hi = T - 1 - plan.drift.m;
  // one representative per phase, in the middle of the interior
  const std::size_t mid = (plan.lo + plan.hi) / 2;
  plan.reps.assign(p, 0);
  for (std::size_t phi = 0; phi < p; ++phi) {
    std::size_t r = mid - (mid % p) + phi;
    if (r > plan.hi) r -= p;
    if (r < plan.lo) r += p;
    plan.reps[phi] = r;
  }
  return plan;
}

}  // namespace

SkipPlan plan_skip(const MarkovChainSpec& spec, std::size_t th, double eta_target, const JobControl* ctl,
                   std::size_t window) {
  SkipPlan plan;
  const std::size_t T = spec.T, k = spec.k;
  const std::size_t p0 = minimal_period(spec, th);
  if (4 * p0 >= T) return plan;
  if (window > 0) {
    if (2 * window + 4 * p0 > T) return plan;
    WindowDrift d = window_drift(spec, th, p0, window, ctl);
    if (!std::isfinite(d.max_omega())) return plan;
    return with_reps(spec, std::move(d));
  }
  const Shape S = shape_of(spec, p0);
  const double Td = static_cast<double>(T), sp = static_cast<double>(std::max<std::size_t>(S.span, 1));
  const double K = static_cast<double>(k);
  // cost of a prior's positions (convolutions, k T^3 span^2 / 6): the windows get 5 % of it
  const double full = K * Td * Td * Td * sp * sp / 6.0;
  // memory: the end slices of the streams (~6 k m^2 span doubles) stay below the checkpoints of
  // the direct computation (~6 k span T^2 / C)
  const double C = static_cast<double>(checkpoint_stride(T));
  const std::size_t m_max = static_cast<std::size_t>(Td / std::sqrt(2.0 * C));
  // a homogeneous chain is periodic for every p, and a chain that alternates (a transition of
  // probability 0, or close to 1) has laws whose supports or tails repeat only every few steps:
  // periods c p0 for c = 1 .. 4, the first whose drift is small enough, else the smallest drift
  WindowDrift chosen;
  double chosen_eta = std::numeric_limits<double>::infinity();
  double budget = 0.05 * full;  // for all the windows tried, every period
  for (std::size_t c = 1; c <= 4; ++c) {
    const std::size_t p = c * p0;
    if (8 * p > T || p > T / (2 * static_cast<std::size_t>(C) + 1) + 64) break;
    WindowDrift d;
    if (!choose_window(spec, th, p, eta_target, budget, m_max, d, ctl)) continue;
    const double eta = d.max_omega() * std::ceil((Td / 2.0) / static_cast<double>(p));
    if (eta < chosen_eta) {
      chosen = std::move(d);
      chosen_eta = eta;
    }
    if (chosen_eta <= eta_target) break;
  }
  // no window forgets the position well enough for even a short range to be certified
  if (chosen.omega.empty() || !(chosen.max_omega() < kUsableOmega)) return plan;
  return with_reps(spec, std::move(chosen));
}

}  // namespace puffer::models
