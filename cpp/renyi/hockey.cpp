// Privacy profiles (hockey-stick divergences) of additive noise, as certified upper bounds.
// See hockey.hpp for the representation; logquad.hpp for the integrator.
#include "renyi/hockey.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <boost/math/special_functions/erf.hpp>
#include <boost/math/special_functions/gamma.hpp>

#include "common/errors.hpp"
#include "common/parallel.hpp"
#include "common/rounding.hpp"
#include "renyi/log_terms.hpp"
#include "renyi/logquad.hpp"

namespace puffer::renyi {

namespace {

using detail::kEps;
using detail::kInf;
using detail::kLn2;
using detail::kLn4;
constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kLog2Pi = 1.83787706640934548356;

// ---- Gaussian: Balle & Wang 2018, Thm 8 ------------------------------------------------------

// log Phi(x) (x exact) and a bound on its absolute error.
void log_phi(double x, double& lv, double& err) {
  if (x > 0.0) {
    // Phi(x) = 1 - q, q = erfc(x / sqrt 2) / 2 <= 1/2. The relative error of q: erfc's own
    // (<= 8 eps) plus the rounding of its argument, |d log erfc(z)/dz| <= 2z + 1.5, |dz| <= eps z.
    const double z = x * kSqrt1_2;
    const double q = 0.5 * boost::math::erfc(z);
    lv = std::log1p(-q);
    err = 2.0 * q * (8.0 + (2.0 * z + 1.5) * z) * kEps + 2.0 * kEps * std::fabs(lv);
    return;
  }
  const double z = -x * kSqrt1_2;  // >= 0
  if (z < 26.0) {
    lv = std::log(0.5 * boost::math::erfc(z));
    err = (8.0 + (2.0 * z + 1.5) * z) * kEps + 2.0 * kEps * std::fabs(lv);
    return;
  }
  // x < -36.7 (erfc near the float underflow): Phi(x) = phi(x)/|x| S, with the alternating
  // asymptotic series S = 1 - w + 3w^2 - 15w^3 + R, w = 1/x^2, |R| <= 105 w^4.
  const double w = 1.0 / (x * x);
  const double S = 1.0 - w * (1.0 - w * (3.0 - 15.0 * w));
  lv = -0.5 * x * x - std::log(-x) - 0.5 * kLog2Pi + std::log(S);
  err = 2.0 * 105.0 * (w * w) * (w * w) / S + 8.0 * kEps * (std::fabs(lv) + 4.0);
}

// |d log Phi(x) / dx| = phi(x) / Phi(x) <= |x| + 1 for x < 0 (Mills), <= 0.8 for x >= 0.
inline double dlog_phi(double x) { return (x < 0.0 ? -x : 0.0) + 1.0; }

// delta(eps; s) of N(0, 1) at shift s = Delta / sigma.
double gaussian_hockey(double eps, double s) {
  if (s == 0.0) return 0.0;
  if (std::isinf(s)) return 1.0;
  const double r = eps / s;
  const double a = 0.5 * s - r, b = -0.5 * s - r;
  if (!std::isfinite(r)) return std::numeric_limits<double>::denorm_min();  // s below 1e-308 eps: delta ~ 0
  // each of a, b: the rounding of r (eps |r|) and of the sum (eps |a|)
  const double da = kEps * (std::fabs(a) + 2.0 * std::fabs(r)), db = kEps * (std::fabs(b) + 2.0 * std::fabs(r));
  double lA, eA, lB, eB;
  log_phi(a, lA, eA);
  log_phi(b, lB, eB);
  eA += dlog_phi(a) * da;
  eB += dlog_phi(b) * db;
  // delta = Phi(a) (1 - e^t), t = eps + log Phi(b) - log Phi(a) < 0; smaller t, larger delta
  const double t = eps + lB - lA;
  const double et = eA + eB + 4.0 * kEps * (eps + std::fabs(lB) + std::fabs(lA));
  const double tl = t - et;
  double logd = lA + eA;
  double lm = 0.0;
  if (tl < 0.0) {
    lm = std::log(-std::expm1(tl));
    logd += lm;
  }
  logd += 8.0 * kEps * (std::fabs(lA) + std::fabs(lm) + 4.0);
  double d = std::exp(logd) * (1.0 + 4.0 * kEps);
  if (!(d > 0.0)) d = std::numeric_limits<double>::denorm_min();
  return std::min(d, 1.0);
}

// ---- Laplace ---------------------------------------------------------------------------------
// The privacy loss of Laplace(u) against Laplace(0) (b = 1) is clip((2x - u), -u, u); the event
// {L > eps} is x > (eps + u)/2 and delta = 1 - e^{(eps - u)/2} for u > eps, 0 otherwise.
double laplace_hockey(double eps, double u) {
  if (!(u > eps)) return 0.0;
  if (std::isinf(u)) return 1.0;
  const double x = round_down(0.5 * (eps - u), 2);  // delta decreases in x: step it down
  return std::min(1.0, round_up(-std::expm1(x), 2));
}

// ---- quadrature families ---------------------------------------------------------------------
// m = (h(y - c) + h(y + c)) / 2, d = (h(y - c) - h(y + c)) / 2 for y >= 0, c = u/2 (the centred
// coordinate: the shifted law sits at +c, the other at -c), h the standardized log-density.
// The same cancellation-free forms as the Renyi kernel (renyi.cpp).
struct Centred {
  int fam;
  Shape sh;
  double c;

  void md(double y, double& m, double& d) const {
    switch (fam) {
      case 2: {  // Student-type, h = -(k/2) log1p(x^2 / nu)
        const double A = (y - c) * (y - c) / sh.nu, B = (y + c) * (y + c) / sh.nu;
        if (!(B < 1e300)) { m = -kInf; d = 0.0; return; }
        m = -0.25 * sh.k * (std::log1p(A) + std::log1p(B));
        d = 0.25 * sh.k * std::log1p((4.0 * y * c / sh.nu) / (1.0 + A));
        return;
      }
      case 3: {  // logistic, h = -2 log cosh(x/2)
        const double A = 0.5 * (y + c), B = 0.5 * (y - c);
        m = -(detail::lcosh(A) + detail::lcosh(B));
        if (y <= 40.0 && c <= 40.0) d = std::log1p(2.0 * std::sinh(0.5 * y) * std::sinh(0.5 * c) / std::cosh(B));
        else d = std::min(y, c) + std::log1p(std::exp(-2.0 * std::fabs(A))) - std::log1p(std::exp(-2.0 * std::fabs(B)));
        return;
      }
      default: {  // generalized Gaussian, h = -|x|^beta
        const double p = y + c;
        const double pb = std::pow(p, sh.beta);
        if (!(pb < 1e300)) { m = -kInf; d = 0.0; return; }
        const double r = p > 0.0 ? std::log1p(-2.0 * std::min(y, c) / p) : 0.0;
        m = -0.5 * (pb + std::pow(std::fabs(y - c), sh.beta));
        d = -0.5 * pb * std::expm1(sh.beta * r);
        return;
      }
    }
  }
  // An upper bound on the privacy loss L = 2d at y (its rounding bound added).
  double loss_up(double y, double& m, double& d) const {
    md(y, m, d);
    return 2.0 * d + 64.0 * kEps * (std::fabs(d) + 0.01) + (fam == 4 ? 16.0 * kEps * std::fabs(m) : 0.0);
  }
};

double log_normalizer(int fam, const Shape& s) {
  switch (fam) {
    case 2: return std::log(boost::math::tgamma_delta_ratio(0.5 * s.k, -0.5)) - 0.5 * std::log(s.nu * M_PI);
    case 3: return -kLn4;
    default: return -kLn2 - std::lgamma(1.0 + 1.0 / s.beta);
  }
}

// The integrand p(y - c) (1 - e^{eps - L(y)})_+ in log space at y = y0 + t (t >= 0, y <= y_end),
// a pointwise upper bound: L and log p moved up by their rounding bounds.
struct HockeyFn {
  Centred C;
  double logZ, eps, y0, y_end;
  void operator()(const double* t, std::size_t n, double* out) const {
    for (std::size_t i = 0; i < n; ++i) {
      const double y = y0 + t[i];
      if (!(y <= y_end) || y < 0.0) { out[i] = -kInf; continue; }
      double m, d;
      const double Lu = C.loss_up(y, m, d);
      if (!(m > -kInf) || !(Lu > eps)) { out[i] = -kInf; continue; }
      const double lp = logZ + m + d + 16.0 * kEps * (std::fabs(logZ) + std::fabs(m) + std::fabs(d) + 1.0);
      out[i] = lp + std::log(-std::expm1(eps - Lu));
    }
  }
};

// Largest y in [lo, hi] with loss_up(y) <= eps, given loss_up(lo) <= eps < loss_up(hi) and L
// increasing on [lo, hi] (bisection to the resolution of double).
double last_below(const Centred& C, double eps, double lo, double hi) {
  double m, d;
  for (int it = 0; it < 2000; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (!(mid > lo && mid < hi)) break;
    if (C.loss_up(mid, m, d) <= eps) lo = mid; else hi = mid;
  }
  return lo;
}

double quad_hockey(int fam, const Shape& s, double eps, double u) {
  Centred C{fam, s, 0.5 * u};
  double m, d;
  // y_m: where L = 2d peaks (inf for the log-concave families, whose L increases in y)
  const double y_m = fam == 2 ? std::sqrt(s.nu + C.c * C.c) : kInf;
  double y_lo = 0.0, y_hi = kInf;
  if (fam == 2) {
    if (!(C.loss_up(y_m, m, d) > eps)) return 0.0;  // sup L <= eps: the event {L > eps} is empty
  } else if (fam == 3 && !(u > eps)) {
    return 0.0;  // logistic: L < u everywhere (its log-density is 1-Lipschitz)
  }
  if (C.loss_up(0.0, m, d) <= eps) {
    // left end: L increases on [0, y_m]; find a bracket [0, hi] with loss_up(hi) > eps
    double hi = fam == 2 ? y_m : std::max(C.c, 1.0);
    for (int i = 0; i < 2100 && !(C.loss_up(hi, m, d) > eps); ++i) {
      hi *= 2.0;
      if (!(hi < 1e300)) return 0.0;  // L never exceeds eps (logistic at eps just below u): no event
    }
    y_lo = last_below(C, eps, 0.0, hi);
  }
  if (fam == 2 && eps > 0.0) {
    // right end: L decreases to 0 beyond y_m; the first y >= y_m with loss_up(y) <= eps (in log y)
    double lo = y_m, hi = 2.0 * y_m;
    for (int i = 0; i < 2100 && C.loss_up(hi, m, d) > eps; ++i) { lo = hi; hi *= 2.0; }
    if (C.loss_up(hi, m, d) > eps) y_hi = kInf;
    else {
      for (int it = 0; it < 2000; ++it) {
        const double mid = std::sqrt(lo) * std::sqrt(hi);
        if (!(mid > lo && mid < hi)) break;
        if (C.loss_up(mid, m, d) > eps) lo = mid; else hi = mid;
      }
      y_hi = hi;
    }
  }
  const double logZ = log_normalizer(fam, s);
  HockeyFn f{C, logZ, eps, y_lo, y_hi};
  LogQuadOptions opt;
  opt.half_line = true;
  const double span = std::isfinite(y_hi) ? y_hi - y_lo : kInf;
  opt.scale_hint = std::isfinite(span) ? std::max(0.25 * span, 1e-300) : std::max(1.0, C.c);
  opt.noise_at = [&](double t) {
    double mm, dd;
    C.md(y_lo + t, mm, dd);
    return 16.0 * kEps * (std::fabs(logZ) + std::fabs(mm) + std::fabs(dd) + 8.0);
  };
  std::vector<double> kinks;
  if (std::isfinite(span)) kinks.push_back(span);
  if (fam == 4 && C.c > y_lo) kinks.push_back(C.c - y_lo);  // h not smooth at 0: the shifted kink
  LogQuadResult r = integrate_log(f, kinks, opt);
  if (r.unbounded) return 1.0;
  if (!(r.M > -kInf) || !(r.Q + r.err > 0.0)) return std::numeric_limits<double>::denorm_min();
  const double margin = 2e-13 + 64.0 * kEps * (std::fabs(r.M) + 40.0);
  double D = std::exp(r.M + std::log(r.Q + r.err) + margin);
  if (!(D > 0.0)) D = std::numeric_limits<double>::denorm_min();
  return std::min(round_up(D, 4), 1.0);
}

// ---- user densities --------------------------------------------------------------------------
struct CustomHockeyFn {
  const LogPdfBatch& lp;
  double eps, u;
  mutable std::vector<double> buf, vals;
  void operator()(const double* x, std::size_t n, double* out) const {
    buf.resize(2 * n);
    vals.resize(2 * n);
    for (std::size_t i = 0; i < n; ++i) { buf[i] = x[i] - u; buf[n + i] = x[i]; }
    lp(buf.data(), 2 * n, vals.data());
    for (std::size_t i = 0; i < n; ++i) {
      const double a = vals[i], b = vals[n + i];  // a = log p(x - u), b = log p(x)
      for (double v : {a, b}) {
        if (std::isnan(v) || v == kInf)
          throw InvalidArgument("logpdf", "returned " + to_str(v) + " at x = " + to_str(std::isnan(a) || a == kInf ? buf[i] : buf[n + i]),
                                "finite log-density values (or -inf outside the support)");
      }
      if (a == -kInf) { out[i] = -kInf; continue; }
      const double ea = 8.0 * kEps * (std::fabs(a) + 1.0);
      if (b == -kInf) { out[i] = a + ea; continue; }  // p(x) = 0 < p(x - u): all of p(x - u) counts
      const double Lu = (a - b) + 4.0 * kEps * (std::fabs(a) + std::fabs(b));
      if (!(Lu > eps)) { out[i] = -kInf; continue; }
      out[i] = a + ea + std::log(-std::expm1(eps - Lu));
    }
  }
};

}  // namespace

double hockey_stick(int family, const Shape& s, double eps, double u) {
  check_shape(family, s);
  require(eps >= 0.0 && !std::isnan(eps), "eps", eps, "eps >= 0 (inf allowed)");
  require(u >= 0.0, "u", u, "a standardized shift >= 0 (inf: beyond the float range)");
  if (u == 0.0 || std::isinf(eps)) return 0.0;
  if (std::isinf(u)) return 1.0;
  if (family == 0) return gaussian_hockey(eps, u);
  if (family == 1 || (family == 4 && s.beta == 1.0)) return laplace_hockey(eps, u);
  // GenGaussian(2, s) is N(0, s^2/2): a standardized shift u is a Gaussian shift u sqrt 2
  if (family == 4 && s.beta == 2.0) return gaussian_hockey(eps, u * 1.41421356237309504880 * (1.0 + 2.0 * kEps));
  try {
    return quad_hockey(family, s, eps, u);
  } catch (const NumericalFailure&) {
    // beyond the resolution of double (u ~ 1e15 scales): delta <= 1 is the certified answer
    if (u > 1e12) return 1.0;
    throw;
  }
}

void hockey_stick_batch(int family, const Shape& s, const double* eps, const double* u, double* out, std::size_t n,
                        unsigned threads) {
  check_shape(family, s);
  for (std::size_t i = 0; i < n; ++i) {
    require(eps[i] >= 0.0 && !std::isnan(eps[i]), "eps", eps[i], "eps >= 0 (inf allowed)");
    require(u[i] >= 0.0, "u", u[i], "a standardized shift >= 0 (inf: beyond the float range)");
  }
  const bool cheap = family <= 1 || (family == 4 && (s.beta == 1.0 || s.beta == 2.0));
  const std::size_t chunk = cheap ? 4096 : 8;
  const std::size_t n_tasks = (n + chunk - 1) / chunk;
  if (n_tasks <= 1) {
    for (std::size_t i = 0; i < n; ++i) out[i] = hockey_stick(family, s, eps[i], u[i]);
    return;
  }
  parallel_for(n_tasks, threads, [&](std::size_t t) {
    const std::size_t hi = std::min(n, (t + 1) * chunk);
    for (std::size_t i = t * chunk; i < hi; ++i) out[i] = hockey_stick(family, s, eps[i], u[i]);
  });
}

double custom_hockey_stick(const LogPdfBatch& logpdf, double eps, double u, double scale_hint, const double* breaks,
                           std::size_t n_breaks) {
  require(eps >= 0.0 && !std::isnan(eps), "eps", eps, "eps >= 0 (inf allowed)");
  require(!std::isnan(u), "u", u, "a standardized shift (inf: beyond the float range)");
  if (u == 0.0 || std::isinf(eps)) return 0.0;
  if (std::isinf(u)) return 1.0;
  CustomHockeyFn f{logpdf, eps, u, {}, {}};
  LogQuadOptions opt;
  opt.half_line = false;
  opt.scale_hint = std::max({std::fabs(u), scale_hint, 1e-300});
  // a break b of p is a break of p(. - u) at b + u
  std::vector<double> kinks;
  for (std::size_t i = 0; i < n_breaks; ++i) {
    require(std::isfinite(breaks[i]), "breakpoints", breaks[i], "finite breakpoints");
    kinks.push_back(breaks[i]);
    kinks.push_back(breaks[i] + u);
  }
  LogQuadResult r = integrate_log(f, kinks, opt);
  if (r.unbounded) return kInf;  // the caller caps at 1 after normalising
  if (!(r.M > -kInf) || !(r.Q + r.err > 0.0)) return std::numeric_limits<double>::denorm_min();
  const double margin = 1e-12 + 64.0 * kEps * (std::fabs(r.M) + 40.0);
  double D = std::exp(r.M + std::log(r.Q + r.err) + margin);
  if (!(D > 0.0)) D = std::numeric_limits<double>::denorm_min();
  return round_up(D, 4);
}

double max_shift_hockey(int family, const Shape& s, double eps, double delta) {
  check_shape(family, s);
  require(eps >= 0.0 && std::isfinite(eps), "eps", eps, "a finite eps >= 0");
  require(delta > 0.0 && delta < 1.0, "delta", delta, "delta in (0, 1)");
  const double ld = std::log(delta);
  // g(t) = log H(e^t) - log delta: increasing; its sign must agree with H <= delta exactly
  auto g = [&](double t) {
    const double v = hockey_stick(family, s, eps, std::exp(t));
    if (!(v > 0.0)) return -kInf;
    const double r = std::log(v) - ld;
    return v <= delta ? std::min(r, 0.0) : std::max(r, 1e-300);
  };
  double tlo = -kInf, glo = -kInf, thi = kInf, ghi = kInf;
  double t = std::log(std::max(eps, 1.0));
  for (int i = 0; i < 400 && !(std::isfinite(tlo) && std::isfinite(thi)); ++i) {
    const double v = g(t);
    if (v <= 0.0) { if (t > tlo) { tlo = t; glo = v; } t += 1.0; }
    else { if (t < thi) { thi = t; ghi = v; } t -= 1.0; }
    if (t > 690.0) return kInf;
    if (t < -690.0) return 0.0;
  }
  if (!std::isfinite(tlo)) return 0.0;
  if (!std::isfinite(thi)) return kInf;
  int side = 0;
  for (int it = 0; it < 300; ++it) {
    if (thi - tlo <= 1e-12 || glo >= -2e-11) break;
    double tm;
    if (std::isfinite(glo) && std::isfinite(ghi) && ghi > glo) tm = (tlo * ghi - thi * glo) / (ghi - glo);
    else tm = 0.5 * (tlo + thi);
    const double w = thi - tlo;
    tm = std::min(std::max(tm, tlo + 1e-4 * w), thi - 1e-4 * w);
    const double gm = g(tm);
    if (gm <= 0.0) {
      tlo = tm; glo = gm;
      if (side == -1) ghi *= 0.5;
      side = -1;
    } else {
      thi = tm; ghi = gm;
      if (side == +1) glo *= 0.5;
      side = +1;
    }
  }
  return std::exp(tlo);
}

}  // namespace puffer::renyi
