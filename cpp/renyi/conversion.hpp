// From a Renyi bound to (eps, delta): the conversions puffer certifies.
//
// A pair (P, Q) with D_alpha(P || Q) <= rho (alpha > 1) has, for every event S,
// P(S) <= e^eps Q(S) + delta with
//   * Mironov 2017, Prop 3:          eps = rho + log(1/delta) / (alpha - 1);
//   * Canonne, Kamath & Steinke 2020, Prop 12 (always smaller):
//                                    eps = rho + log1p(-1/alpha) - (log delta + log alpha) / (alpha - 1);
//   * the optimal single-order conversion (Asoodeh et al. 2021: the joint range of the Renyi
//     divergence and E_gamma; binary pairs attain it): the least gamma = e^eps with
//     E_Q[(T - gamma)_+] <= delta for every likelihood ratio T with E_Q T = 1, E_Q T^alpha <= K =
//     e^{(alpha-1) rho}. Certified here by Lagrange weak duality: for any b, lambda >= 0 and a with
//     (t - gamma)_+ <= a + b t + lambda t^alpha on t >= 0, E[(T - gamma)_+] <= a + b + lambda K. The
//     optimal binary pair {t2 < 1 < t1} (found numerically; its accuracy never matters for soundness)
//     gives (b, lambda) by tangency; a is the exact sup (closed form) and the bound is evaluated with
//     its rounding error added. eps is returned only when that certified bound is <= delta.
// Every eps returned is an upper bound on the exact value of the formula (directed rounding of
// each term) and is >= 0 (a negative formula value certifies (0, delta)).
#pragma once

namespace puffer::renyi {

// Canonne, Kamath & Steinke 2020, Prop 12 (upper bound, >= 0); +inf for rho = inf.
double rdp_to_dp_cks(double alpha, double rho, double delta);

// The optimal single-order conversion (certified), never above rdp_to_dp_cks.
double rdp_to_dp_optimal(double alpha, double rho, double delta);

}  // namespace puffer::renyi
