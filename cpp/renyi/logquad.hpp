// Log-space adaptive Gauss–Kronrod quadrature of exp(L(y)) over [0, inf) or (-inf, inf).
//
// Used by the Renyi kernel (Pierquin et al. 2024; the peers' published tests "quadrature pitfalls"):
//   1. locate the maximum M of the log-integrand L first (geometric scan + golden section
//      until the bracket is narrower than the peak), so exp(L - M) never overflows
//      (alpha = 1e4, tiny scales) and no mass is missed far from the origin (pitfall 2: the
//      Gaussian peak at x = alpha v);
//   2. split at the peak, at kinks (Laplace / generalized Gaussian: the shifted kink, with a
//      y = kink +- w t^2 map on the adjacent pieces), and at y* +- w (3^i - 1)/2 (w = distance
//      at which L drops by 1) until L < M - drop; map what is left beyond the outermost
//      breakpoints by y = a +- w t/(1 - t) (also [0, a] on the half line, so that nodes crowd
//      toward a, where the mass sits);
//   3. adaptive G10/K21 on a global priority of pieces until the summed error estimate is
//      <= rtol * integral (or at the rounding-noise floor of L when M is huge).
// The returned error is the sum of |K21 - G10| over pieces (the error of the *lower* order
// rule, which overestimates the K21 error whenever the rule resolves the integrand) plus a
// roundoff allowance of 64 eps * L1; the integral is exp(M) * (Q +- err). This is an
// a-posteriori estimate, not an interval enclosure: it is sound for integrands the rule
// resolves (smooth, unimodal between breakpoints — the shipped families), which the tests
// check against 50-digit mpmath.
//
// L is a functor `void operator()(const double* y, std::size_t n, double* out) const`
// (batched, so a Python callback pays one call per 21 nodes). L may return -inf; NaN is
// reported by the functor itself (it throws); +inf or a maximum running off to |y| = 1e300
// sets `unbounded`.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <functional>
#include <vector>

#include <boost/math/quadrature/gauss_kronrod.hpp>

#include "common/errors.hpp"

namespace puffer::renyi {

struct LogQuadResult {
  double M = -std::numeric_limits<double>::infinity();  // log shift
  double Q = 0.0;       // integral of exp(L - M)
  double err = 0.0;     // absolute error bound on Q
  double y_peak = 0.0;  // location of the maximum
  long n_eval = 0;
  // L grows without bound (toward |y| = 1e300 or +inf values): the integral is +inf as far as
  // double precision can tell; callers report an infinite divergence (the safe side).
  bool unbounded = false;
};

struct LogQuadOptions {
  bool half_line = true;      // [0, inf) if true, else (-inf, inf)
  double scale_hint = 1.0;    // typical length scale (centre of the geometric scan)
  double rtol = 5e-11;        // target relative error of Q (the bound, not the estimate)
  double drop = 14.0;         // build breakpoints until L < M - drop (the mapped tail takes the rest)
  int max_pieces = 600;
  // half line: the scan toward 0 stops here (an integrand largest at 0 need not be chased to 1e-300)
  double min_scan = 1e-300;
  double fail_rtol = 1e-6;    // if the error cannot be brought below this, fail
  // Absolute rounding error of L near the peak (the caller knows the size of the terms that
  // cancel inside L): error estimates below exp(noise) - 1 relative are noise, not signal.
  std::function<double(double)> noise_at;
};

namespace detail {

#ifndef PUFFER_GROWTH
#define PUFFER_GROWTH 3.0
#endif
#ifndef PUFFER_GK_POINTS
#define PUFFER_GK_POINTS 21
#endif
constexpr int kGK = PUFFER_GK_POINTS;

// Nodes and weights of the (N-1)/2-point Gauss / N-point Kronrod pair on [-1, 1] (from
// Boost.Math), expanded to all N nodes; wg = 0 at Kronrod-only nodes.
struct GKRule {
  std::array<double, kGK> x{}, wk{}, wg{};
  GKRule() {
    using GK = boost::math::quadrature::gauss_kronrod<double, kGK>;
    using G = boost::math::quadrature::gauss<double, (kGK - 1) / 2>;
    const auto& ax = GK::abscissa();  // non-negative nodes, ax[0] = 0
    const auto& w = GK::weights();
    const auto& gw = G::weights();
    const bool gauss_odd = (((kGK - 1) / 2) & 1) != 0;  // then 0 and even indices are Gauss nodes
    auto is_gauss = [&](std::size_t i) { return gauss_odd ? (i % 2 == 0) : (i % 2 == 1); };
    int k = 0;
    x[k] = 0.0; wk[k] = w[0]; wg[k] = (gauss_odd ? gw[0] : 0.0); ++k;
    for (std::size_t i = 1; i < ax.size(); ++i) {
      double g = is_gauss(i) ? gw[i / 2] : 0.0;
      x[k] = ax[i]; wk[k] = w[i]; wg[k] = g; ++k;
      x[k] = -ax[i]; wk[k] = w[i]; wg[k] = g; ++k;
    }
  }
};
inline const GKRule& gk21() {
  static const GKRule r;
  return r;
}

// A piece of the integration range in the variable t; y = map(t).
// map 0: y = t;  map +1: y = y0 + w t/(1-t) (t in [0,1));  map -1: y = y0 - w t/(1-t);
// map +2 / -2: y = y0 +- w t^2 (t in [0, 1], next to a kink at y0).
struct Piece {
  double ta, tb;
  int map;
  double y0, w;
  double K = 0, err = 0, L1 = 0;
  bool splittable = true;
};

}  // namespace detail

template <class F>
class LogIntegrator {
 public:
  LogIntegrator(const F& f, const LogQuadOptions& opt) : f_(f), opt_(opt) {}

  // Integrate exp(L) with the given kinks (points where L is not smooth).
  LogQuadResult run(const std::vector<double>& kinks) {
    locate_peak(kinks);
    if (unbounded_) {
      LogQuadResult r;
      r.unbounded = true;
      r.n_eval = n_eval_;
      return r;
    }
    if (!(M_ > -std::numeric_limits<double>::infinity())) {
      LogQuadResult r;
      r.M = M_;
      r.Q = 0.0;
      r.err = 0.0;
      r.n_eval = n_eval_;
      return r;  // integrand identically zero on the scan: the caller decides
    }
    build_pieces(kinks);
    if (unbounded_) {
      LogQuadResult r;
      r.unbounded = true;
      r.n_eval = n_eval_;
      return r;
    }
    double noise = opt_.noise_at ? opt_.noise_at(y_peak_) : 0.0;
    noise_rtol_ = std::max(opt_.rtol, 4.0 * noise + 16.0 * std::numeric_limits<double>::epsilon() * std::fabs(M_));
    adapt();
    LogQuadResult r;
    r.unbounded = unbounded_;
    r.M = M_;
    double Q = 0, E = 0, L1 = 0;
    for (const auto& p : pieces_) { Q += p.K; E += p.err; L1 += p.L1; }
    r.Q = Q;
    r.err = E + 64.0 * std::numeric_limits<double>::epsilon() * L1;
    r.y_peak = y_peak_;
    r.n_eval = n_eval_;
    return r;
  }

  double eval1(double y) {
    double out;
    f_(&y, 1, &out);
    ++n_eval_;
    return out;
  }

 private:
  const F& f_;
  LogQuadOptions opt_;
  double M_ = -std::numeric_limits<double>::infinity();
  double y_peak_ = 0.0;
  long n_eval_ = 0;
  bool unbounded_ = false;
  double noise_rtol_ = 0.0;
  std::vector<detail::Piece> pieces_;

  static constexpr double kInf = std::numeric_limits<double>::infinity();

  void consider(double y, double L) {
    if (L == kInf) unbounded_ = true;
    if (L > M_) { M_ = L; y_peak_ = y; }
  }

  // Geometric scan over |y| = s * 2^k, then golden-section refinement of the best bracket.
  void locate_peak(const std::vector<double>& kinks) {
    const double s = (opt_.scale_hint > 0 && std::isfinite(opt_.scale_hint)) ? opt_.scale_hint : 1.0;
    std::vector<double> ys;
    for (int k = -12; k <= 12; k += 2) ys.push_back(std::ldexp(s, k));
    for (double kk : kinks) if (kk > 0 && std::isfinite(kk)) ys.push_back(kk);
    if (!opt_.half_line) {
      std::size_t n = ys.size();
      for (std::size_t i = 0; i < n; ++i) ys.push_back(-ys[i]);
      for (double kk : kinks) if (kk <= 0 && std::isfinite(kk)) ys.push_back(kk);
      ys.push_back(0.0);
    }
    std::sort(ys.begin(), ys.end());
    ys.erase(std::unique(ys.begin(), ys.end()), ys.end());
    std::vector<double> Ls(ys.size());
    f_(ys.data(), ys.size(), Ls.data());
    n_eval_ += static_cast<long>(ys.size());
    // Extend the scan outwards while the maximum sits at an end of it.
    for (int iter = 0; iter < 2000; ++iter) {
      std::size_t j = std::max_element(Ls.begin(), Ls.end()) - Ls.begin();
      if (!(Ls[j] > -kInf)) break;
      if (j + 1 == ys.size()) {
        double y = ys.back() > 0 ? ys.back() * 2.0 : (ys.back() == 0 ? s : ys.back() / 2.0);
        if (!(std::fabs(y) < 1e300)) { unbounded_ = true; break; }
        ys.push_back(y); Ls.push_back(eval1(y));
        continue;
      }
      if (j == 0 && !opt_.half_line) {
        double y = ys.front() < 0 ? ys.front() * 2.0 : -s;
        if (!(std::fabs(y) < 1e300)) { unbounded_ = true; break; }
        ys.insert(ys.begin(), y); Ls.insert(Ls.begin(), eval1(y));
        continue;
      }
      if (j == 0 && opt_.half_line && ys.front() > opt_.min_scan) {
        double y = ys.front() / 64.0;
        ys.insert(ys.begin(), y); Ls.insert(Ls.begin(), eval1(y));
        continue;
      }
      break;
    }
    std::size_t j = std::max_element(Ls.begin(), Ls.end()) - Ls.begin();
    for (std::size_t i = 0; i < ys.size(); ++i) consider(ys[i], Ls[i]);
    if (!(M_ > -kInf)) return;
    double lo = j > 0 ? ys[j - 1] : (opt_.half_line ? 0.0 : ys[j] - std::fabs(ys[j]));
    double hi = j + 1 < ys.size() ? ys[j + 1] : ys[j] * 2.0;
    double flo = j > 0 ? Ls[j - 1] : eval1(lo);
    double fhi = j + 1 < ys.size() ? Ls[j + 1] : eval1(hi);
    // Golden section until the four bracket values agree to 0.25 (so the bracket is narrower
    // than the peak's width and, L being concave near its maximum, M_ is within ~0.1 of the
    // true maximum), or the bracket reaches floating-point resolution. The integrand is
    // unimodal near its maximum for the shipped families; for any other shape this only
    // affects speed, never the value (the pieces are refined adaptively).
    const double g = 0.6180339887498949;
    double c = hi - g * (hi - lo), d = lo + g * (hi - lo);
    double fc = eval1(c), fd = eval1(d);
    consider(c, fc); consider(d, fd);
    for (int it = 0; it < 300; ++it) {
      const double top = std::max(std::max(fc, fd), std::max(flo, fhi));
      const double bot = std::min(std::min(fc, fd), std::min(flo, fhi));
      if (top - bot < 0.25) break;
      if (!(hi - lo > 8.0 * std::numeric_limits<double>::epsilon() * std::max(std::fabs(lo), std::fabs(hi)))) break;
      if (fc >= fd) { hi = d; fhi = fd; d = c; fd = fc; c = hi - g * (hi - lo); fc = eval1(c); consider(c, fc); }
      else { lo = c; flo = fc; c = d; fc = fd; d = lo + g * (hi - lo); fd = eval1(d); consider(d, fd); }
    }
  }

  // Distance from the peak at which L first drops below M - 1 (binary search on a power of 2).
  double width(int dir, double limit) {
    const double s = std::max(std::fabs(y_peak_), opt_.scale_hint);
    int lo = -52, hi = 8;
    auto below = [&](int e) {
      double dy = std::ldexp(s, e);
      if (dy >= limit) return true;
      double L = eval1(y_peak_ + dir * dy);
      return L < M_ - 1.0;
    };
    while (!below(hi) && hi < 1100) hi += 8;
    if (below(lo)) return std::ldexp(s, lo);
    while (hi - lo > 1) {
      int mid = (lo + hi) / 2;
      if (below(mid)) hi = mid; else lo = mid;
    }
    return std::min(std::ldexp(s, hi), limit);
  }

  void add_finite(double a, double b) {
    if (b > a) pieces_.push_back(detail::Piece{a, b, 0, 0.0, 1.0});
  }

  void build_pieces(const std::vector<double>& kinks) {
    std::vector<double> pts{y_peak_};
    // right side
    double wr = width(+1, kInf);
    double step = wr;
    double right_end = y_peak_;
    for (int i = 0; i < 2000; ++i) {
      double y = y_peak_ + step;
      pts.push_back(y);
      right_end = y;
      if (eval1(y) < M_ - opt_.drop || !(y < 1e300)) break;
      step *= PUFFER_GROWTH;
    }
    double tail_w_r = std::max(right_end - y_peak_, 1e-300);
    // left side
    double left_end;
    bool left_tail = false;
    double tail_w_l = 0.0;
    double rest_end = 0.0, rest_w = 0.0;  // half line: [0, rest_end] mapped toward rest_end
    if (opt_.half_line) {
      double limit = y_peak_;
      double wl = y_peak_ > 0 ? width(-1, limit) : 0.0;
      step = wl;
      left_end = 0.0;
      double last = y_peak_;
      if (y_peak_ > 0) {
        for (int i = 0; i < 2000; ++i) {
          double y = y_peak_ - step;
          if (y <= 0.0) break;
          pts.push_back(y);
          last = y;
          if (eval1(y) < M_ - opt_.drop) break;
          step *= PUFFER_GROWTH;
        }
      }
      if (last > 0.0 && last < y_peak_) {
        // [0, last] is mapped like a tail, y = last - w t/(1-t), so that its nodes crowd
        // toward `last` where its mass sits: a plain piece [0, last] can be far longer than
        // the decay length at `last`, and Gauss-Kronrod would then see (and report) nothing.
        rest_end = last;
        rest_w = std::max(step / PUFFER_GROWTH, 1e-300);
      } else {
        pts.push_back(0.0);
      }
    } else {
      double wl = width(-1, kInf);
      step = wl;
      left_end = y_peak_;
      for (int i = 0; i < 2000; ++i) {
        double y = y_peak_ - step;
        pts.push_back(y);
        left_end = y;
        if (eval1(y) < M_ - opt_.drop || !(y > -1e300)) break;
        step *= PUFFER_GROWTH;
      }
      left_tail = true;
      tail_w_l = std::max(y_peak_ - left_end, 1e-300);
    }
    // Declared kinks beyond the region around the peak (a second mode, a distant spike) would
    // fall inside a mapped tail, whose nodes never look there: extend the finite region to
    // cover them, so each becomes a breakpoint with pieces anchored at it.
    {
      double kr = -kInf, kl = kInf;
      for (double k : kinks) {
        if (!std::isfinite(k)) continue;
        kr = std::max(kr, k);
        kl = std::min(kl, k);
      }
      // The stretch from the region's end to the kink keeps growing breakpoints (steps x
      // PUFFER_GROWTH): one plain piece far longer than the decay length there saw nothing of a
      // heavy tail (the Student-t hockey stick at nu = 3, u = 1e4, whose loss region ends at
      // y ~ 4e8: 2.1e-6 of mass missed with a zero error estimate).
      if (kr >= right_end && kr < 1e300) {
        for (double st = tail_w_r * PUFFER_GROWTH; right_end + st < kr; st *= PUFFER_GROWTH) pts.push_back(right_end + st);
        const double far = kr + std::max(tail_w_r, 1e-300);
        pts.push_back(far);
        right_end = far;
      }
      if (left_tail && kl <= left_end && kl > -1e300) {
        for (double st = tail_w_l * PUFFER_GROWTH; left_end - st > kl; st *= PUFFER_GROWTH) pts.push_back(left_end - st);
        const double far = kl - std::max(tail_w_l, 1e-300);
        pts.push_back(far);
        left_end = far;
      }
    }
    double lo_lim = opt_.half_line ? rest_end : left_end;
    for (double k : kinks)
      if (std::isfinite(k) && k > lo_lim && k < right_end) pts.push_back(k);
    std::sort(pts.begin(), pts.end());
    pts.erase(std::unique(pts.begin(), pts.end()), pts.end());
    std::vector<double> kk;
    for (double k : kinks)
      if (std::isfinite(k) && k > lo_lim && k < right_end) kk.push_back(k);
    auto is_kink = [&](double y) { return std::find(kk.begin(), kk.end(), y) != kk.end(); };
    for (std::size_t i = 0; i + 1 < pts.size(); ++i) {
      const double a = pts[i], b = pts[i + 1];
      if (!(b > a)) continue;
      // Next to a kink, y = kink +- (length) t^2 turns |y - kink|^beta into t^(2 beta):
      // much smoother for Gauss-Kronrod (the generalized Gaussian kink costs 3x less).
      if (is_kink(a)) pieces_.push_back(detail::Piece{0.0, 1.0, +2, a, b - a});
      else if (is_kink(b)) pieces_.push_back(detail::Piece{0.0, 1.0, -2, b, b - a});
      else add_finite(a, b);
    }
    if (rest_end > 0.0) {
      // Every kink inside [0, rest_end] stays a breakpoint: [kmax, rest_end] is mapped toward
      // rest_end; each gap between consecutive kinks, and [0, kmin], gets the t^2 map anchored
      // at its upper kink. (Keeping only the largest kink lost a declared spike below it: a
      // spike of the shifted density at y = u/2 was never sampled, 3.4e-5 under-reported.)
      std::vector<double> ks;
      for (double k : kinks)
        if (std::isfinite(k) && k > 0.0 && k < rest_end) ks.push_back(k);
      std::sort(ks.begin(), ks.end());
      ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
      const double kmax = ks.empty() ? 0.0 : ks.back();
      const double span = rest_end - kmax;
      const double tmax = span / (rest_w + span);  // y(tmax) = kmax
      pieces_.push_back(detail::Piece{0.0, tmax, -1, rest_end, rest_w});
      for (std::size_t i = ks.size(); i-- > 0;) {
        const double below = i > 0 ? ks[i - 1] : 0.0;
        pieces_.push_back(detail::Piece{0.0, 1.0, -2, ks[i], ks[i] - below});
      }
    }
    // tails in the mapped variable (split adaptively if they hold mass)
    pieces_.push_back(detail::Piece{0.0, 1.0, +1, right_end, tail_w_r});
    if (left_tail) pieces_.push_back(detail::Piece{0.0, 1.0, -1, left_end, tail_w_l});
    for (auto& p : pieces_) eval_piece(p);
  }

  void eval_piece(detail::Piece& p) {
    const auto& R = detail::gk21();
    const double mid = 0.5 * (p.ta + p.tb), half = 0.5 * (p.tb - p.ta);
    constexpr int N = detail::kGK;
    double ys[N], lj[N], L[N];
    for (int i = 0; i < N; ++i) {
      double t = mid + half * R.x[i];
      if (p.map == 0) { ys[i] = t; lj[i] = 0.0; }
      else if (p.map == 2 || p.map == -2) {  // y = y0 +- w t^2, dy = 2 w t dt
        ys[i] = p.y0 + (p.map > 0 ? 1.0 : -1.0) * p.w * t * t;
        lj[i] = std::log(2.0 * p.w * t);
      } else {
        double om = 1.0 - t;
        ys[i] = p.y0 + p.map * p.w * (t / om);
        lj[i] = std::log(p.w) - 2.0 * std::log(om);
      }
    }
    bool bad[N];
    for (int i = 0; i < N; ++i) {
      bad[i] = !(std::fabs(ys[i]) < 1e300);  // mapped node beyond the float range: weight 0
      if (bad[i]) ys[i] = 0.0;
    }
    f_(ys, N, L);
    n_eval_ += N;
    double lmax = -kInf;
    for (int i = 0; i < N; ++i) { L[i] = bad[i] ? -kInf : L[i] + lj[i]; lmax = std::max(lmax, L[i]); }
    if (lmax == kInf) { unbounded_ = true; lmax = M_; for (int i = 0; i < N; ++i) if (L[i] == kInf) L[i] = -kInf; }
    if (lmax > M_ + 300.0) rescale(lmax);
    double K = 0, G = 0, L1 = 0;
    for (int i = 0; i < N; ++i) {
      double v = std::exp(L[i] - M_);
      K += R.wk[i] * v;
      G += R.wg[i] * v;
      L1 += R.wk[i] * v;
    }
    p.K = K * half;
    p.err = std::fabs(K - G) * half;
    p.L1 = L1 * half;
    // a piece that can no longer be halved in floating point is final
    double m2 = 0.5 * (p.ta + p.tb);
    p.splittable = (m2 > p.ta && m2 < p.tb && half > 4 * std::numeric_limits<double>::epsilon() * std::fabs(mid));
  }

  // The scan missed a higher maximum (only possible for multimodal integrands): move the shift.
  void rescale(double newM) {
    double f = std::exp(M_ - newM);
    for (auto& q : pieces_) { q.K *= f; q.err *= f; q.L1 *= f; }
    M_ = newM;
  }

  void adapt() {
    const double eps = std::numeric_limits<double>::epsilon();
    for (int iter = 0; iter < 100000; ++iter) {
      if (unbounded_) return;
      double Q = 0, E = 0;
      std::size_t worst = 0;
      double worst_err = -1;
      for (std::size_t i = 0; i < pieces_.size(); ++i) {
        Q += pieces_[i].K;
        E += pieces_[i].err;
        if (pieces_[i].splittable && pieces_[i].err > worst_err) { worst_err = pieces_[i].err; worst = i; }
      }
      if (E <= noise_rtol_ * Q + 1e-300) return;
      if (worst_err <= 0 || worst_err <= 16 * eps * Q) break;  // remaining error is roundoff-level
      if (static_cast<int>(pieces_.size()) >= opt_.max_pieces) break;
      detail::Piece p = pieces_[worst];
      double m = 0.5 * (p.ta + p.tb);
      detail::Piece a = p, b = p;
      a.tb = m;
      b.ta = m;
      eval_piece(a);
      eval_piece(b);
      pieces_[worst] = a;
      pieces_.push_back(b);
    }
    double Q = 0, E = 0;
    for (const auto& p : pieces_) { Q += p.K; E += p.err; }
    if (unbounded_) return;
    if (!(E <= opt_.fail_rtol * Q) || !std::isfinite(Q)) {
      throw NumericalFailure("renyi quadrature: error estimate " + to_str(E) + " too large for integral " +
                             to_str(Q) + " (cannot certify the divergence)");
    }
  }
};

template <class F>
LogQuadResult integrate_log(const F& f, const std::vector<double>& kinks, const LogQuadOptions& opt) {
  LogIntegrator<F> I(f, opt);
  return I.run(kinks);
}

}  // namespace puffer::renyi
