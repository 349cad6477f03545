// Privacy profiles of additive noise: the hockey-stick divergence
//
//   delta(eps; u) = H_{e^eps}(zeta(. - u) || zeta) = int (p(x - u) - e^eps p(x))_+ dx,
//
// i.e. sup over events S of P(N + u in S) - e^eps P(N in S), as certified upper bounds. A noise
// N added to a query whose conditional laws are within Delta_G in W_inf gives (eps, delta)-PP
// with delta = sup over |u| <= Delta_G of delta(eps; u) (the W_inf coupling argument of Song,
// Wang & Chaudhuri 2017 applied to an (eps, delta) guarantee of the noise).
//
// Families are standardized (scale 1) as in renyi.hpp; for the symmetric families the two
// directions H(N + u || N) and H(N || N + u) coincide (reflect x -> u - x).
//   * Gaussian: closed form (Balle & Wang 2018, Thm 8), delta = Phi(u/2 - eps/u) - e^eps Phi(-u/2 - eps/u),
//     in log space with a bound on the error of every term.
//   * Laplace: closed form, delta = -expm1((eps - u)/2) for u > eps, else 0.
//   * Student-type, logistic, generalized Gaussian: log-space Gauss-Kronrod (logquad.hpp) over the
//     region where the privacy loss L(y) = h(y - u/2) - h(y + u/2) exceeds eps (y the coordinate
//     centred between the two laws): an interval whose ends are the roots of a quadratic (Student)
//     or a half line found by bisection (L increasing: the log-concave families). The integrand is
//     a pointwise upper bound (L and log p moved up by their rounding bounds), the quadrature error
//     bound and a log-space rounding margin are added.
//   * user densities: the same quadrature over the whole line with the declared breakpoints of
//     p(. - u) and p (the caller certifies the structure, as for the Renyi divergences).
#pragma once
#include <cstddef>

#include "renyi/renyi.hpp"

namespace puffer::renyi {

// Certified upper bound on delta(eps; u) for the standardized family at shift u >= 0, eps >= 0.
double hockey_stick(int family, const Shape& s, double eps, double u);

// out[i] = hockey_stick(family, s, eps[i], u[i]) on the thread pool.
void hockey_stick_batch(int family, const Shape& s, const double* eps, const double* u, double* out, std::size_t n,
                        unsigned threads);

// Certified upper bound on H_{e^eps}(p(. - u) || p) for a user log-density (not renormalized:
// the caller divides by a lower bound on the mass). u may be negative (the other direction).
double custom_hockey_stick(const LogPdfBatch& logpdf, double eps, double u, double scale_hint,
                           const double* breaks = nullptr, std::size_t n_breaks = 0);

// Largest standardized shift u (never above the exact root, to relative 1e-12) with certified
// hockey_stick(eps; u) <= delta, for the families whose delta(eps; u) is non-decreasing in u
// (every shipped family's kernel value; the facade certifies the sup over the ball).
double max_shift_hockey(int family, const Shape& s, double eps, double delta);

}  // namespace puffer::renyi
