// f-divergence primitives and closed-form divergences of the Laplace / Gaussian mechanisms
// (Chaudhuri, Imola, Machanavajjhala 2019, §2.2 and Thms 8, 9, 10, 11, 12).
//
// Generators f and Fenchel conjugates f*:
//   KL:    f(t) = t log t (+inf for t < 0),            f*(u) = e^{u-1}
//   TV:    f(t) = |t - 1| / 2,                         f*(u) = u for |u| <= 1/2, else +inf
//   alpha: f(t) = (|t|^alpha - 1)/(alpha^2 - alpha),   f*(u) = C_alpha |u|^{alpha*} + 1/(alpha^2 - alpha)
// with the even extension |t|^alpha the paper's Lemmas 2–4 use; C_alpha = (alpha-1)^{alpha*}/alpha.
// (The proof of Lemma 3 prints f*(u) = C_alpha |u| - 1/(alpha^2 - alpha): exponent and sign are
// misprinted; the final formula of Lemma 3 is the one above.)
// All closed forms return the double nearest the formula; callers add their rounding margin.
#pragma once
#include <cstddef>

namespace puffer::fdiv {

enum Kind : int { kKL = 0, kTV = 1, kAlpha = 2 };

double generator(int kind, double t, double alpha);
double conjugate(int kind, double u, double alpha);

// sum_i q_i f(p_i / q_i) for probability vectors (q_i = 0 < p_i: the limit q f(p/q) -> p f'(inf)).
double f_divergence_discrete(int kind, const double* p, const double* q, std::size_t n, double alpha);

// D_{R,alpha} = log(1 + alpha(alpha-1) D_alpha)/(alpha-1) and its inverse.
double alpha_div_to_renyi(double d, double alpha);
double renyi_to_alpha_div(double r, double alpha);

// Standardized closed forms (x = shift / scale):
double laplace_kl(double x);                   // Thm 8:  x - 1 + e^{-x}
double laplace_lin_kl(double x);               // Thm 9:  sqrt(1+x^2) - 1 + log(2/(1+sqrt(1+x^2)))
double laplace_log_F(double alpha, double x);  // Thm 11: log F(x), one coordinate (alpha > 1)
// Thm 11 / Thm 12 summed over d coordinates of a standardized shift vector v (alpha > 1):
double laplace_renyi(double alpha, const double* v, std::size_t d);
double gaussian_renyi(double alpha, const double* v, std::size_t d);

}  // namespace puffer::fdiv
