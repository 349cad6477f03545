// Vector-valued adaptive Gauss–Kronrod quadrature of E_Q[f(Y)] for a standardized noise law Q
// (Laplace(0,1): q = e^{-|x|}/2, or N(0,1)) over a window [-L, L] with breakpoints.
//
// Used by the capacity-bounded solvers (Chaudhuri, Imola, Machanavajjhala 2019, Lemma 3): the
// integrands are |h|^r and sign(h)|h|^{r-1} x^j for polynomials h, which have kinks at the
// roots of h and at 0 (the Laplace density). The caller passes those as breakpoints; the mass
// beyond |x| > L is bounded analytically by the caller (see tail_moment) and added to the error.
// The returned error per component is the sum over pieces of |K21 - G10| (the error of the
// lower-order rule, an overestimate of the K21 error for resolved integrands) plus a roundoff
// allowance of 64 eps * L1 — the same a-posteriori standard as cpp/renyi/logquad.hpp.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include <boost/math/quadrature/gauss_kronrod.hpp>
#include <boost/math/special_functions/gamma.hpp>

#include "common/errors.hpp"

namespace puffer::capacity {

enum Noise : int { kGaussian = 0, kLaplace = 1 };

inline void check_noise(int noise) {
  require(noise == kGaussian || noise == kLaplace, "noise", noise, "0 (Gaussian) or 1 (Laplace)");
}

inline double density(int noise, double x) {
  static const double inv_sqrt_2pi = 0.39894228040143267794;
  return noise == kLaplace ? 0.5 * std::exp(-std::fabs(x)) : inv_sqrt_2pi * std::exp(-0.5 * x * x);
}

// log of an upper bound on E_Q[|Y|^m ; |Y| > L] (both tails), m >= 0, L >= 1.
inline double log_tail_moment(int noise, double m, double L) {
  // Laplace: int_L^inf x^m e^{-x} dx = Gamma(m+1, L); Gaussian: 2^{m/2} Gamma((m+1)/2, L^2/2)/sqrt(pi)
  const double a = noise == kLaplace ? m + 1.0 : 0.5 * (m + 1.0);
  const double x = noise == kLaplace ? L : 0.5 * L * L;
  const double pre = noise == kLaplace ? 0.0 : 0.5 * m * std::log(2.0) - 0.5 * std::log(M_PI);
  double lg;
  const double q = boost::math::gamma_q(a, x);
  if (q > 1e-280) {
    lg = std::lgamma(a) + std::log(q);
  } else if (x > a) {
    // Gamma(a, x) <= x^{a-1} e^{-x} / (1 - (a-1)/x) for x > a - 1
    lg = (a - 1.0) * std::log(x) - x - std::log1p(-std::max(a - 1.0, 0.0) / x);
  } else {
    throw NumericalFailure("capacity: quadrature window too small for the tail bound");
  }
  return pre + lg + 1e-12 * (1.0 + std::fabs(pre + lg));
}

// coefficient * E_Q[|Y|^m ; |Y| > L], computed in logs (0 if coef == 0).
inline double tail_bound(int noise, double log_coef, double m, double L) {
  if (log_coef == -std::numeric_limits<double>::infinity()) return 0.0;
  const double v = std::exp(log_coef + log_tail_moment(noise, m, L));
  if (!std::isfinite(v)) throw NumericalFailure("capacity: tail bound overflowed");
  return v + 1e-300;
}

// log E|Y|^m (absolute moment of the standardized law).
inline double log_abs_moment(int noise, double m) {
  if (noise == kLaplace) return std::lgamma(m + 1.0);
  return 0.5 * m * std::log(2.0) + std::lgamma(0.5 * (m + 1.0)) - 0.5 * std::log(M_PI);
}

struct VQuadResult {
  std::vector<double> value, err;
  long n_eval = 0;
  bool converged = true;
};

namespace detail {
constexpr int kN = 21;
struct Rule {
  std::array<double, kN> x{}, wk{}, wg{};
  Rule() {
    using GK = boost::math::quadrature::gauss_kronrod<double, kN>;
    using G = boost::math::quadrature::gauss<double, (kN - 1) / 2>;
    const auto& ax = GK::abscissa();
    const auto& w = GK::weights();
    const auto& gw = G::weights();
    // 10-point Gauss: nodes are the odd Kronrod indices (0 is a Kronrod-only node).
    int k = 0;
    x[k] = 0.0; wk[k] = w[0]; wg[k] = 0.0; ++k;
    for (std::size_t i = 1; i < ax.size(); ++i) {
      double g = (i % 2 == 1) ? gw[i / 2] : 0.0;
      x[k] = ax[i]; wk[k] = w[i]; wg[k] = g; ++k;
      x[k] = -ax[i]; wk[k] = w[i]; wg[k] = g; ++k;
    }
  }
};
inline const Rule& rule() {
  static const Rule r;
  return r;
}
// x = x0 + sg * W * u^q for u in [ua, ub] (q > 1 next to a root of the integrand, where it
// behaves like |x - x0|^p with p < 1: the map makes it smooth in u).
struct Piece {
  double x0, sg, W, q, ua, ub, prio = 0;
  std::vector<double> K, E, L1;
};
}  // namespace detail

// F: void operator()(double x, double* out) writing nc values f_i(x) (without the density).
// sing: breakpoints where the integrand has an algebraic singularity (mapped with exponent q).
template <class F>
VQuadResult vquad(int noise, const F& f, std::size_t nc, std::vector<double> brk, double L, double rtol,
                  const std::vector<double>& atol, const std::vector<double>& sing = {}, double q = 1.0,
                  int max_pieces = 4000) {
  for (double x : sing) brk.push_back(x);
  const auto& R = detail::rule();
  brk.push_back(-L);
  brk.push_back(L);
  std::vector<double> pts;
  for (double b : brk)
    if (std::isfinite(b) && b >= -L && b <= L) pts.push_back(b);
  std::sort(pts.begin(), pts.end());
  pts.erase(std::unique(pts.begin(), pts.end(), [](double u, double v) { return std::fabs(u - v) < 1e-13; }),
            pts.end());
  VQuadResult res;
  std::vector<double> buf(nc);
  auto eval_piece = [&](detail::Piece& p) {
    p.K.assign(nc, 0.0);
    p.E.assign(nc, 0.0);
    p.L1.assign(nc, 0.0);
    std::vector<double> G(nc, 0.0);
    const double c = 0.5 * (p.ua + p.ub), h = 0.5 * (p.ub - p.ua);
    for (int i = 0; i < detail::kN; ++i) {
      const double u = c + h * R.x[i];
      const double uq1 = p.q == 1.0 ? 1.0 : std::pow(u, p.q - 1.0);
      const double x = p.x0 + p.sg * p.W * uq1 * u;
      f(x, buf.data());
      const double q = density(noise, x) * h * p.W * p.q * uq1;
      for (std::size_t j = 0; j < nc; ++j) {
        const double v = buf[j] * q;
        if (!std::isfinite(v)) throw NumericalFailure("capacity: integrand is not finite");
        p.K[j] += R.wk[i] * v;
        G[j] += R.wg[i] * v;
        p.L1[j] += R.wk[i] * std::fabs(v);
      }
    }
    res.n_eval += detail::kN;
    p.prio = 0;
    for (std::size_t j = 0; j < nc; ++j) {
      p.E[j] = std::fabs(p.K[j] - G[j]);
      p.prio = std::max(p.prio, p.E[j] / atol[j]);
    }
  };
  std::vector<detail::Piece> pieces;
  for (std::size_t i = 0; i + 1 < pts.size(); ++i) {
    const double a = pts[i], b = pts[i + 1];
    auto is_sing = [&](double x) {
      for (double y : sing) if (std::fabs(x - y) < 1e-13) return true;
      return false;
    };
    const bool sa = q > 1.0 && is_sing(a), sb = q > 1.0 && is_sing(b);
    auto add = [&](double x0, double sg, double W, double qq) {
      detail::Piece p;
      p.x0 = x0; p.sg = sg; p.W = W; p.q = qq; p.ua = 0.0; p.ub = 1.0;
      eval_piece(p);
      pieces.push_back(std::move(p));
    };
    if (sa && sb) {
      const double mid = 0.5 * (a + b);
      add(a, 1.0, mid - a, q);
      add(b, -1.0, b - mid, q);
    } else if (sa) {
      add(a, 1.0, b - a, q);
    } else if (sb) {
      add(b, -1.0, b - a, q);
    } else {
      add(a, 1.0, b - a, 1.0);
    }
  }
  std::vector<double> tot(nc), err(nc), l1(nc);
  for (int iter = 0;; ++iter) {
    std::fill(tot.begin(), tot.end(), 0.0);
    std::fill(err.begin(), err.end(), 0.0);
    std::fill(l1.begin(), l1.end(), 0.0);
    for (const auto& p : pieces)
      for (std::size_t j = 0; j < nc; ++j) { tot[j] += p.K[j]; err[j] += p.E[j]; l1[j] += p.L1[j]; }
    bool ok = true;
    for (std::size_t j = 0; j < nc; ++j)
      if (err[j] > std::max(rtol * std::fabs(tot[j]), atol[j])) ok = false;
    if (ok) break;
    if (static_cast<int>(pieces.size()) >= max_pieces) { res.converged = false; break; }
    // bisect the worst few pieces (by error relative to each component's tolerance)
    std::size_t w = 0;
    for (std::size_t i = 1; i < pieces.size(); ++i)
      if (pieces[i].prio > pieces[w].prio) w = i;
    detail::Piece left = pieces[w], right = pieces[w];
    const double mid = 0.5 * (left.ua + left.ub);
    if (!(mid > left.ua && mid < left.ub) || left.W * (left.ub - left.ua) < 1e-300) { res.converged = false; break; }
    left.ub = mid;
    right.ua = mid;
    eval_piece(left);
    eval_piece(right);
    pieces[w] = std::move(left);
    pieces.push_back(std::move(right));
  }
  res.value = tot;
  res.err.resize(nc);
  for (std::size_t j = 0; j < nc; ++j)
    res.err[j] = err[j] + 64.0 * std::numeric_limits<double>::epsilon() * l1[j];
  return res;
}

}  // namespace puffer::capacity
