// Renyi -> (eps, delta) conversions (see conversion.hpp).
#include "renyi/conversion.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/errors.hpp"
#include "common/rounding.hpp"

namespace puffer::renyi {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kEps = std::numeric_limits<double>::epsilon();

void check(double alpha, double rho, double delta) {
  require(alpha > 1.0 && std::isfinite(alpha), "alpha", alpha, "a finite Renyi order > 1");
  require(rho >= 0.0 && !std::isnan(rho), "rho", rho, "a Renyi bound >= 0 (inf allowed)");
  require(delta > 0.0 && delta < 1.0, "delta", delta, "delta in (0, 1)");
}

// log F(t1, t2) = log E[T^alpha] for the two-point ratio T in {t2 < 1 < t1} with E T = 1:
// P(T = t1) = q = (1 - t2)/(t1 - t2), F = q t1^alpha + (1 - q) t2^alpha.
double log_moment(double alpha, double lt1, double t1, double t2) {
  const double la = std::log1p(-t2) + alpha * lt1;
  if (t2 <= 0.0) return la - std::log(t1);
  const double lb = std::log(t1 - 1.0) + alpha * std::log(t2);
  const double mx = std::max(la, lb);
  return mx + std::log(std::exp(la - mx) + std::exp(lb - mx)) - std::log(t1 - t2);
}

// The largest t1 (as log t1) with log F(t1, t2) <= K_log (F increases with t1: a mean-preserving spread).
double max_log_t1(double alpha, double t2, double K_log) {
  double lo = 0.0, hi = (K_log - std::log1p(-t2)) / (alpha - 1.0) + 1e-9;  // F >= (1 - t2) t1^(alpha-1)
  if (!(hi > 0.0)) return 0.0;
  for (int it = 0; it < 200 && hi - lo > 1e-14 * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (!(mid > lo && mid < hi)) break;
    if (log_moment(alpha, mid, std::exp(mid), t2) <= K_log) lo = mid; else hi = mid;
  }
  return lo;
}

// gamma(t2) = t1 - delta / q: the gamma at which the binary pair (t1*(t2), t2) has E_gamma = delta.
double gamma_at(double alpha, double t2, double K_log, double delta, double* t1_out = nullptr) {
  const double lt1 = max_log_t1(alpha, t2, K_log);
  const double t1 = std::exp(lt1);
  if (t1_out) *t1_out = t1;
  if (!(t1 > 1.0)) return 0.0;
  return t1 * (1.0 - delta / (1.0 - t2)) + delta * t2 / (1.0 - t2);
}

// A certified gamma for the dual point (t2, lambda): with b = -alpha lambda t2^(alpha-1) (the
// function a + b t + lambda t^alpha is then tangent to 0 at t = t2), A1 = sup_{t>=0} (-b t -
// lambda t^alpha) and M = sup_{t>=0} ((1 - b) t - lambda t^alpha), the choice a = max(A1, M - gamma)
// satisfies (t - gamma)_+ <= a + b t + lambda t^alpha for all t >= 0, so
// E[(T - gamma)_+] <= a + b + lambda K <= delta as soon as A1 + b + lambda K <= delta and
// gamma >= M + b + lambda K - delta. Returns that gamma (rounded up), or inf when the point
// is infeasible. Every (t2, lambda) gives a valid gamma; the optimiser only makes it small.
double gamma_dual(double alpha, double t2, double lambda, double K_up, double delta) {
  const double am1 = alpha - 1.0;
  const double b = -alpha * lambda * (t2 > 0.0 ? std::pow(t2, am1) : 0.0);
  if (!(lambda > 0.0) || !std::isfinite(b)) return kInf;
  const double rel_t = 8.0 * kEps * (1.0 + 1.0 / am1);  // relative error of a computed stationary point
  // sup over t >= 0 of the concave g(t) = c1 t - lambda t^alpha, evaluated at its computed
  // maximiser tc, plus the tangent at tc times the distance to the true maximiser, plus rounding
  auto sup_concave = [&](double c1) {
    if (!(c1 > 0.0)) return 0.0;
    const double tc = std::pow(c1 / (alpha * lambda), 1.0 / am1);
    const double ta = std::pow(tc, alpha);
    const double g = c1 * tc - lambda * ta;
    const double dg = c1 - alpha * lambda * (tc > 0.0 ? ta / tc : 0.0);
    const double round = 8.0 * kEps * (std::fabs(c1 * tc) + lambda * ta) +
                         4.0 * kEps * (1.0 + alpha * std::fabs(std::log(std::max(tc, 1e-300)))) * lambda * ta;
    return g + std::fabs(dg) * rel_t * tc + round;
  };
  const double A1 = sup_concave(-b);
  const double lk = lambda * K_up;
  const double S = A1 + b + lk;
  const double err_s = 8.0 * kEps * (std::fabs(A1) + std::fabs(b) + lk);
  if (!(S + err_s <= delta)) return kInf;
  const double M = sup_concave(1.0 - b);
  const double G = M + b + lk - delta;
  if (!std::isfinite(G)) return kInf;
  return round_up(G + err_s + 8.0 * kEps * (std::fabs(M) + std::fabs(b) + lk + delta), 2);
}

// The least certified gamma over lambda for a fixed t2. Feasibility, A1 + b + lambda K <= delta,
// is lambda <= delta / (K - t2^(alpha-1) (alpha - (alpha - 1) t2)) (A1 = (alpha-1) lambda t2^alpha);
// at the optimum it binds, so the search is a golden section in log lambda below that bound.
double best_gamma_at(double alpha, double t2, double K_up, double delta) {
  const double am1 = alpha - 1.0;
  const double p2 = t2 > 0.0 ? std::pow(t2, am1) : 0.0;
  const double den = K_up - p2 * (alpha - am1 * t2);
  if (!(den > 0.0)) return kInf;
  const double lmax = std::log(delta * (1.0 - 1e-12) / den);
  auto f = [&](double ll) { return gamma_dual(alpha, t2, std::exp(ll), K_up, delta); };
  const double gr = 0.6180339887498949;
  double lo = lmax - 10.0, hi = lmax;
  double c = hi - gr * (hi - lo), d = lo + gr * (hi - lo);
  double fc = f(c), fd = f(d);
  double best = std::min({f(lmax), f(lmax - 1e-9), fc, fd});
  for (int it = 0; it < 60; ++it) {
    if (fc <= fd) { hi = d; d = c; fd = fc; c = hi - gr * (hi - lo); fc = f(c); best = std::min(best, fc); }
    else { lo = c; c = d; fc = fd; d = lo + gr * (hi - lo); fd = f(d); best = std::min(best, fd); }
  }
  return best;
}

}  // namespace

double rdp_to_dp_cks(double alpha, double rho, double delta) {
  check(alpha, rho, delta);
  if (std::isinf(rho)) return kInf;
  // log1p(-1/alpha) < 0, decreasing in 1/alpha: take 1/alpha rounded down, the log rounded up
  const double t2 = round_up(std::log1p(-round_down(1.0 / alpha, 1)), 2);
  const double num = round_up(round_up(-std::log(delta), 2) - round_down(std::log(alpha), 2), 1);
  const double am1 = alpha - 1.0;  // exact for alpha <= 2 (Sterbenz), else within half an ulp
  const double t3 = num >= 0.0 ? round_up(num / round_down(am1, 1), 1) : round_up(num / round_up(am1, 1), 1);
  const double e = round_up(round_up(rho + t2, 1) + t3, 1);
  return std::max(e, 0.0);
}

double rdp_to_dp_optimal(double alpha, double rho, double delta) {
  check(alpha, rho, delta);
  const double cks = rdp_to_dp_cks(alpha, rho, delta);
  if (std::isinf(rho)) return kInf;
  if (rho == 0.0) return 0.0;  // D_alpha = 0: P = Q
  const double K_log = (alpha - 1.0) * rho;
  // beyond exp(500) the moment overflows in the dual; the CKS value is used there
  if (!(K_log <= 500.0) || !(K_log >= 1e-12)) return cks;
  const double K_up = round_up(std::exp(round_up(K_log, 2)), 2);
  // primal: maximise gamma(t2) over t2 in [0, 1 - delta) (a scan, then golden section)
  const double top = 1.0 - delta;
  double best_t = 0.0, best_g = gamma_at(alpha, 0.0, K_log, delta);
  double step_lo = 0.0, step_hi = 0.0;
  auto consider = [&](double t, double lo, double hi) {
    const double g = gamma_at(alpha, t, K_log, delta);
    if (g > best_g) { best_g = g; best_t = t; step_lo = lo; step_hi = hi; }
  };
  double prev = 0.0;
  std::vector<double> grid;
  for (int j = 1; j < 64; ++j) grid.push_back(top * j / 64.0);
  for (int k = 7; k < 48; ++k) grid.push_back(top * (1.0 - std::ldexp(1.0, -k)));
  std::sort(grid.begin(), grid.end());
  for (std::size_t j = 0; j < grid.size(); ++j) {
    const double nxt = j + 1 < grid.size() ? grid[j + 1] : top;
    consider(grid[j], prev, nxt);
    prev = grid[j];
  }
  if (best_t > 0.0) {
    const double gr = 0.6180339887498949;
    double lo = step_lo, hi = step_hi;
    double c = hi - gr * (hi - lo), d = lo + gr * (hi - lo);
    double fc = gamma_at(alpha, c, K_log, delta), fd = gamma_at(alpha, d, K_log, delta);
    for (int it = 0; it < 120 && hi - lo > 1e-15 * std::max(hi, 1e-300); ++it) {
      if (fc >= fd) { hi = d; d = c; fd = fc; c = hi - gr * (hi - lo); fc = gamma_at(alpha, c, K_log, delta); }
      else { lo = c; c = d; fc = fd; d = lo + gr * (hi - lo); fd = gamma_at(alpha, d, K_log, delta); }
    }
    consider(fc >= fd ? c : d, lo, hi);
  }
  // dual: golden section over v = log(1 - t2) in the primal's bracket (t2 = 0: the bracket's
  // lower end), each point minimised over lambda; every value is a certified gamma
  double gbest = best_gamma_at(alpha, best_t, K_up, delta);
  if (best_t > 0.0) {
    auto f = [&](double v) { return best_gamma_at(alpha, -std::expm1(v), K_up, delta); };
    const double gr = 0.6180339887498949;
    double lo = std::log1p(-step_hi), hi = step_lo > 0.0 ? std::log1p(-step_lo) : -1e-300;
    if (!(hi > lo)) std::swap(lo, hi);
    double c = hi - gr * (hi - lo), d = lo + gr * (hi - lo);
    double fc = f(c), fd = f(d);
    gbest = std::min({gbest, fc, fd});
    for (int it = 0; it < 50; ++it) {
      if (fc <= fd) { hi = d; d = c; fd = fc; c = hi - gr * (hi - lo); fc = f(c); gbest = std::min(gbest, fc); }
      else { lo = c; c = d; fc = fd; d = lo + gr * (hi - lo); fd = f(d); gbest = std::min(gbest, fd); }
    }
  }
  if (std::isfinite(gbest)) {
    const double e = gbest <= 1.0 ? 0.0 : round_up(std::log(gbest), 2);
    return std::min(e, cks);
  }
  return cks;
}

}  // namespace puffer::renyi
