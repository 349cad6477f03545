// Renyi shift divergences: closed forms (Pierquin et al. 2024, Cor 3.1) and certified log-space quadrature.
// See renyi.hpp for the representation used and logquad.hpp for the integrator.
#include "renyi/renyi.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <boost/math/special_functions/gamma.hpp>

#include "common/errors.hpp"
#include "common/parallel.hpp"
#include "common/rounding.hpp"
#include "renyi/log_terms.hpp"
#include "renyi/logquad.hpp"

namespace puffer::renyi {

// simd_integrands.cpp (Highway dynamic dispatch)
void student_log_integrand_simd(const double* y, std::size_t n, double c, double k, double nu, double alpha,
                                double beta, double base, double* out);
void logistic_log_integrand_simd(const double* y, std::size_t n, double c, double alpha, double beta, double base,
                                 double* out);
void gengauss_log_integrand_simd(const double* y, std::size_t n, double c, double shape, double alpha, double beta,
                                 double base, double* out);

namespace {

using namespace detail;

// ---- standardized symmetric families: m(y), d(y) at y >= 0, c = u/2 ----------------------
struct Sym {
  int fam;
  Shape sh;
  double c;
  double logZ;  // log of the normalizing constant of exp(h)

  inline void md(double y, double& m, double& d) const {
    const double c_ = c;
    switch (fam) {
      case 0: {  // Gaussian
        m = -0.5 * (y * y + c_ * c_);
        d = y * c_;
        return;
      }
      case 1: {  // Laplace
        m = -std::max(y, c_);
        d = std::min(y, c_);
        return;
      }
      case 2: {  // Student-type
        const double A = (y - c_) * (y - c_) / sh.nu, B = (y + c_) * (y + c_) / sh.nu;
        if (!(B < 1e300)) { m = -kInf; d = 0.0; return; }
        // log1p each factor: log((1 + A)(1 + B)) lost ~eps absolute, i.e. k eps / 4 in m, which
        // for large nu (A, B ~ 1/nu) under-reported D by ~2e-12 relative (issue: StudentT(1e6))
        m = -0.25 * sh.k * (std::log1p(A) + std::log1p(B));
        d = 0.25 * sh.k * std::log1p((4.0 * y * c_ / sh.nu) / (1.0 + A));
        return;
      }
      case 3: {  // Logistic: h = -2 log cosh(x/2)
        const double A = 0.5 * (y + c_), B = 0.5 * (y - c_);
        m = -(lcosh(A) + lcosh(B));
        if (y <= 40.0 && c_ <= 40.0) {
          // cosh A - cosh B = 2 sinh(y/2) sinh(c/2): no cancellation for small c
          d = std::log1p(2.0 * std::sinh(0.5 * y) * std::sinh(0.5 * c_) / std::cosh(B));
        } else {
          d = std::min(y, c_) + std::log1p(std::exp(-2.0 * std::fabs(A))) - std::log1p(std::exp(-2.0 * std::fabs(B)));
        }
        return;
      }
      default: {  // GenGaussian, h = -|x|^beta
        const double p = y + c_;
        const double pb = std::pow(p, sh.beta);
        if (!(pb < 1e300)) { m = -kInf; d = 0.0; return; }
        const double r = std::log1p(-2.0 * std::min(y, c_) / p);  // log(|y - c| / (y + c))
        m = -0.5 * (pb + std::pow(std::fabs(y - c_), sh.beta));
        d = -0.5 * pb * std::expm1(sh.beta * r);
        return;
      }
    }
  }
};

double log_normalizer(int fam, const Shape& s) {
  switch (fam) {
    case 0: return -0.5 * std::log(2.0 * M_PI);
    case 1: return -kLn2;
    case 2:  // 1 / int (1 + x^2/nu)^{-k/2} dx = Gamma(k/2) / (sqrt(nu pi) Gamma((k-1)/2))
      return std::log(boost::math::tgamma_delta_ratio(0.5 * s.k, -0.5)) - 0.5 * std::log(s.nu * M_PI);
    case 3: return -kLn4;
    default: return -kLn2 - std::lgamma(1.0 + 1.0 / s.beta);
  }
}

// Folded Renyi integrand (alpha > 1) or KL integrand (kl = true), in log space.
struct SymRenyiFn {
  Sym S;
  double alpha, beta;
  bool kl;
  void operator()(const double* y, std::size_t n, double* out) const {
    if (!kl && n >= 4) {  // vectorised versions of the loop below (simd_integrands.cpp)
      if (S.fam == 2) { student_log_integrand_simd(y, n, S.c, S.sh.k, S.sh.nu, alpha, beta, S.logZ + kLn4, out); return; }
      if (S.fam == 3) { logistic_log_integrand_simd(y, n, S.c, alpha, beta, S.logZ + kLn4, out); return; }
      if (S.fam == 4) { gengauss_log_integrand_simd(y, n, S.c, S.sh.beta, alpha, beta, S.logZ + kLn4, out); return; }
    }
    for (std::size_t i = 0; i < n; ++i) {
      double m, d;
      S.md(y[i], m, d);
      if (!(m > -kInf) || !(d > 0.0)) { out[i] = -kInf; continue; }
      const double ad = alpha * d;
      double t;
      if (kl) t = d <= 20.0 ? std::log(d * std::sinh(d)) : std::log(d) + lsinh(d);
      else if (ad <= 20.0 && beta * d > 1e-100) t = std::log(std::sinh(ad) * std::sinh(beta * d));
      else t = lsinh_prod(alpha, d) + lsinh_prod(beta, d);
      out[i] = S.logZ + m + kLn4 + t;
    }
  }
};

double d_inf(int fam, const Shape& s, double u) {
  if (u == 0.0) return 0.0;
  switch (fam) {
    case 0: return kInf;
    case 1: return round_up(u, 2);
    case 2: return round_up(s.k * std::asinh(0.5 * u / std::sqrt(s.nu)), 8);  // sup_y 2 d(y) at y = sqrt(nu + c^2)
    case 3: return round_up(u, 2);  // h is 1-Lipschitz; sup of the log-ratio is u (limit x -> inf)
    default: return s.beta == 1.0 ? round_up(u, 2) : kInf;
  }
}

double gaussian_closed(double alpha, double u) {
  if (std::isinf(alpha)) return u == 0 ? 0.0 : kInf;
  return round_up(alpha * u * u * 0.5, 8);  // KL (alpha = 1) is u^2/2
}

// Laplace (Pierquin et al. 2024, Cor 3.1), cancellation-free for small alpha*u, log1p form otherwise.
double laplace_closed(double alpha, double u) {
  if (u == 0.0) return 0.0;
  if (std::isinf(alpha)) return round_up(u, 2);
  const double b = alpha - 1.0;
  if (alpha * u < 0.5) {
    // exp(b D) - 1 = alpha b/(2 alpha - 1) sum_{n>=2} u^n [b^{n-1} + (-1)^n alpha^{n-1}] / n!
    double pu = u, pb = 1.0, pa = 1.0, fact = 1.0, sum = 0.0;
    for (int n = 2; n < 80; ++n) {
      pu *= u; pb *= b; pa *= -alpha; fact *= n;
      // pb = b^{n-1}, pa = (-alpha)^{n-1}, and (-1)^n alpha^{n-1} = -(-alpha)^{n-1}
      const double term = pu * (pb - pa) / fact;
      sum += term;
      if (std::fabs(term) <= 1e-18 * std::fabs(sum)) break;
    }
    const double S = alpha / (2.0 * alpha - 1.0) * sum;  // (exp(bD) - 1) / b
    double D;
    if (b == 0.0) D = S;
    else {
      const double x = b * S;
      D = x == 0.0 ? S : S * (std::log1p(x) / x);
    }
    return round_up(D * (1.0 + 64.0 * kEps), 4);
  }
  if (b * u < 700.0) {
    // exp(b D) - 1 = [alpha expm1(b u) + b expm1(-alpha u)] / (2 alpha - 1): both terms are
    // O(b), so divide by b first (stable as alpha -> 1; b = 0 is KL = u + expm1(-u)). For
    // alpha u >= 1/2 the two terms cancel by at most a factor 4.7.
    const double T1 = alpha * (b == 0.0 ? u : std::expm1(b * u) / b);
    const double T2 = std::expm1(-alpha * u);
    const double sum = T1 + T2;
    const double S = sum / (2.0 * alpha - 1.0);
    const double rel = 8.0 * kEps * (std::fabs(T1) + std::fabs(T2)) / sum + 8.0 * kEps;
    const double x = b * S;
    const double D = (x == 0.0) ? S : S * (std::log1p(x) / x);
    return round_up(D * (1.0 + rel), 4);
  }
  // large b u: D = u + [log(alpha/(2 alpha - 1)) + log1p((b/alpha) e^{-(2 alpha - 1) u})] / b,
  // the bracket is O(1) and b u >= 700, so there is no cancellation against u.
  const double t1 = std::log(alpha / (2.0 * alpha - 1.0));
  const double t2 = std::log1p((b / alpha) * std::exp(-(2.0 * alpha - 1.0) * u));
  const double D = u + (t1 + t2) / b;
  const double err = 8.0 * kEps * (std::fabs(t1) + std::fabs(t2) + 1.0) / b + 8.0 * kEps * (u + std::fabs(D));
  return round_up(D + err, 4);
}

// m(y), d(y) at y = c + sigma w (w >= 0; sigma = -1 covers y in [0, c], w <= c): the same
// quantities as Sym, computed from w = |y - c| and P = y + c = 2c + sigma w instead of from y.
// Near the peak of a large shift (y ~ c >> 1) y itself is known only to ulp(c), and the
// quadrature nodes y then sit up to ulp(c) away from where they should be: a peak of width 1
// at c = 5e19 was integrated 29% low and at c = 5e99 missed altogether (Cauchy). Every
// quantity below is a function of w and P with relative rounding error only; logs of squares
// stay finite for P up to the float range.
struct SymW {
  int fam;
  Shape sh;
  double c;
  int sigma;
  double logZ;
  double sqrt_nu = 1.0, log_nu = 0.0;

  // log(1 + (x / sqrt(nu))^2) for x >= 0, without overflow
  inline double l1p_sq(double x) const {
    const double q = x / sqrt_nu;
    if (q < 1e150) return std::log1p(q * q);
    return 2.0 * std::log(q) + std::log1p(1.0 / q / q);
  }

  inline void md(double w, double& m, double& d) const {
    const double c_ = c;
    if (sigma < 0 && !(w < c_)) { m = -kInf; d = 0.0; return; }  // y <= 0: the other half of the fold
    const double y = sigma > 0 ? c_ + w : c_ - w;
    const double P = sigma > 0 ? 2.0 * c_ + w : 2.0 * c_ - w;  // y + c
    const double mn = sigma > 0 ? c_ : y;                      // min(y, c)
    switch (fam) {
      case 0: {  // Gaussian: m = -(w^2 + P^2)/4, d = y c
        m = -0.25 * (w * w + P * P);
        d = y * c_;
        return;
      }
      case 1: {  // Laplace: m = -(w + P)/2, d = min(y, c)
        m = -0.5 * (w + P);
        d = mn;
        return;
      }
      case 2: {  // Student-type: (1 + B)/(1 + A) = 1 + r, r = 4 y c / (nu (1 + A)), A = w^2/nu, B = P^2/nu
        const double lA = l1p_sq(w), lB = l1p_sq(P);
        m = -0.25 * sh.k * (lA + lB);
        const double lr = kLn4 + std::log(y) + std::log(c_) - log_nu - lA;
        d = 0.25 * sh.k * softplus(lr);
        return;
      }
      case 3: {  // Logistic: (y + c)/2 = c + sigma w/2, |y - c|/2 = w/2
        const double A = c_ + 0.5 * sigma * w;
        m = -(lcosh(A) + lcosh(0.5 * w));
        if (y <= 40.0 && c_ <= 40.0) d = std::log1p(2.0 * std::sinh(0.5 * y) * std::sinh(0.5 * c_) / std::cosh(0.5 * w));
        else d = mn + std::log1p(std::exp(-2.0 * A)) - std::log1p(std::exp(-w));
        return;
      }
      default: {  // GenGaussian: d = (P^b - w^b)/2 = -P^b expm1(b log(w/P)) / 2
        const double pb = std::pow(P, sh.beta);
        const double r = (2.0 * mn < 0.5 * P) ? std::log1p(-2.0 * mn / P) : std::log(w / P);
        m = -0.5 * (pb + std::pow(w, sh.beta));
        d = -0.5 * pb * std::expm1(sh.beta * r);
        return;
      }
    }
  }
};

// log(1 - e^{-2x}) for x > 0 (= log(2 sinh x) - x), from s d where s d may be subnormal.
inline double lm1_prod(double sc, double d) {
  const double x = sc * d;
  if (x < 1e-100) return kLn2 + std::log(sc) + std::log(d);
  return x > 0.35 ? std::log1p(-std::exp(-2.0 * x)) : std::log(-std::expm1(-2.0 * x));
}

// Folded integrand of SymRenyiFn in the variable w, less a constant C (scalar: large shifts are
// rare). With lsinh(x) = x - log 2 + log(1 - e^{-2x}) and m + (2 alpha - 1) d = alpha h(w) +
// (1 - alpha) h(P), the log-integrand is exactly
//   logZ + alpha h(w) + (1 - alpha) h(P) + log(1 - e^{-2 alpha d}) + log(1 - e^{-2 (alpha-1) d}),
// and for the logistic and generalized Gaussian families (1 - alpha) h(P) is split into a
// constant, (alpha - 1) (2c)^b resp. 2 (alpha - 1)(c - log 2), and a part computed to relative
// accuracy (u^b expm1(b log1p(sigma w / 2c)), resp. (alpha - 1)(sigma w + 2 log1p(e^{-P}))).
// Summed directly, m and alpha d are ~ alpha u^b and cancel to the log-integrand: rounding of
// 1e-16 u^b (1e285 at u = 1e300) swamped its shape. The constant goes into log J at the end
// (its rounding is then relative to D). KL: log(4 e^m d sinh d) = log 2 + h(w) + log d + log(1 - e^{-2d}).
struct SymRenyiFnW {
  SymW S;
  double alpha, beta;
  bool kl;
  double C = 0.0;     // the constant taken out
  double Cb = 0.0;    // generalized Gaussian: (2c)^b

  void init() {
    C = 0.0;
    if (kl) return;
    if (S.fam == 4) {
      Cb = std::pow(2.0 * S.c, S.sh.beta);
      C = S.logZ + beta * Cb;
    } else if (S.fam == 3) {
      C = S.logZ + 2.0 * beta * (S.c - kLn2);
    }
  }

  // log-integrand - C at w; *mag: the size of the terms summed to it (their rounding is ~eps each)
  inline double value(double w, double* mag) const {
    double m, d;
    S.md(w, m, d);
    if (!(m > -kInf) || !(d > 0.0)) { *mag = 0.0; return -kInf; }
    if (kl && (S.fam == 3 || S.fam == 4)) {
      const double hw = S.fam == 4 ? -std::pow(w, S.sh.beta) : -2.0 * lcosh(0.5 * w);
      const double ld = std::log(d), l1 = lm1_prod(1.0, d);
      *mag = std::fabs(S.logZ) + std::fabs(hw) + std::fabs(ld) + std::fabs(l1) + 8.0;
      return S.logZ + kLn2 + hw + ld + l1;
    }
    if (S.fam == 4) {
      // (A) the split form; (B) m + (2 alpha - 1) d - C with d free of cancellation. A wins near
      // w = 0 (alpha -> 1: B sums terms ~ u^b), B at a peak far out (large alpha: A sums terms
      // alpha w^b that cancel to ~ w^b); the node takes the one with the smaller rounding.
      const double b = S.sh.beta;
      const double E = std::expm1(b * std::log1p(S.sigma * w / (2.0 * S.c)));
      const double t1 = beta * Cb * E, t2 = alpha * std::pow(w, b);
      const double l1 = lm1_prod(alpha, d), l2 = lm1_prod(beta, d);
      const double magA = std::fabs(t1) + t2 + std::fabs(l1) + std::fabs(l2) + 8.0;
      const double magB = std::fabs(m) + (2.0 * alpha - 1.0) * d + std::fabs(C) + std::fabs(l1) + std::fabs(l2) + 8.0;
      if (magA <= magB) { *mag = magA; return t1 - t2 + l1 + l2; }
      *mag = magB;
      return (S.logZ + m + (2.0 * alpha - 1.0) * d - C) + l1 + l2;
    }
    if (S.fam == 3) {
      const double A = S.c + 0.5 * S.sigma * w;
      const double t1 = beta * (S.sigma * w + 2.0 * std::log1p(std::exp(-2.0 * A)));
      const double t2 = 2.0 * alpha * lcosh(0.5 * w);
      const double l1 = lm1_prod(alpha, d), l2 = lm1_prod(beta, d);
      *mag = std::fabs(t1) + t2 + std::fabs(l1) + std::fabs(l2) + 8.0;
      return t1 - t2 + l1 + l2;
    }
    double t;
    if (kl) t = d <= 20.0 ? std::log(d * std::sinh(d)) : std::log(d) + lsinh(d);
    else t = lsinh_prod(alpha, d) + lsinh_prod(beta, d);
    *mag = std::fabs(S.logZ) + std::fabs(m) + (kl ? 1.0 : alpha) * std::fabs(d) + 8.0;
    return S.logZ + m + kLn4 + t;
  }
  void operator()(const double* w, std::size_t n, double* out) const {
    double mag;
    for (std::size_t i = 0; i < n; ++i) out[i] = value(w[i], &mag);
  }
  double magnitude(double w) const {
    double mag;
    value(w, &mag);
    return mag;
  }
};

// The y-space integrand's term sizes (for the rounding noise and margin).
struct SymMag {
  const Sym& S;
  double alpha;
  bool kl;
  double magnitude(double y) const {
    double m, d;
    S.md(y, m, d);
    return std::fabs(S.logZ) + std::fabs(m) + (kl ? 1.0 : alpha) * std::fabs(d) + 8.0;
  }
};

// Up to this half-shift c the folded integral is integrated in y (vectorised, SymRenyiFn): the
// nodes near the peak at y = c are then within ulp(2) = 4e-16 of where the rule puts them,
// below 1e-13 of a peak width >= 1e-2 (alpha <= 1e4). Beyond, it is split at the peak's centre
// and integrated in w = |y - c| (SymW) -- unless the peak is wide and the terms small enough
// for y to stay exact (y_space below: the common moderate shifts keep the vectorised path).
constexpr double kSplitC = 2.0;

bool y_space(int fam, const Shape& s, double alpha, double c) {
  if (c <= kSplitC) return true;
  // the peak's width is >= ~1 / alpha; ulp(c) / width <= 1e-14 needs c <= 45 / alpha
  if (c > 45.0 / std::max(alpha, 1.0)) return false;
  // and the log-integrand's terms (its rounding, relative in D) at most ~1e3
  const double a = std::max(alpha, 1.0) + 1.0;
  switch (fam) {
    case 2: return a * s.k * std::log1p(4.0 * c * c / s.nu) <= 1e3;
    case 3: return a * 2.0 * c <= 1e3;
    case 4: return a * std::pow(2.0 * c, s.beta) <= 1e3;
    default: return a * c * c <= 1e3;
  }
}
// Absolute rounding error of the log-integrand (at its peak) up to which the quadrature is
// trusted: its values are then within e^0.25 of the exact ones and the rounding margin (8x the
// noise) covers them. Larger noise is accepted only where log J is so large that the margin is
// below 1e-9 of it (generalized Gaussian at alpha = 1e4: the terms alpha u^b cancel to a log J
// of 1e16, off by ~1e3 absolute -- 1e-13 relative in D). Beyond both the caller falls back to a
// closed-form upper bound (GenGaussian(1.0001) at u = 1e300 had noise 1e285 and an integrand
// zeroed near its peak: 4e-323 for a divergence of 1e300).
constexpr double kMaxNoise = 0.25;

struct HalfResult {
  double logI = -kInf;  // log of the upper bound exp(M) (Q + err)
  double margin = 0.0;  // rounding margin to add to log J
};

// Integrates exp(f) over a half line; `mag` gives the size of the terms summed into f at a point.
template <class Mag, class Fn>
HalfResult integrate_half(const Mag& mag, const Fn& f, const std::vector<double>& kinks, double scale_hint, double u,
                          double C = 0.0, double min_scan = 1e-300) {
  LogQuadOptions opt;
  opt.half_line = true;
  opt.scale_hint = scale_hint;
  opt.min_scan = min_scan;
  auto noise = [&](double y) { return 8.0 * kEps * mag.magnitude(y); };
  opt.noise_at = noise;
  LogQuadResult r = integrate_log(f, kinks, opt);
  HalfResult h;
  if (r.unbounded) { h.logI = kInf; return h; }  // not reachable for the shipped families; +inf is the safe side
  if (!(r.Q + r.err > 0.0)) return h;
  h.logI = r.M + std::log(r.Q + r.err);
  if (!(noise(r.y_peak) <= std::max(kMaxNoise, 1e-9 * std::fabs(h.logI + C))))
    throw NumericalFailure("renyi quadrature: log-integrand rounding " + to_str(noise(r.y_peak)) + " at u=" + to_str(u) +
                           " (ill-conditioned)");
  // rounding margin: relative error of each integrand value near the peak
  h.margin = 2e-13 + 64.0 * kEps * (mag.magnitude(r.y_peak) + std::fabs(r.M) + 32.0);
  return h;
}

double quad_divergence(int fam, const Shape& s, double alpha, double u) {
  const bool kl = (alpha == 1.0);
  const double beta = alpha - 1.0;
  const double c = 0.5 * u;
  const double logZ = log_normalizer(fam, s);
  double logJ, margin;
  if (y_space(fam, s, alpha, c)) {
    Sym S{fam, s, c, logZ};
    SymRenyiFn f{S, alpha, beta, kl};
    std::vector<double> kinks;
    if (fam == 1 || fam == 4) kinks.push_back(c);  // h not smooth at 0: the shifted kink
    const HalfResult h = integrate_half(SymMag{S, alpha, kl}, f, kinks, std::max(c, 1.0), u);
    logJ = h.logI;
    margin = h.margin;
  } else {
    // y >= c (sigma = +1) and y in [0, c] (sigma = -1), each a half line in w; the second
    // integrand is 0 beyond w = c, where it meets zero with a vanishing slope (the folded
    // integrand is even in y), so no breakpoint is needed there
    double l[2], mg[2];
    for (int k = 0; k < 2; ++k) {
      SymW S{fam, s, c, k == 0 ? 1 : -1, logZ};
      if (fam == 2) { S.sqrt_nu = std::sqrt(s.nu); S.log_nu = std::log(s.nu); }
      SymRenyiFnW f{S, alpha, beta, kl};
      f.init();
      if (std::isinf(f.C)) return kInf;  // (alpha - 1) u^b beyond the float range: so is D
      // the w-integrands are mostly largest at w = 0, which need not be located finer than 1e-18
      const HalfResult h = integrate_half(f, f, {}, 1.0, u, f.C, 1e-18);
      l[k] = h.logI + f.C;
      mg[k] = h.margin + 4.0 * kEps * std::fabs(f.C);
    }
    const double hi = std::max(l[0], l[1]), lo = std::min(l[0], l[1]);
    logJ = hi == -kInf ? -kInf : hi + std::log1p(std::exp(lo - hi));
    margin = std::max(mg[0], mg[1]) + 4.0 * kEps * std::fabs(logJ);
  }
  if (logJ == kInf) return kInf;
  if (!(logJ > -kInf)) throw NumericalFailure("renyi quadrature: integrand vanished (underflow) at u=" + to_str(u));
  return finish_divergence(logJ + margin, kl, beta);
}

// Closed-form upper bounds used where the quadrature cannot be certified: D_alpha <= D_inf
// (non-decreasing in alpha) where that is finite, the convexity bound for the generalized
// Gaussian; otherwise none (NaN).
double fallback_bound(int family, const Shape& s, double alpha, double u) {
  const double dinf = d_inf(family, s, u);
  if (std::isfinite(dinf)) return dinf;
  if (family == 4 && s.beta > 1.0) return gengauss_shift_bound(s.beta, alpha, u);
  return std::numeric_limits<double>::quiet_NaN();
}

// Whether the forced quadrature of a closed-form family is hopeless at shift u: its folded
// terms are ~ alpha u^2 (Gaussian) or alpha u (Laplace). (The other families take their large
// terms out exactly, SymRenyiFnW, and are checked at the peak.)
bool ill_conditioned(int family, double alpha, double u) {
  const double a = std::max(alpha, 1.0) + 1.0;
  if (family == 0) return 8.0 * kEps * a * u * u > kMaxNoise;
  if (family == 1) return 8.0 * kEps * a * u > kMaxNoise;
  return false;
}

}  // namespace

// Upper bound on s_alpha for the generalized Gaussian h = -|x|^b, b > 1, at any shift, by
// convexity: |t + u|^b <= l^(1-b) u^b + (1-l)^(1-b) |t|^b for l in (0, 1), so with x = t + u
//   J = Z int exp(-alpha |t|^b + (alpha - 1) |t + u|^b) dt <= exp((alpha - 1) l^(1-b) u^b) kappa^(-1/b),
//   kappa = alpha - (alpha - 1) (1 - l)^(1-b) > 0   (Z int exp(-kappa |t|^b) dt = kappa^(-1/b)),
// i.e. D <= l^(1-b) u^b - log(kappa) / (b (alpha - 1)) (KL: l^(1-b) u^b + ((1-l)^(1-b) - 1)/b,
// E|t|^b = 1/b). Used where the quadrature cannot be certified; for large u it is within
// ~1e-11 relative of s_alpha (the golden section below picks l).
double gengauss_shift_bound(double b, double alpha, double u) {
  require(b > 1.0 && std::isfinite(b), "beta", b, "a finite shape beta > 1");
  require(alpha >= 1.0 && std::isfinite(alpha), "alpha", alpha, "a finite Renyi order >= 1");
  require(u >= 0.0, "u", u, "a standardized shift >= 0");
  if (u == 0.0) return 0.0;
  if (std::isinf(u)) return kInf;
  const bool kl = (alpha == 1.0);
  const double ab = alpha - 1.0;
  const double lu = b * std::log(u);
  // mu = 1 - l = exp(t); kappa > 0 needs t > log((alpha-1)/alpha) / (b - 1) (= -inf for KL)
  const double tmin = kl ? -kInf : std::log(ab / alpha) / (b - 1.0);
  auto bound = [&](double t) {
    const double mu = std::exp(t);
    const double first = std::exp((1.0 - b) * std::log1p(-mu) + lu);
    double second;
    if (kl) second = std::expm1((1.0 - b) * t) / b;
    else {
      const double kappa = alpha - ab * std::exp((1.0 - b) * t);
      if (!(kappa > 0.0)) return kInf;
      second = -std::log(kappa) / (b * ab);
      // rounding of kappa (a difference of terms up to alpha): relative alpha eps / kappa
      second += 8.0 * kEps * (alpha / kappa + std::fabs(std::log(kappa))) / (b * ab);
    }
    return first * (1.0 + 16.0 * kEps) + second + 8.0 * kEps * std::fabs(second);
  };
  // golden section on t in (tmin, 0) (in (-745, 0) when tmin is below the float range)
  double lo = std::max(tmin, -745.0), hi = -1e-300;
  if (std::isfinite(tmin)) lo = tmin + 1e-9 * std::max(1.0, std::fabs(tmin));
  if (!(lo < hi)) lo = hi - 1.0;
  const double g = 0.6180339887498949;
  double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
  double f1 = bound(x1), f2 = bound(x2);
  double best = std::min(f1, f2);
  for (int it = 0; it < 120; ++it) {
    if (f1 <= f2) { hi = x2; x2 = x1; f2 = f1; x1 = hi - g * (hi - lo); f1 = bound(x1); }
    else { lo = x1; x1 = x2; f1 = f2; x2 = lo + g * (hi - lo); f2 = bound(x2); }
    best = std::min(best, std::min(f1, f2));
  }
  return round_up(best, 8);
}

void check_shape(int family, const Shape& s) {
  require(family >= 0 && family <= 4, "family", family, "a family code in 0..4");
  if (family == 2) {
    require(std::isfinite(s.k) && s.k > 1.0, "k", s.k, "a finite tail exponent k > 1");
    require(std::isfinite(s.nu) && s.nu > 0.0, "nu", s.nu, "a finite nu > 0");
  }
  if (family == 4) require(std::isfinite(s.beta) && s.beta >= 1.0, "beta", s.beta, "a finite beta >= 1");
}

double shift_divergence(int family, const Shape& s, double alpha, double u, bool force_quadrature) {
  check_shape(family, s);
  require(alpha >= 1.0, "alpha", alpha, "a Renyi order >= 1 (1 = KL, inf allowed)");
  require(u >= 0.0, "u", u, "a standardized shift >= 0");
  if (u == 0.0) return 0.0;
  // a shift beyond the float range of scales (v / scale overflowed): +inf is an upper bound, and
  // the value for every shipped family (s_alpha grows without bound in u)
  if (std::isinf(u)) return kInf;
  if (std::isinf(alpha)) return d_inf(family, s, u);
  if (!force_quadrature) {
    if (family == 0) return gaussian_closed(alpha, u);
    if (family == 1) return laplace_closed(alpha, u);
    if (family == 4 && s.beta == 1.0) return laplace_closed(alpha, u);
    if (family == 4 && s.beta == 2.0) return gaussian_closed(alpha, u * std::sqrt(2.0) * (1.0 + 2.0 * kEps));
  }
  // Shifts below 1e-300 scales: the integrand's d(y) ~ u y leaves the normal range. The
  // log-concave families (logistic, generalized Gaussian beta >= 1) have s_alpha non-decreasing
  // in u (a monotone likelihood ratio), so the value at u = 1e-300 (below the smallest
  // subnormal for every alpha) bounds it; the Student-type families take D_inf ~ k u / (2 sqrt nu).
  if (u < 1e-300 && !force_quadrature) {
    if (family != 2) return shift_divergence(family, s, alpha, 1e-300);
    return d_inf(family, s, u);
  }
  if (ill_conditioned(family, alpha, u)) {
    if (force_quadrature)
      throw NumericalFailure("renyi quadrature: shift u=" + to_str(u) + " too large for the log-integrand");
  }
  double q;
  try {
    q = quad_divergence(family, s, alpha, u);
  } catch (const NumericalFailure&) {
    // A quadrature that cannot be certified: a closed-form upper bound where the family has one.
    if (force_quadrature) throw;
    const double fb = fallback_bound(family, s, alpha, u);
    if (std::isnan(fb)) throw;
    return fb;
  }
  // D_inf caps every order (the smaller of two upper bounds is one; for the largest shifts of
  // the heavy-tailed families it can be the tighter)
  if (!force_quadrature) {
    const double dinf = d_inf(family, s, u);
    if (dinf < q) return dinf;
  }
  return q;
}

void shift_divergence_batch(int family, const Shape& s, const double* alpha, const double* u, double* out,
                            std::size_t n, unsigned threads, bool force_quadrature) {
  check_shape(family, s);
  for (std::size_t i = 0; i < n; ++i) {
    require(alpha[i] >= 1.0, "alpha", alpha[i], "a Renyi order >= 1 (1 = KL, inf allowed)");
    require(u[i] >= 0.0, "u", u[i], "a standardized shift >= 0 (inf: beyond the float range, D = inf)");
  }
  const bool cheap = !force_quadrature && (family <= 1 || (family == 4 && (s.beta == 1.0 || s.beta == 2.0)));
  const std::size_t chunk = cheap ? 4096 : 8;
  const std::size_t n_tasks = (n + chunk - 1) / chunk;
  if (n_tasks <= 1) {
    for (std::size_t i = 0; i < n; ++i) out[i] = shift_divergence(family, s, alpha[i], u[i], force_quadrature);
    return;
  }
  parallel_for(n_tasks, threads, [&](std::size_t t) {
    const std::size_t hi = std::min(n, (t + 1) * chunk);
    for (std::size_t i = t * chunk; i < hi; ++i) out[i] = shift_divergence(family, s, alpha[i], u[i], force_quadrature);
  });
}

double max_shift(int family, const Shape& s, double alpha, double eps) {
  check_shape(family, s);
  require(alpha >= 1.0, "alpha", alpha, "a Renyi order >= 1 (inf allowed)");
  require(eps >= 0.0 && !std::isnan(eps), "eps", eps, "a target eps >= 0");
  if (eps == 0.0) return 0.0;
  if (std::isinf(eps)) return kInf;
  auto D = [&](double u) { return shift_divergence(family, s, alpha, u); };
  double u0;
  if (std::isinf(alpha)) {
    if (std::isinf(d_inf(family, s, 1.0))) return 0.0;  // D_inf = inf for every u > 0
    u0 = (family == 2) ? 2.0 * std::sqrt(s.nu) * std::sinh(eps / s.k) : eps;
    for (int i = 0; i < 200 && D(u0) > eps; ++i) u0 *= (1.0 - 4.0 * kEps);
    return u0;
  }
  if (family == 0) {
    u0 = std::sqrt(2.0 * eps / alpha);
    for (int i = 0; i < 200 && D(u0) > eps; ++i) u0 *= (1.0 - 4.0 * kEps);
    return u0;
  }
  // Root of g(t) = log D(e^t) - log eps (increasing in t = log u). Secant steps in (t, g)
  // from a Gaussian-like guess until the root is bracketed, then Illinois. Every evaluation is
  // a certified upper bound, so any u with g <= 0 is safe; we return the largest such u found,
  // stopping once D(u_lo) >= eps (1 - 1e-11) or the bracket is 1e-12 wide in log u.
  const double leps = std::log(eps);
  auto g = [&](double t) {
    // the sign decides safety, so it must agree with v <= eps exactly (log can round to 0)
    const double v = D(std::exp(t));
    if (!(v > 0)) return -kInf;
    const double r = std::log(v) - leps;
    return v <= eps ? std::min(r, 0.0) : std::max(r, 1e-300);
  };
  double t0 = std::log(std::min(std::max(std::sqrt(2.0 * eps / alpha), 1e-8), 1e8));
  double g0 = g(t0);
  double tlo = -kInf, glo = -kInf, thi = kInf, ghi = kInf;
  auto record = [&](double t, double gv) {
    if (gv <= 0) { if (t > tlo) { tlo = t; glo = gv; } }
    else if (t < thi) { thi = t; ghi = gv; }
  };
  record(t0, g0);
  double tp = t0, gp = g0;
  double t1 = std::isfinite(g0) ? t0 - g0 / 2.0 : t0 + 2.0;  // D ~ u^2 for small shifts
  for (int it = 0; it < 60 && !(std::isfinite(tlo) && std::isfinite(thi)); ++it) {
    t1 = std::min(std::max(t1, tp - 6.0), tp + 6.0);
    if (t1 > 690.0) return kInf;
    if (t1 < -690.0) return 0.0;
    double g1 = g(t1);
    record(t1, g1);
    double tn;
    if (std::isfinite(g1) && std::isfinite(gp) && g1 != gp) tn = t1 - g1 * (t1 - tp) / (g1 - gp);
    else tn = g1 > 0 ? t1 - 2.0 : t1 + 2.0;
    if (!std::isfinite(tn) || tn == t1) tn = g1 > 0 ? t1 - 1.0 : t1 + 1.0;
    tp = t1; gp = g1; t1 = tn;
  }
  if (!std::isfinite(tlo)) return 0.0;
  if (!std::isfinite(thi)) return kInf;
  int side = 0;
  for (int it = 0; it < 200; ++it) {
    if (thi - tlo <= 1e-12 || glo >= -2e-11) break;
    double t;
    if (std::isfinite(glo) && std::isfinite(ghi) && ghi > glo) t = (tlo * ghi - thi * glo) / (ghi - glo);
    else t = 0.5 * (tlo + thi);
    const double w = thi - tlo;
    t = std::min(std::max(t, tlo + 1e-4 * w), thi - 1e-4 * w);
    const double gm = g(t);
    if (gm <= 0) {
      tlo = t; glo = gm;
      if (side == -1) ghi *= 0.5;
      side = -1;
    } else {
      thi = t; ghi = gm;
      if (side == +1) glo *= 0.5;
      side = +1;
    }
  }
  return std::exp(tlo);
}

// ---- user densities ------------------------------------------------------------------------
namespace {

struct CustomFn {
  const LogPdfBatch& lp;
  double c, alpha, beta;
  bool sym, kl;
  mutable std::vector<double> buf, vals;
  mutable bool infinite = false;
  void operator()(const double* y, std::size_t n, double* out) const {
    buf.resize(2 * n);
    vals.resize(2 * n);
    for (std::size_t i = 0; i < n; ++i) { buf[i] = y[i] - c; buf[n + i] = y[i] + c; }
    lp(buf.data(), 2 * n, vals.data());
    for (std::size_t i = 0; i < n; ++i) {
      const double a = vals[i], b = vals[n + i];  // a = log p(x - u), b = log p(x), x = y + c
      for (double v : {a, b}) {
        if (std::isnan(v) || v == kInf)
          throw InvalidArgument("logpdf", "returned " + to_str(v) + " at x = " + to_str(std::isnan(a) || a == kInf ? buf[i] : buf[n + i]),
                                "finite log-density values (or -inf outside the support)");
      }
      if (a == -kInf && b == -kInf) { out[i] = -kInf; continue; }
      if (sym) {
        if (a == -kInf || b == -kInf) { infinite = true; out[i] = -kInf; continue; }
        const double m = 0.5 * (a + b), d = std::fabs(0.5 * (a - b));
        if (d == 0.0) { out[i] = -kInf; continue; }
        out[i] = m + kLn4 + (kl ? std::log(d) + lsinh(d) : lsinh(alpha * d) + lsinh(beta * d));
        continue;
      }
      if (b == -kInf) { infinite = true; out[i] = -kInf; continue; }  // p(x) = 0 < p(x - u)
      out[i] = jensen_log(a, b, beta, kl);
    }
  }
};

struct MassFn {
  const LogPdfBatch& lp;
  void operator()(const double* y, std::size_t n, double* out) const {
    lp(y, n, out);
    for (std::size_t i = 0; i < n; ++i)
      if (std::isnan(out[i]) || out[i] == kInf)
        throw InvalidArgument("logpdf", "returned " + to_str(out[i]) + " at x = " + to_str(y[i]),
                              "finite log-density values (or -inf outside the support)");
  }
};

}  // namespace

double custom_shift_divergence(const LogPdfBatch& logpdf, bool symmetric, double alpha, double u, double scale_hint,
                               const double* breaks, std::size_t n_breaks) {
  require(alpha >= 1.0 && std::isfinite(alpha), "alpha", alpha, "a finite Renyi order >= 1 for a user density");
  require(!std::isnan(u), "u", u, "a standardized shift (inf: beyond the float range)");
  if (u == 0.0) return 0.0;
  if (std::isinf(u)) return kInf;  // an upper bound (v / scale overflowed)
  if (symmetric) u = std::fabs(u);
  const bool kl = (alpha == 1.0);
  CustomFn f{logpdf, 0.5 * u, alpha, alpha - 1.0, symmetric, kl, {}, {}, false};
  LogQuadOptions opt;
  opt.half_line = symmetric;
  opt.scale_hint = std::max({0.5 * std::fabs(u), scale_hint, 1e-300});
  // the integrand at y evaluates p(y - c) and p(y + c): a break b of p sits at y = b +- c
  std::vector<double> kinks;
  for (std::size_t i = 0; i < n_breaks; ++i) {
    require(std::isfinite(breaks[i]), "breakpoints", breaks[i], "finite breakpoints");
    for (double y : {breaks[i] + 0.5 * u, breaks[i] - 0.5 * u}) kinks.push_back(symmetric ? std::fabs(y) : y);
  }
  LogQuadResult r = integrate_log(f, kinks, opt);
  if (f.infinite || r.unbounded) return kInf;
  if (!(r.Q + r.err > 0.0)) throw NumericalFailure("renyi quadrature (custom density): integrand vanished at u=" + to_str(u));
  const double margin = 1e-12 + 64.0 * kEps * (std::fabs(r.M) + 40.0) * (kl ? 1.0 : alpha);
  return finish_divergence(r.M + std::log(r.Q + r.err) + margin, kl, alpha - 1.0);
}

void custom_mass(const LogPdfBatch& logpdf, double scale_hint, double* mass, double* err, const double* breaks,
                 std::size_t n_breaks) {
  MassFn f{logpdf};
  LogQuadOptions opt;
  opt.half_line = false;
  opt.scale_hint = scale_hint > 0 ? scale_hint : 1.0;
  opt.rtol = 1e-12;
  std::vector<double> kinks(breaks, breaks + n_breaks);
  LogQuadResult r = integrate_log(f, kinks, opt);
  if (r.unbounded) { *mass = kInf; *err = 0.0; return; }
  if (!(r.M > -kInf)) { *mass = 0.0; *err = 0.0; return; }
  const double e = std::exp(r.M);
  *mass = e * r.Q;
  *err = e * r.err;
}

}  // namespace puffer::renyi
