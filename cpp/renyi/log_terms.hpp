// Log-space building blocks of the Renyi integrands (renyi.cpp, lipschitz.cpp): log sinh / cosh
// without overflow or subnormal products, and the pointwise non-negative Jensen form of the
// integrand of J - 1 (or of KL) for a general density.
#pragma once
#include <cmath>
#include <limits>

#include "common/rounding.hpp"

namespace puffer::renyi::detail {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kEps = std::numeric_limits<double>::epsilon();
constexpr double kLn2 = 0.69314718055994530942;
constexpr double kLn4 = 1.38629436111989061883;

// log(sinh(x)) for x >= 0 (-inf at 0).
inline double lsinh(double x) {
  if (x > 40.0) return x - kLn2;  // log1p(-e^{-2x}) < 1e-34
  if (x > 20.0) return x - kLn2 + std::log1p(-std::exp(-2.0 * x));
  return std::log(std::sinh(x));
}
// log(sinh(s d)) for s, d > 0 where the product s d may fall below the normal range (alpha - 1 = 1e-9
// times d = 1e-300): log s + log d then (log(sinh x / x) <= x^2 / 6 < 1e-200 is below every margin).
inline double lsinh_prod(double s, double d) {
  const double x = s * d;
  if (x < 1e-100) return std::log(s) + std::log(d);
  return lsinh(x);
}
// log(cosh(x)).
inline double lcosh(double x) {
  double a = std::fabs(x);
  return a + std::log1p(std::exp(-2.0 * a)) - kLn2;
}
// log(1 + e^x) without overflow.
inline double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

// log( expm1(b s) + b expm1(-s) ), b = alpha - 1 > 0: the non-negative Jensen form of the
// general (non-symmetric) integrand e^a psi(a - b).
inline double log_psi(double b, double s) {
  if (s == 0.0) return -kInf;
  double as = std::fabs(s);
  if (as < 0.5 && b * as < 0.5) {
    // sum_{n>=2} (b^n + b (-1)^n) s^n / n!   (the n = 1 terms cancel exactly)
    double pb = b * s, p1 = -s, sum = 0.0;
    for (int n = 2; n < 80; ++n) {
      pb *= b * s / n;
      p1 *= -s / n;
      const double term = pb + b * p1;
      sum += term;
      // stop on the size of the parts, not of the term (which is 0 at odd n when b = 1)
      if (std::fabs(pb) + b * std::fabs(p1) <= 1e-18 * std::fabs(sum)) break;
    }
    return std::log(sum);
  }
  if (s > 0 && b * s > 40.0) return b * s + std::log1p(-std::exp(-b * s) * (1.0 + b - b * std::exp(-s)));
  if (s < 0 && as > 40.0) return std::log(b) + as + std::log1p(std::exp(-as) * (std::expm1(b * s) / b - 1.0));
  return std::log(std::expm1(b * s) + b * std::expm1(-s));
}

// log( s + expm1(-s) ) >= 0-form of the KL integrand e^a (s + expm1(-s)), s = a - b.
inline double log_kl_core(double s) {
  if (s == 0.0) return -kInf;
  if (std::fabs(s) < 0.5) {
    double p = 1.0, sum = 0.0;  // sum_{n>=2} (-s)^n/n!
    p = -s;
    for (int n = 2; n < 60; ++n) {
      p *= -s / n;
      sum += p;
      if (std::fabs(p) <= 1e-18 * std::fabs(sum)) break;
    }
    return std::log(sum);
  }
  if (s < -40.0) return -s + std::log1p(std::exp(s) * (s - 1.0));
  return std::log(s + std::expm1(-s));
}

// log of the integrand of J - 1 at a point where a = log p(x - u) > -inf or b = log p(x) > -inf
// (b > -inf): e^a (expm1(beta s) + beta expm1(-s)) >= 0, s = a - b (Jensen), or for KL
// (kl = true) e^a (s + expm1(-s)); its integral over the line is J - 1 (resp. KL).
inline double jensen_log(double a, double b, double beta, bool kl) {
  if (a == -kInf) return kl ? b : std::log(beta) + b;
  const double s = a - b;
  double L;
  if (kl) L = a + log_kl_core(s);
  else if (s > 40.0) {
    // e^a psi = e^{a + beta s} (1 - ...): a + beta s may exceed the float range when the ratio
    // p(x-u)/p(x) grows without bound (then the divergence is +inf: integrators see L = +inf)
    L = a + beta * s + std::log1p(-std::exp(-beta * s) * (1.0 + beta - beta * std::exp(-s)));
  } else if (s < -40.0) {
    L = std::log(beta) + b + std::log1p(std::exp(s) * (std::expm1(beta * s) / beta - 1.0));
  } else {
    L = a + log_psi(beta, s);
  }
  if (std::isnan(L)) L = (s > 0) ? kInf : -kInf;
  return L;
}

// D = log1p(J) / (alpha - 1) (KL: D = J) from log J, an upper bound on log J. For tiny J the
// quotient is formed in log space (log1p(J) <= J): (alpha - 1) D could be below the float range
// while D is not (alpha = 1 + 1e-9, u = 1e-160: D = 3e-321 came out as the smallest subnormal).
inline double finish_divergence(double logJ, bool kl, double beta) {
  double D;
  if (kl) D = std::exp(logJ);
  else if (logJ < -30.0) D = std::exp(logJ - std::log(beta));
  else D = softplus(logJ) / beta;
  // exp underflowed: the exact D is below the smallest subnormal, which bounds it
  if (!(D > 0.0)) D = std::numeric_limits<double>::denorm_min();
  return round_up(D, 8);
}

}  // namespace puffer::renyi::detail
