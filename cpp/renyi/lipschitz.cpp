// Renyi shift divergence of a user density certified from a log-Lipschitz constant
// (|log p(x) - log p(y)| <= L |x - y|), for densities whose structure is not declared.
//
// J - 1 = int g, g(x) = e^{a} psi(s), a = log p(x - u), b = log p(x), s = a - b, psi the
// non-negative convex Jensen form (log_terms.hpp; KL alike). Between two nodes x_i < x_j at
// distance h, a is L-Lipschitz and s is 2L-Lipschitz, so on [x_i, x_j]
//   a <= (a_i + a_j + L h) / 2,   s in [(s_i + s_j)/2 - L h, (s_i + s_j)/2 + L h],
// and, psi being convex with its minimum 0 at s = 0, g <= e^{that a} max(psi(ends of that range)):
// h times this bounds the piece's integral. The sum over a window is refined where it exceeds
// the trapezoid rule most, until the two give divergences within rtol (first order in h: the
// price of knowing nothing but L). An adaptive Gauss-Kronrod rule has no such certificate: on
// e^{-|x|} (1 + 0.9 cos 20x) it returned 1.681 for a divergence of 1.745 (it never sampled the
// comb's peaks between its nodes).
//
// The window grows until g at its outer eighths (sampled at the nodes) is e^-40 below its
// largest value; beyond it the two tails are integrated by the log-space Gauss-Kronrod rule
// (logquad.hpp), an error estimate rather than a bound -- they hold a fraction e^-40 of J - 1
// unless the density has structure far away, which L cannot reveal (declare it as breakpoints).
// Every pair of neighbouring nodes checks the claim on p at x and x - u; a violation is an error.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "common/errors.hpp"
#include "renyi/log_terms.hpp"
#include "renyi/logquad.hpp"
#include "renyi/renyi.hpp"

namespace puffer::renyi {
namespace {

using namespace detail;

struct Evaluator {
  const LogPdfBatch& lp;
  double u, L;
  std::vector<double> buf, vals;

  // a = log p(x - u), b = log p(x) at the n points x
  void eval(const double* x, std::size_t n, double* a, double* b) {
    buf.resize(2 * n);
    vals.resize(2 * n);
    for (std::size_t i = 0; i < n; ++i) { buf[i] = x[i] - u; buf[n + i] = x[i]; }
    lp(buf.data(), 2 * n, vals.data());
    for (std::size_t i = 0; i < 2 * n; ++i) {
      const double v = vals[i];
      if (std::isnan(v) || v == kInf)
        throw InvalidArgument("logpdf", "returned " + to_str(v) + " at x = " + to_str(buf[i]),
                              "finite log-density values");
      if (v == -kInf)
        throw InvalidArgument("log_lipschitz", to_str(L),
                              "a density that is positive everywhere (log p is L-Lipschitz), but p(" + to_str(buf[i]) +
                                  ") = 0");
    }
    std::copy(vals.begin(), vals.begin() + static_cast<std::ptrdiff_t>(n), a);
    std::copy(vals.begin() + static_cast<std::ptrdiff_t>(n), vals.end(), b);
  }
};

// The claim |log p(x1) - log p(x2)| <= L |x1 - x2| at a pair of nodes (with the rounding of the
// user's values and of x1 - x2 allowed for).
void check_claim(double L, double x1, double x2, double v1, double v2) {
  const double h = x2 - x1;
  const double tol = 64.0 * kEps * (std::fabs(v1) + std::fabs(v2) + 1.0) + 4.0 * kEps * L * (std::fabs(x1) + std::fabs(x2));
  if (std::fabs(v2 - v1) > L * h * (1.0 + 1e-9) + tol)
    throw InvalidArgument("log_lipschitz", to_str(L),
                          "a bound on |d/dx log p| (your claim, checked wherever p is evaluated): |log p(" + to_str(x2) +
                              ") - log p(" + to_str(x1) + ")| / " + to_str(h) + " = " + to_str(std::fabs(v2 - v1) / h));
}

inline double log_core(double beta, bool kl, double s) { return kl ? log_kl_core(s) : log_psi(beta, s); }

double logsumexp(const std::vector<double>& v) {
  double m = -kInf;
  for (double x : v) m = std::max(m, x);
  if (!(m > -kInf) || m == kInf) return m;
  double s = 0.0;
  for (double x : v) s += std::exp(x - m);
  return m + std::log(s);
}

// Gauss-Kronrod on a tail [x0, +-inf): t >= 0, x = x0 + dir t.
struct TailFn {
  Evaluator& ev;
  double x0, dir, beta;
  bool kl;
  mutable std::vector<double> xs, a, b;
  void operator()(const double* t, std::size_t n, double* out) const {
    xs.resize(n);
    a.resize(n);
    b.resize(n);
    for (std::size_t i = 0; i < n; ++i) xs[i] = x0 + dir * t[i];
    ev.eval(xs.data(), n, a.data(), b.data());
    for (std::size_t i = 0; i < n; ++i) out[i] = jensen_log(a[i], b[i], beta, kl);
  }
};

}  // namespace

double custom_shift_divergence_lipschitz(const LogPdfBatch& logpdf, double alpha, double u, double L,
                                         double scale_hint, const double* breaks, std::size_t n_breaks, double rtol,
                                         std::size_t max_nodes) {
  require(alpha >= 1.0 && std::isfinite(alpha), "alpha", alpha, "a finite Renyi order >= 1 for a user density");
  require(!std::isnan(u), "u", u, "a standardized shift (inf: beyond the float range)");
  require(L > 0.0 && std::isfinite(L), "log_lipschitz", L, "a finite bound L > 0 on |d/dx log p|");
  require(rtol > 0.0 && rtol < 1.0, "rtol", rtol, "a relative tolerance in (0, 1)");
  if (u == 0.0) return 0.0;
  if (std::isinf(u)) return kInf;
  const bool kl = (alpha == 1.0);
  const double beta = alpha - 1.0;
  Evaluator ev{logpdf, u, L, {}, {}};

  // initial window: the declared structure, 0 and u, and a margin of the density's width (at
  // least 1/L: log p moves by at most 1 over it)
  double lo = std::min(0.0, u), hi = std::max(0.0, u);
  for (std::size_t i = 0; i < n_breaks; ++i) {
    require(std::isfinite(breaks[i]), "breakpoints", breaks[i], "finite breakpoints");
    lo = std::min({lo, breaks[i], breaks[i] + u});
    hi = std::max({hi, breaks[i], breaks[i] + u});
  }
  const double margin0 = std::max({4.0 * (scale_hint > 0 ? scale_hint : 1.0), 16.0 / L, 0.25 * (hi - lo)});
  lo -= margin0;
  hi += margin0;

  // nodes (x, a = log p(x - u), b = log p(x), g = log of the integrand) and, per gap between
  // neighbours, lU = log of the certified bound on its integral and lT = the trapezoid rule's
  struct Node { double x, a, b, g; };
  std::vector<Node> nd;
  std::vector<double> lU, lT;  // logs, and the same as exp(. - ref) (sums without an exp per gap and round)
  std::vector<double> eU, eT;
  double ref = -kInf;
  auto relin = [&](double newref) {  // moves the reference of eU, eT (a far larger value appeared)
    for (std::size_t k = 0; k < lU.size(); ++k) { eU[k] = std::exp(lU[k] - newref); eT[k] = std::exp(lT[k] - newref); }
    ref = newref;
  };
  auto gap = [&](std::size_t i, double& u_out, double& t_out) {
    const Node& p = nd[i];
    const Node& q = nd[i + 1];
    const double h = q.x - p.x;
    const double ha = (q.x - u) - (p.x - u);  // the distance p was evaluated at for a
    check_claim(L, p.x - u, q.x - u, p.a, q.a);
    check_claim(L, p.x, q.x, p.b, q.b);
    const double hL = L * std::max(h, ha) * (1.0 + 4.0 * kEps);
    // the tents' peaks, never below the end values (check_claim lets the user's rounding through)
    const double s0 = p.a - p.b, s1 = q.a - q.b, sm = 0.5 * (s0 + s1);
    const double slo = std::min({sm - hL, s0, s1}), shi = std::max({sm + hL, s0, s1});
    const double core = std::max(log_core(beta, kl, slo), log_core(beta, kl, shi));
    u_out = std::log(h) + std::max(0.5 * (p.a + q.a + hL), std::max(p.a, q.a)) + core;
    const double gm = std::max(p.g, q.g);
    t_out = gm == -kInf ? -kInf : std::log(0.5 * h) + gm + std::log1p(std::exp(std::min(p.g, q.g) - gm));
  };
  // merges new abscissae (evaluated in one batch) and recomputes the gaps next to them
  auto merge = [&](std::vector<double> xn) {
    std::sort(xn.begin(), xn.end());
    std::vector<double> an(xn.size()), bn(xn.size());
    ev.eval(xn.data(), xn.size(), an.data(), bn.data());
    std::vector<Node> m;
    std::vector<long> old;  // index in the previous node list, -1 for a new node
    m.reserve(nd.size() + xn.size());
    old.reserve(nd.size() + xn.size());
    std::size_t i = 0, j = 0;
    while (i < nd.size() || j < xn.size()) {
      if (j == xn.size() || (i < nd.size() && nd[i].x < xn[j])) { m.push_back(nd[i]); old.push_back(static_cast<long>(i)); ++i; }
      else if (i < nd.size() && nd[i].x == xn[j]) { ++j; }
      else {
        m.push_back({xn[j], an[j], bn[j], an[j] + log_core(beta, kl, an[j] - bn[j])});
        old.push_back(-1);
        ++j;
      }
    }
    const std::size_t ng = m.size() - 1;
    std::vector<double> nU(ng), nT(ng), neU(ng), neT(ng);
    nd.swap(m);
    double top = -kInf;
    for (std::size_t k = 0; k < ng; ++k) {
      if (old[k] >= 0 && old[k + 1] == old[k] + 1) {
        const std::size_t o = static_cast<std::size_t>(old[k]);
        nU[k] = lU[o]; nT[k] = lT[o]; neU[k] = eU[o]; neT[k] = eT[o];
      } else {
        gap(k, nU[k], nT[k]);
        neU[k] = -1.0;  // computed below, against the reference
        top = std::max(top, nU[k]);
      }
    }
    lU.swap(nU); lT.swap(nT); eU.swap(neU); eT.swap(neT);
    if (top > ref + 600.0 || ref == -kInf) relin(top);  // (also the first call)
    else
      for (std::size_t k = 0; k < ng; ++k)
        if (eU[k] < 0.0) { eU[k] = std::exp(lU[k] - ref); eT[k] = std::exp(lT[k] - ref); }
  };
  auto uniform = [&](double from, double to, std::size_t n, bool open_left, bool open_right) {
    std::vector<double> xs;
    const double step = (to - from) / static_cast<double>(n);
    for (std::size_t i = open_left ? 1 : 0; i <= (open_right ? n - 1 : n); ++i) xs.push_back(from + step * static_cast<double>(i));
    return xs;
  };
  auto grow = [&](bool left, bool right) {
    const double w = hi - lo;
    if (!(w < 1e300)) throw NumericalFailure("lipschitz certificate: the integrand does not decay (u=" + to_str(u) + ")");
    if (nd.size() > max_nodes)
      throw NumericalFailure("lipschitz certificate: window still growing at " + to_str(nd.size()) + " nodes");
    std::vector<double> xn;
    if (left) { xn = uniform(lo - w, lo, 512, false, true); lo -= w; }
    if (right) { std::vector<double> xr = uniform(hi, hi + w, 512, true, false); xn.insert(xn.end(), xr.begin(), xr.end()); hi += w; }
    merge(xn);
  };
  auto node_max = [&]() {
    double M = -kInf;
    for (const Node& q : nd) M = std::max(M, q.g);
    if (!(M > -kInf)) throw NumericalFailure("lipschitz certificate: integrand vanished at u=" + to_str(u));
    return M;
  };
  {
    // the declared structure (and its image under the shift) is sampled from the start
    std::vector<double> x0 = uniform(lo, hi, 1024, false, false);
    for (std::size_t i = 0; i < n_breaks; ++i) x0.insert(x0.end(), {breaks[i], breaks[i] + u});
    std::sort(x0.begin(), x0.end());
    x0.erase(std::unique(x0.begin(), x0.end()), x0.end());
    merge(x0);
  }
  // grow the window until g's node values at its outer eighths are e^-40 below the largest
  for (int it = 0; it < 200; ++it) {
    const double M = node_max(), e8 = 0.125 * (hi - lo);
    double ml = -kInf, mr = -kInf;
    for (const Node& q : nd) {
      if (q.x <= lo + e8) ml = std::max(ml, q.g);
      if (q.x >= hi - e8) mr = std::max(mr, q.g);
    }
    if (!(ml > M - 40.0) && !(mr > M - 40.0)) break;
    grow(ml > M - 40.0, mr > M - 40.0);
  }

  auto D_of = [&](double logX) { return kl ? std::exp(logX) : softplus(logX) / beta; };
  // log X with D_of(log X) = D_of(LT) (1 + rtol): the bound the window may reach
  auto target = [&](double LT) {
    if (kl) return LT + std::log1p(rtol);
    const double y = softplus(LT) * (1.0 + rtol);
    return y > 30.0 ? y + std::log1p(-std::exp(-y)) : std::log(std::expm1(y));
  };
  double LU = kInf;
  bool done = false;
  for (int round = 0; round < 400 && !done; ++round) {
    double top = -kInf;
    for (double v : lU) top = std::max(top, v);
    if (top < ref - 300.0) relin(top);  // the bounds came down (refined): keep the sums representable
    double sU = 0.0, sT = 0.0;
    for (std::size_t k = 0; k < eU.size(); ++k) { sU += eU[k]; sT += eT[k]; }
    LU = ref + std::log(sU);
    const double LT = ref + std::log(sT);
    if (std::isnan(LU) || LU == kInf) {  // +inf bounds (p(x - u) / p(x) beyond the float range)
      for (double v : lU) if (v == kInf) return kInf;
    }
    if (LU == kInf) return kInf;
    if (!(LU > -kInf)) throw NumericalFailure("lipschitz certificate: integrand vanished at u=" + to_str(u));
    const std::size_t n = nd.size();
    // out of nodes: the sum as it stands is still an upper bound (looser than rtol), returned
    // unless the window is too small to hold the integrand
    const bool out_of_nodes = n >= max_nodes;
    if (D_of(LU) <= D_of(LT) * (1.0 + rtol) || out_of_nodes) {
      // converged on the window; its outer eighths must be certified e^-30 below the largest
      // value (a tooth of a comb between coarse nodes there would sit just inside the tails)
      const double M = node_max(), e8 = 0.125 * (hi - lo);
      std::vector<double> xn;
      bool high_l = false, high_r = false;
      for (std::size_t i = 0; i + 1 < n; ++i) {
        const bool l = nd[i + 1].x <= lo + e8, r = nd[i].x >= hi - e8;
        if (!l && !r) continue;
        if (std::max(nd[i].g, nd[i + 1].g) > M - 40.0) (l ? high_l : high_r) = true;
        if (lU[i] - std::log(nd[i + 1].x - nd[i].x) > M - 30.0) xn.push_back(0.5 * (nd[i].x + nd[i + 1].x));
      }
      if (high_l || high_r) {
        if (out_of_nodes)
          throw NumericalFailure("lipschitz certificate: " + to_str(n) + " nodes and the window still grows at u=" +
                                 to_str(u) + " (declare the density's structure: breakpoints)");
        grow(high_l, high_r);
        continue;
      }
      if (xn.empty() || out_of_nodes || n + xn.size() > max_nodes) { done = true; break; }
      merge(xn);
      continue;
    }
    // split every gap whose excess over the trapezoid rule is above its share of what the
    // tolerance allows (at most doubling the nodes)
    const double allowed = std::max(std::exp(target(LT) - ref) - sT, 0.0);  // in units of e^ref
    const double theta = 0.5 * allowed / static_cast<double>(n - 1);
    std::vector<double> xn;
    const std::size_t cap = max_nodes - n;
    for (std::size_t i = 0; i + 1 < n && xn.size() < cap; ++i) {
      if (!(eU[i] - eT[i] > theta)) continue;
      const double mid = 0.5 * (nd[i].x + nd[i + 1].x);
      if (mid > nd[i].x && mid < nd[i + 1].x) xn.push_back(mid);
    }
    if (xn.empty()) { done = true; break; }  // gaps at floating-point resolution: the bound as it stands
    merge(xn);
  }
  if (!done) throw NumericalFailure("lipschitz certificate: no convergence at u=" + to_str(u));

  // the tails beyond the window (Gauss-Kronrod, an estimate: they hold ~e^-40 of the total)
  double logT[2];
  for (int side = 0; side < 2; ++side) {
    TailFn f{ev, side == 0 ? hi : lo, side == 0 ? 1.0 : -1.0, beta, kl, {}, {}, {}};
    LogQuadOptions opt;
    opt.half_line = true;
    opt.scale_hint = 0.125 * (hi - lo);
    LogQuadResult r = integrate_log(f, {}, opt);
    if (r.unbounded) return kInf;
    logT[side] = (r.Q + r.err > 0.0) ? r.M + std::log(r.Q + r.err) : -kInf;
  }
  const double logJ = logsumexp({LU, logT[0], logT[1]});
  double mag = 0.0;
  for (const Node& q : nd) mag = std::max(mag, std::fabs(q.a) + alpha * std::fabs(q.a - q.b));
  // rounding: each gap's bound is a few operations on terms up to mag; the sum is over n terms
  const double margin = 1e-12 + 64.0 * kEps * (mag + std::fabs(logJ) + 40.0) + 4.0 * kEps * static_cast<double>(nd.size());
  return finish_divergence(logJ + margin, kl, beta);
}


// ---- hockey-stick divergence certified from L ------------------------------------------------
//
// H = int (P(x) - c Q(x))_+ dx, P(x) = p(x - u), Q(x) = p(x), c = e^eps. Between two nodes at
// distance h, P lies under its tent min(P_0 e^{L t}, P_1 e^{L (h - t)}) and Q above its valley
// max(Q_0 e^{-L t}, Q_1 e^{-L (h - t)}) (t from the left node): the integral of (tent - c valley)_+
// over the gap, exact (both are single exponentials e^{+-L t} between at most two breaks, and the
// difference of two exponentials changes sign at most once), bounds the gap's part of H from above.
// The mirrored pair (P's valley, Q's tent) bounds it from below; gaps are halved where the two
// differ most until sum(upper) - sum(lower) <= rtol sum(lower) + atol (or the node budget is spent:
// the upper sum is returned as it stands, still a bound).
namespace {

// int_{s0}^{s1} e^{A + sg L t} dt (s0 <= s1)
inline double exp_int(double A, int sg, double L, double s0, double s1) {
  if (!(s1 > s0)) return 0.0;
  const double d = s1 - s0;
  const double e0 = std::exp(A + sg * L * s0);
  if (!(e0 > 0.0)) return 0.0;
  return e0 * (sg > 0 ? std::expm1(L * d) : -std::expm1(-L * d)) / L;
}

// int_{s0}^{s1} (e^{A + sf L t} - e^{B + sg L t})_+ dt, and (E) the integral of the first term over
// the region where the difference is counted (the scale of the cancellation error)
double diff_pos(double A, int sf, double B, int sg, double L, double s0, double s1, double& E) {
  E = 0.0;
  if (!(s1 > s0) || A == -kInf) return 0.0;
  if (B == -kInf) { E = exp_int(A, sf, L, s0, s1); return E; }
  if (sf == sg) {
    if (!(A > B)) return 0.0;
    E = exp_int(A, sf, L, s0, s1);
    return -std::expm1(B - A) * E;
  }
  const double tc = (B - A) / (2.0 * L * sf);  // the crossing: A + sf L t = B + sg L t
  double a = s0, b = s1;
  if (sf > 0) a = std::max(s0, tc); else b = std::min(s1, tc);
  if (!(b > a)) return 0.0;
  E = exp_int(A, sf, L, a, b);
  return std::max(E - exp_int(B, sg, L, a, b), 0.0);
}

// the log of a tent (up = true: min of the rising line from the left and the falling one from the
// right) or valley (max of the falling line from the left and the rising one from the right) of
// slope L on [0, h] through v0 and v1, as pieces (A, sign) on [0, brk] and [brk, h]
struct Lines { double A0; int s0; double A1; int s1; double brk; };
inline Lines tent_or_valley(double v0, double v1, double L, double h, bool up) {
  Lines r;
  if (up) { r.A0 = v0; r.s0 = +1; r.A1 = v1 + L * h; r.s1 = -1; r.brk = (v1 - v0 + L * h) / (2.0 * L); }
  else { r.A0 = v0; r.s0 = -1; r.A1 = v1 - L * h; r.s1 = +1; r.brk = (v0 - v1 + L * h) / (2.0 * L); }
  if (v0 == -kInf) { r.brk = up ? 0.0 : h; }
  if (v1 == -kInf) { r.brk = up ? h : 0.0; }
  r.brk = std::min(std::max(r.brk, 0.0), h);
  return r;
}

// int over [0, h] of (F - G)_+, F and G given as Lines; E: the integral of F where counted
double gap_integral(const Lines& F, const Lines& G, double L, double h, double& E) {
  double cuts[4] = {0.0, std::min(F.brk, G.brk), std::max(F.brk, G.brk), h};
  double tot = 0.0;
  E = 0.0;
  for (int k = 0; k < 3; ++k) {
    const double s0 = cuts[k], s1 = cuts[k + 1];
    if (!(s1 > s0)) continue;
    const double mid = 0.5 * (s0 + s1);
    const bool fl = mid < F.brk, gl = mid < G.brk;
    double e;
    tot += diff_pos(fl ? F.A0 : F.A1, fl ? F.s0 : F.s1, gl ? G.A0 : G.A1, gl ? G.s0 : G.s1, L, s0, s1, e);
    E += e;
  }
  return tot;
}

// P = p(x - u) on a tail [x0, +-inf) (t >= 0, x = x0 + dir t)
struct TailP {
  Evaluator& ev;
  double x0, dir;
  mutable std::vector<double> xs, a, b;
  void operator()(const double* t, std::size_t n, double* out) const {
    xs.resize(n);
    a.resize(n);
    b.resize(n);
    for (std::size_t i = 0; i < n; ++i) xs[i] = x0 + dir * t[i];
    ev.eval(xs.data(), n, a.data(), b.data());
    for (std::size_t i = 0; i < n; ++i) out[i] = a[i];
  }
};

}  // namespace

double custom_hockey_stick_lipschitz(const LogPdfBatch& logpdf, double eps, double u, double L, double scale_hint,
                                     const double* breaks, std::size_t n_breaks, double rtol, double atol,
                                     std::size_t max_nodes, HockeyCertificate* info) {
  require(eps >= 0.0 && !std::isnan(eps), "eps", eps, "eps >= 0 (inf allowed)");
  require(!std::isnan(u), "u", u, "a standardized shift (inf: beyond the float range)");
  require(L > 0.0 && std::isfinite(L), "log_lipschitz", L, "a finite bound L > 0 on |d/dx log p|");
  require(rtol > 0.0 && rtol < 1.0, "rtol", rtol, "a relative tolerance in (0, 1)");
  require(atol >= 0.0 && std::isfinite(atol), "atol", atol, "an absolute tolerance >= 0");
  if (u == 0.0 || std::isinf(eps)) return 0.0;
  if (std::isinf(u)) return kInf;
  Evaluator ev{logpdf, u, L, {}, {}};

  double lo = std::min(0.0, u), hi = std::max(0.0, u);
  for (std::size_t i = 0; i < n_breaks; ++i) {
    require(std::isfinite(breaks[i]), "breakpoints", breaks[i], "finite breakpoints");
    lo = std::min({lo, breaks[i], breaks[i] + u});
    hi = std::max({hi, breaks[i], breaks[i] + u});
  }
  const double margin0 = std::max({4.0 * (scale_hint > 0 ? scale_hint : 1.0), 16.0 / L, 0.25 * (hi - lo)});
  lo -= margin0;
  hi += margin0;

  struct Node { double x, a, b; };  // a = log P(x) = log p(x - u), b = log Q(x) = log p(x)
  std::vector<Node> nd;
  std::vector<double> gU, gL;  // per gap: upper and lower bounds on its part of H
  // the bounds of the gap between nd[i] and nd[i + 1]
  auto gap = [&](std::size_t i, double& up, double& low) {
    const Node& p = nd[i];
    const Node& q = nd[i + 1];
    const double h = q.x - p.x;
    const double ha = (q.x - u) - (p.x - u);
    check_claim(L, p.x - u, q.x - u, p.a, q.a);
    check_claim(L, p.x, q.x, p.b, q.b);
    const double hh = std::max(h, ha);
    const double Lu = L * (1.0 + 8.0 * kEps);
    // rounding of the exponents (a, b, eps, L t): P moved up, Q down by eta (upper bound)
    const double eta = 16.0 * kEps * (std::fabs(p.a) + std::fabs(q.a) + std::fabs(p.b) + std::fabs(q.b) + eps + L * hh + 1.0) +
                       4.0 * kEps * L * (std::fabs(p.x) + std::fabs(q.x) + std::fabs(u));
    double E;
    const Lines Pt = tent_or_valley(p.a + eta, q.a + eta, Lu, hh, true);
    const Lines Qv = tent_or_valley(p.b + eps - eta, q.b + eps - eta, Lu, hh, false);
    const double raw = gap_integral(Pt, Qv, Lu, hh, E);
    up = raw * (1.0 + 16.0 * kEps) + 16.0 * kEps * E;
    const Lines Pv = tent_or_valley(p.a, q.a, L, h, false);
    const Lines Qt = tent_or_valley(p.b + eps, q.b + eps, L, h, true);
    low = gap_integral(Pv, Qt, L, h, E);
  };
  auto merge = [&](std::vector<double> xn) {
    std::sort(xn.begin(), xn.end());
    std::vector<double> an(xn.size()), bn(xn.size());
    ev.eval(xn.data(), xn.size(), an.data(), bn.data());
    std::vector<Node> m;
    std::vector<long> old;
    m.reserve(nd.size() + xn.size());
    old.reserve(nd.size() + xn.size());
    std::size_t i = 0, j = 0;
    while (i < nd.size() || j < xn.size()) {
      if (j == xn.size() || (i < nd.size() && nd[i].x < xn[j])) { m.push_back(nd[i]); old.push_back(static_cast<long>(i)); ++i; }
      else if (i < nd.size() && nd[i].x == xn[j]) { ++j; }
      else { m.push_back({xn[j], an[j], bn[j]}); old.push_back(-1); ++j; }
    }
    const std::size_t ng = m.size() - 1;
    std::vector<double> nU(ng), nL(ng);
    nd.swap(m);
    for (std::size_t k = 0; k < ng; ++k) {
      if (old[k] >= 0 && old[k + 1] == old[k] + 1) {
        const std::size_t o = static_cast<std::size_t>(old[k]);
        nU[k] = gU[o]; nL[k] = gL[o];
      } else {
        gap(k, nU[k], nL[k]);
      }
    }
    gU.swap(nU); gL.swap(nL);
  };
  auto uniform = [&](double from, double to, std::size_t n, bool open_left, bool open_right) {
    std::vector<double> xs;
    const double step = (to - from) / static_cast<double>(n);
    for (std::size_t i = open_left ? 1 : 0; i <= (open_right ? n - 1 : n); ++i) xs.push_back(from + step * static_cast<double>(i));
    return xs;
  };
  {
    std::vector<double> x0 = uniform(lo, hi, 1024, false, false);
    for (std::size_t i = 0; i < n_breaks; ++i) x0.insert(x0.end(), {breaks[i], breaks[i] + u});
    std::sort(x0.begin(), x0.end());
    x0.erase(std::unique(x0.begin(), x0.end()), x0.end());
    merge(x0);
  }
  // grow the window until P's node values at its outer eighths are e^-40 below its largest
  for (int it = 0;; ++it) {
    double M = -kInf, ml = -kInf, mr = -kInf;
    const double e8 = 0.125 * (hi - lo);
    for (const Node& q : nd) {
      M = std::max(M, q.a);
      if (q.x <= lo + e8) ml = std::max(ml, q.a);
      if (q.x >= hi - e8) mr = std::max(mr, q.a);
    }
    const bool gl = ml > M - 40.0, gr = mr > M - 40.0;
    if (!gl && !gr) break;
    const double w = hi - lo;
    if (it >= 200 || !(w < 1e300) || nd.size() > max_nodes)
      throw NumericalFailure("lipschitz certificate (hockey stick): the density does not decay within " +
                             to_str(nd.size()) + " nodes (u=" + to_str(u) + ")");
    std::vector<double> xn;
    if (gl) { xn = uniform(lo - w, lo, 512, false, true); lo -= w; }
    if (gr) { std::vector<double> xr = uniform(hi, hi + w, 512, true, false); xn.insert(xn.end(), xr.begin(), xr.end()); hi += w; }
    merge(xn);
  }
  double SU = 0.0, SL = 0.0;
  for (int round = 0; round < 2000; ++round) {
    SU = 0.0; SL = 0.0;
    for (std::size_t k = 0; k < gU.size(); ++k) { SU += gU[k]; SL += gL[k]; }
    const double allowed = rtol * SL + atol;
    if (SU - SL <= allowed || nd.size() >= max_nodes) break;
    // halve every gap whose excess is above its share of the allowance (and the largest one)
    const double theta = 0.5 * allowed / static_cast<double>(gU.size());
    std::size_t top = 0;
    for (std::size_t k = 0; k < gU.size(); ++k) if (gU[k] - gL[k] > gU[top] - gL[top]) top = k;
    std::vector<double> xn;
    const std::size_t cap = max_nodes - nd.size();
    for (std::size_t k = 0; k < gU.size() && xn.size() < cap; ++k) {
      if (!(gU[k] - gL[k] > theta) && k != top) continue;
      const double mid = 0.5 * (nd[k].x + nd[k + 1].x);
      if (mid > nd[k].x && mid < nd[k + 1].x) xn.push_back(mid);
    }
    if (xn.empty()) break;  // gaps at floating-point resolution: the bound as it stands
    merge(xn);
  }
  // the tails of P beyond the window (Gauss-Kronrod with its error estimate: P is e^-40 below its
  // largest value there; they bound the tails' part of H)
  double tails = 0.0;
  for (int side = 0; side < 2; ++side) {
    TailP f{ev, side == 0 ? hi : lo, side == 0 ? 1.0 : -1.0, {}, {}, {}};
    LogQuadOptions opt;
    opt.half_line = true;
    opt.scale_hint = 0.125 * (hi - lo);
    LogQuadResult r = integrate_log(f, {}, opt);
    if (r.unbounded) return kInf;
    if (r.Q + r.err > 0.0) tails += std::exp(r.M + std::log(r.Q + r.err) + 1e-12 + 64.0 * kEps * (std::fabs(r.M) + 40.0));
  }
  // rounding of the sum over the gaps (n terms, each rounded up relative 16 eps)
  const double n = static_cast<double>(gU.size());
  double D = (SU + tails) * (1.0 + (n + 8.0) * kEps) + std::numeric_limits<double>::denorm_min();
  if (info) { info->upper = SU; info->lower = SL; info->tails = tails; info->nodes = nd.size(); }
  return D;
}

}  // namespace puffer::renyi
