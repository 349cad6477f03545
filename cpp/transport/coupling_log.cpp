// Log-space quantile coupling (Seeman et al. 2024 level keys; Ding 2022 staircase).
#include "transport/coupling_log.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace puffer::transport {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kLn2 = 0.693147180559945309417232121458176568;
}  // namespace

double np_logaddexp(double x, double y) {
  if (x == y) return x + kLn2;  // also -inf, -inf
  const double t = x - y;
  if (t > 0) return x + std::log1p(std::exp(-t));
  if (t <= 0) return y + std::log1p(std::exp(t));
  return t;  // NaN
}

void log_level_keys(const double* lp, std::size_t n, std::vector<double>& key) {
  key.resize(n);
  if (n == 0) return;
  std::vector<double> rev(n);
  rev[n - 1] = lp[n - 1];
  for (std::size_t j = n - 1; j-- > 0;) rev[j] = np_logaddexp(rev[j + 1], lp[j]);
  const double half = std::log(0.5);
  double lf = lp[0];
  for (std::size_t j = 0; j < n; ++j) {
    if (j) lf = np_logaddexp(lf, lp[j]);
    const double ls = j + 1 < n ? rev[j + 1] : -kInf;  // log of the mass strictly above atom j
    key[j] = lf <= half ? lf : -ls;
  }
}

void coupling_log_1d(const double* lp, std::size_t n, const double* lq, std::size_t m, Plan& plan) {
  thread_local std::vector<double> kp, kq;
  log_level_keys(lp, n, kp);
  log_level_keys(lq, m, kq);
  const double tol = static_cast<double>(n + m + 16) * 0x1p-53;
  const double half = std::log(0.5);
  auto level = [&](double k, double& F, double& S) {
    if (k <= half) {
      F = std::exp(k);
      S = 1.0 - F;
    } else {
      S = std::exp(-k);
      F = 1.0 - S;
    }
  };
  plan.src.clear();
  plan.dst.clear();
  plan.mass.clear();
  std::size_t i = 0, j = 0;
  double sF = 0.0, sS = 1.0;
  while (i < n && j < m) {
    const double a = kp[i], b = kq[j];
    const bool tie = a == b || (std::isfinite(a) && std::isfinite(b) &&
                                std::fabs(a - b) <= tol * std::max(1.0, std::max(std::fabs(a), std::fabs(b))));
    double eF, eS;
    level(std::min(a, b), eF, eS);
    const double w = eF <= 0.5 ? eF - sF : sS - eS;
    plan.src.push_back(static_cast<std::int64_t>(i));
    plan.dst.push_back(static_cast<std::int64_t>(j));
    plan.mass.push_back(std::max(w, 0.0));
    sF = eF;
    sS = eS;
    if (tie || a < b) ++i;
    if (tie || b < a) ++j;
  }
  for (std::size_t i2 = i; i2 < n; ++i2) {
    plan.src.push_back(static_cast<std::int64_t>(i2));
    plan.dst.push_back(static_cast<std::int64_t>(m - 1));
    plan.mass.push_back(0.0);
  }
  for (std::size_t j2 = j; j2 < m; ++j2) {
    plan.src.push_back(static_cast<std::int64_t>(n - 1));
    plan.dst.push_back(static_cast<std::int64_t>(j2));
    plan.mass.push_back(0.0);
  }
}

}  // namespace puffer::transport
