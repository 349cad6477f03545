// Exact H-restricted Renyi divergence of a shifted standardized noise law for H = poly_k
// (degree <= k univariate polynomials with constant term; poly_1 = lin), certified from above.
//
// Chaudhuri, Imola, Machanavajjhala 2019 (Lemma 3): for a cone H,
//   D^H_{R,alpha}(P, Q) = alpha* log rho*,  rho* = sup_{h in H} E_P h / ||h||_{L^{alpha*}(Q)}
// with P = law(Y + s), Q = law(Y), alpha* = alpha/(alpha-1).
//
// Primal (lower bound): minimise F(c) = E_Q|h_c|^{alpha*} subject to E_P h_c = 1 (a convex
// program) by BFGS in a Q-orthonormal polynomial basis, starting from the alpha = 2 optimum.
// Any feasible h gives rho* >= E_P h / F^{1/alpha*} (with the quadrature error on the safe side).
//
// Dual (upper bound, the certificate): the norm of the functional h -> E_P h on the finite-
// dimensional space H is the least L^alpha(Q) norm of a representer g (Hahn–Banach / Hölder):
// for every g with E_Q[g x^j] = E_P[x^j] (j = 0..k), rho* <= ||g||_{L^alpha(Q)}. We take
// g = sign(h)|h|^{alpha*-1} / F + sum_j beta_j x^j with beta solving the moment equations
// (closed-form Gram matrix), i.e. the Hölder dual of the primal optimum corrected to
// feasibility. The quadrature error of the moment equations is carried rigorously into the
// bound (see restricted.cpp), so the upper bound holds whatever the optimiser did; a poor
// optimum only makes the bracket [lo, hi] wide (reported in `gap`).
#pragma once
#include <cstddef>
#include <vector>

namespace puffer::capacity {

struct RestrictedResult {
  double d_lo = 0.0;            // certified lower bound on D^{poly_k}_{R,alpha}
  double d_hi = 0.0;            // certified upper bound (the value to report)
  std::vector<double> coef;     // h*(x) = sum_j coef[j] x^j (standardized x), E_P h* = 1
  double quad_err = 0.0;        // largest relative quadrature error bound used
  int iterations = 0;           // BFGS iterations
  bool converged = false;       // optimiser reached its gradient tolerance
  long n_eval = 0;              // integrand evaluations
  double unrestricted = 0.0;    // closed-form D_{R,alpha}(P, Q) (upper-rounded) for the sandwich
};

// noise: 0 Gaussian N(0,1), 1 Laplace(0,1). s >= 0 standardized shift; alpha > 1 finite; 1 <= k <= 8.
// coef_init (k+1 values, may be null): warm start.
RestrictedResult restricted_renyi_poly(int noise, double s, double alpha, int k, const double* coef_init = nullptr,
                                       double gap_tol = 1e-10);

// alpha = 2 closed form (Gram): D = log(m^T G^{-1} m) with m_j = E_P x^j, G_ij = E_Q x^{i+j}.
double gram_renyi2(int noise, double s, int k);

// Moments E_P[x^j] (j = 0..k) and E_Q[x^{i+j}] (Gram, (k+1)^2 row-major).
void poly_moments(int noise, double s, int k, double* m, double* gram);

}  // namespace puffer::capacity
