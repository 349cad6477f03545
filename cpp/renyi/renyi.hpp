// Renyi shift divergences of additive noise: s_alpha(zeta, v) = D_alpha(zeta(. - v) || zeta)
// (Pierquin et al. 2024), as certified upper bounds.
//
// Families are standardized (scale 1); the facade passes u = |v| / scale (location-scale
// invariance). Closed forms: Gaussian alpha u^2 / 2 and Laplace (Cor 3.1, evaluated in a
// cancellation-free form, Pierquin et al. 2024 "Numerics for Laplace"); every other family by the
// log-space quadrature of logquad.hpp applied to the *cancellation-free* representation
//
//   exp((alpha-1) D) - 1 = int_0^inf 4 e^{m(y)} sinh(alpha d(y)) sinh((alpha-1) d(y)) dy,
//   m = (h(y - u/2) + h(y + u/2)) / 2,  d = (h(y - u/2) - h(y + u/2)) / 2,  h = log density,
//
// valid for every symmetric density (fold the centred integrand y -> -y and use
// cosh A - cosh B = 2 sinh((A+B)/2) sinh((A-B)/2)); the integrand is >= 0, so tiny
// divergences keep full relative accuracy, and alpha -> 1 gives KL = int 4 e^m d sinh d.
// For u/2 > 2 the fold is integrated in w = |y - u/2| on y >= u/2 and y <= u/2 (two half
// lines), every term a function of w and y + u/2 with relative rounding only (in y the nodes
// near the peak at u/2 were ulp(u) apart: Cauchy at u = 1e100 came out 4e-53 of its value), and
// for the logistic / generalized Gaussian families the large constant of the log-integrand,
// (alpha - 1) u^b or (alpha - 1)(u - 2 log 2), is taken out exactly.
// For a non-symmetric (user) density the same idea gives the pointwise non-negative form
//   e^{m} e^{d} [expm1((alpha-1) 2d) + (alpha-1) expm1(-2d)]   (Jensen: >= 0).
// D = log1p(J) / (alpha - 1) with J bounded above by exp(M) (Q + err) (1 + rounding margin),
// formed in log space where (alpha - 1) D is below the float range. Where the quadrature cannot
// be certified (its log-integrand's rounding too large, or no convergence) the answer is a
// closed-form upper bound: D_inf (Student-type, logistic) or a convexity bound (generalized
// Gaussian); D_inf also caps the quadrature's value.
#pragma once
#include <cstddef>
#include <functional>

namespace puffer::renyi {

enum class Family : int {
  Gaussian = 0,     // h = -x^2/2
  Laplace = 1,      // h = -|x|
  StudentT = 2,     // h = -(k/2) log1p(x^2/nu); Student-t: k = nu + 1; GenCauchy: nu = 1
  Logistic = 3,     // h = -2 log cosh(x/2)
  GenGaussian = 4,  // h = -|x|^beta, beta >= 1
};

struct Shape {
  double k = 0.0;     // StudentT: tail exponent k > 1
  double nu = 0.0;    // StudentT: nu > 0
  double beta = 0.0;  // GenGaussian: beta >= 1
};

// Validates the family code and shape (throws InvalidArgument).
void check_shape(int family, const Shape& s);

// Certified upper bound on D_alpha for the standardized family at shift u >= 0.
// alpha in [1, inf]: alpha == 1 gives KL(zeta(. - u) || zeta); alpha == inf gives D_inf.
// force_quadrature: use the quadrature even where a closed form exists (for tests).
double shift_divergence(int family, const Shape& s, double alpha, double u, bool force_quadrature = false);

// out[i] = shift_divergence(family, s, alpha[i], u[i]) on the thread pool.
void shift_divergence_batch(int family, const Shape& s, const double* alpha, const double* u, double* out,
                            std::size_t n, unsigned threads, bool force_quadrature = false);

// Generalized Gaussian h = -|x|^b, b > 1: a closed-form upper bound on D_alpha at any shift u
// (convexity of |x|^b; the fallback where the quadrature cannot be certified; alpha = 1: KL).
double gengauss_shift_bound(double b, double alpha, double u);

// Largest u (to relative 1e-12, never above the exact root) with shift_divergence(alpha, u) <= eps.
// Returns +inf if D_alpha stays <= eps for every u (only possible for alpha = inf ... never
// for the shipped families), 0 if eps == 0.
double max_shift(int family, const Shape& s, double alpha, double eps);

// ---- user densities (the Custom family): a batched log-density callback --------------------
using LogPdfBatch = std::function<void(const double* x, std::size_t n, double* out)>;

// Certified upper bound on D_alpha(p(. - u) || p) for a log-density given by `logpdf`.
// symmetric: the caller asserts p(-x) = p(x) (enables the folded form).
// breaks[0..n_breaks): declared structure of p (modes, spikes, kinks, support edges): the
// quadrature splits at every break of p(. - u) and p, since its error estimate cannot see a
// narrow component it never samples.
double custom_shift_divergence(const LogPdfBatch& logpdf, bool symmetric, double alpha, double u,
                               double scale_hint, const double* breaks = nullptr, std::size_t n_breaks = 0);

// Certified upper bound on D_alpha(p(. - u) || p) from the claim |log p(x) - log p(y)| <= L |x - y|
// alone (lipschitz.cpp): per-gap bounds between nodes, refined until they give a divergence within
// rtol of the trapezoid rule's or max_nodes are used (the bound as it stands, looser); the claim
// is checked at every pair of neighbouring nodes (InvalidArgument "log_lipschitz" when violated). The tails beyond a window that holds all but ~e^-40 of J - 1 are integrated as above.
double custom_shift_divergence_lipschitz(const LogPdfBatch& logpdf, double alpha, double u, double L,
                                         double scale_hint, const double* breaks = nullptr, std::size_t n_breaks = 0,
                                         double rtol = 1e-3, std::size_t max_nodes = std::size_t{1} << 21);

// Total mass of exp(logpdf) with its error bound: returns {mass, err}.
// Upper bound on H_{e^eps}(p(. - u) || p) = int (p(x - u) - e^eps p(x))_+ dx (not renormalized)
// certified from |d/dx log p| <= L (lipschitz.cpp): p(x - u) under its tent and p(x) above its
// valley between nodes, the exact integral of the difference per gap, gaps halved until the upper
// and the matching lower sum are within rtol (relative) + atol; the tails beyond a window where
// p(x - u) is e^-40 below its largest value by Gauss-Kronrod. The claim is checked at every pair of
// neighbouring nodes (InvalidArgument "log_lipschitz"). info (optional) receives the sums.
struct HockeyCertificate { double upper = 0, lower = 0, tails = 0; std::size_t nodes = 0; };
double custom_hockey_stick_lipschitz(const LogPdfBatch& logpdf, double eps, double u, double L, double scale_hint,
                                     const double* breaks, std::size_t n_breaks, double rtol, double atol,
                                     std::size_t max_nodes, HockeyCertificate* info = nullptr);

void custom_mass(const LogPdfBatch& logpdf, double scale_hint, double* mass, double* err,
                 const double* breaks = nullptr, std::size_t n_breaks = 0);

}  // namespace puffer::renyi
