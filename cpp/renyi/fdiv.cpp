// f-divergence primitives and mechanism closed forms; see fdiv.hpp.
#include "renyi/fdiv.hpp"

#include <cmath>
#include <limits>

#include "common/errors.hpp"

namespace puffer::fdiv {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

void check_alpha(int kind, double alpha) {
  if (kind == kAlpha) require(alpha > 1.0 && std::isfinite(alpha), "alpha", alpha, "a finite order > 1");
}
void check_kind(int kind) { require(kind == kKL || kind == kTV || kind == kAlpha, "kind", kind, "0 (KL), 1 (TV) or 2 (alpha)"); }
}  // namespace

double generator(int kind, double t, double alpha) {
  check_kind(kind);
  check_alpha(kind, alpha);
  require(!std::isnan(t), "t", t, "a number");
  switch (kind) {
    case kKL:
      if (t < 0) return kInf;
      return t == 0 ? 0.0 : t * std::log(t);
    case kTV:
      return 0.5 * std::fabs(t - 1.0);
    default:
      return (std::pow(std::fabs(t), alpha) - 1.0) / (alpha * alpha - alpha);
  }
}

double conjugate(int kind, double u, double alpha) {
  check_kind(kind);
  check_alpha(kind, alpha);
  require(!std::isnan(u), "u", u, "a number");
  switch (kind) {
    case kKL:
      return std::exp(u - 1.0);
    case kTV:
      return std::fabs(u) <= 0.5 ? u : kInf;
    default: {
      const double as = alpha / (alpha - 1.0);
      const double C = std::pow(alpha - 1.0, as) / alpha;
      return C * std::pow(std::fabs(u), as) + 1.0 / (alpha * alpha - alpha);
    }
  }
}

double f_divergence_discrete(int kind, const double* p, const double* q, std::size_t n, double alpha) {
  check_kind(kind);
  check_alpha(kind, alpha);
  double acc = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    require(p[i] >= 0 && std::isfinite(p[i]), "p", p[i], "probabilities >= 0");
    require(q[i] >= 0 && std::isfinite(q[i]), "q", q[i], "probabilities >= 0");
    if (q[i] == 0) {
      if (p[i] == 0) continue;
      if (kind == kTV) { acc += 0.5 * p[i]; continue; }
      return kInf;  // f grows superlinearly: P not << Q
    }
    acc += q[i] * generator(kind, p[i] / q[i], alpha);
  }
  return acc;
}

double alpha_div_to_renyi(double d, double alpha) {
  require(alpha > 1.0 && std::isfinite(alpha), "alpha", alpha, "a finite order > 1");
  require(d >= -1.0 / (alpha * alpha - alpha) && !std::isnan(d), "d", d, "an alpha-divergence >= -1/(alpha^2 - alpha)");
  return std::log1p(alpha * (alpha - 1.0) * d) / (alpha - 1.0);
}

double renyi_to_alpha_div(double r, double alpha) {
  require(alpha > 1.0 && std::isfinite(alpha), "alpha", alpha, "a finite order > 1");
  require(!std::isnan(r), "r", r, "a number");
  return std::expm1((alpha - 1.0) * r) / (alpha * (alpha - 1.0));
}

double laplace_kl(double x) {
  x = std::fabs(x);
  // x - 1 + e^{-x} = x - (1 - e^{-x}) = x + expm1(-x): no cancellation of the constant terms
  return x + std::expm1(-x);
}

double laplace_lin_kl(double x) {
  x = std::fabs(x);
  // sqrt(1+x^2) - 1 = x^2/(sqrt(1+x^2)+1);  log(2/(1+r)) = -log1p((r-1)/2)
  const double r = std::hypot(1.0, x);
  const double rm1 = x * x / (r + 1.0);
  return rm1 - std::log1p(0.5 * rm1);
}

double laplace_log_F(double alpha, double x) {
  x = std::fabs(x);
  // F - 1 = [alpha expm1((alpha-1)x) + (alpha-1) expm1(-alpha x)] / (2 alpha - 1)  (>= 0)
  const double num = alpha * std::expm1((alpha - 1.0) * x) + (alpha - 1.0) * std::expm1(-alpha * x);
  return std::log1p(std::max(num, 0.0) / (2.0 * alpha - 1.0));
}

double laplace_renyi(double alpha, const double* v, std::size_t d) {
  require(alpha > 1.0, "alpha", alpha, "an order > 1");
  if (!std::isfinite(alpha)) {
    double s = 0;
    for (std::size_t i = 0; i < d; ++i) s += std::fabs(v[i]);
    return s;
  }
  double s = 0;
  for (std::size_t i = 0; i < d; ++i) {
    require(std::isfinite(v[i]), "v", v[i], "finite shifts");
    s += laplace_log_F(alpha, v[i]);
  }
  return s / (alpha - 1.0);
}

double gaussian_renyi(double alpha, const double* v, std::size_t d) {
  require(alpha > 1.0 && std::isfinite(alpha), "alpha", alpha, "a finite order > 1");
  double s = 0;
  for (std::size_t i = 0; i < d; ++i) {
    require(std::isfinite(v[i]), "v", v[i], "finite shifts");
    s += v[i] * v[i];
  }
  return 0.5 * alpha * s;
}

}  // namespace puffer::fdiv
