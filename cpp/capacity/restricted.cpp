// Certified (poly_k, Renyi) divergence of shifted standardized noise; see restricted.hpp.
#include "capacity/restricted.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "capacity/quad.hpp"
#include "common/errors.hpp"
#include "renyi/fdiv.hpp"

namespace puffer::capacity {
namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();

double raw_moment(int noise, int i) {  // E[Y^i]
  if (i % 2) return 0.0;
  double v = 1.0;
  if (noise == kLaplace) {
    for (int j = 2; j <= i; ++j) v *= j;  // i!
  } else {
    for (int j = i - 1; j > 1; j -= 2) v *= j;  // (i-1)!!
  }
  return v;
}

double binom(int n, int k) {
  double v = 1.0;
  for (int i = 1; i <= k; ++i) v = v * (n - k + i) / i;
  return v;
}

// Cholesky of an n x n SPD matrix (row-major), lower factor in L. Throws if not SPD.
void cholesky(const std::vector<double>& A, int n, std::vector<double>& L) {
  L.assign(n * n, 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) {
      double s = A[i * n + j];
      for (int k = 0; k < j; ++k) s -= L[i * n + k] * L[j * n + k];
      if (i == j) {
        if (!(s > 0)) throw NumericalFailure("capacity: Gram matrix is not positive definite (degree too high)");
        L[i * n + i] = std::sqrt(s);
      } else {
        L[i * n + j] = s / L[j * n + j];
      }
    }
}
// Solve L y = b (forward) and L^T x = y (backward).
void fwd(const std::vector<double>& L, int n, const double* b, double* y) {
  for (int i = 0; i < n; ++i) {
    double s = b[i];
    for (int k = 0; k < i; ++k) s -= L[i * n + k] * y[k];
    y[i] = s / L[i * n + i];
  }
}
void bwd(const std::vector<double>& L, int n, const double* y, double* x) {
  for (int i = n - 1; i >= 0; --i) {
    double s = y[i];
    for (int k = i + 1; k < n; ++k) s -= L[k * n + i] * x[k];
    x[i] = s / L[i * n + i];
  }
}

double horner(const std::vector<double>& c, double x) {
  double v = 0.0;
  for (int j = static_cast<int>(c.size()) - 1; j >= 0; --j) v = v * x + c[j];
  return v;
}

// Real roots of h in (-L, L): sign changes on a grid, refined by bisection.
std::vector<double> roots_in(const std::vector<double>& c, double L) {
  std::vector<double> out;
  const int n = 512;
  double xa = -L, fa = horner(c, xa);
  for (int i = 1; i <= n; ++i) {
    const double xb = -L + 2.0 * L * i / n, fb = horner(c, xb);
    if (fa == 0.0) out.push_back(xa);
    else if ((fa < 0) != (fb < 0) && fb != 0.0) {
      double a = xa, b = xb, f0 = fa;
      for (int it = 0; it < 200 && b - a > 1e-15 * (1.0 + std::fabs(a)); ++it) {
        const double mid = 0.5 * (a + b), fm = horner(c, mid);
        if ((fm < 0) == (f0 < 0)) { a = mid; f0 = fm; } else b = mid;
      }
      out.push_back(0.5 * (a + b));
    }
    xa = xb;
    fa = fb;
  }
  return out;
}

struct Problem {
  int noise, k, n;  // n = k + 1
  double s, alpha, r;
  double L;         // quadrature window
  std::vector<double> m, G, Lc;  // P-moments, Gram, Cholesky of Gram
  std::vector<double> base_brk;
  long n_eval = 0;

  double window(double mexp) const {
    mexp = std::max(mexp, 1.0);
    if (noise == kLaplace) return std::max(60.0, mexp + 8.0 * std::sqrt(mexp) + 45.0);
    return std::max(12.0, std::sqrt(mexp) + 10.5);
  }

  // exponent of the root map: |h|^{r-1} ~ |x - x0|^{r-1} becomes smooth-ish in u for q(r-1) >= 1
  double qmap() const { return std::min(12.0, std::max(2.0, std::ceil(1.0 / std::min(r - 1.0, 1.0)))); }


  // E|h|^r and v_j = E[sign(h)|h|^{r-1} x^j] with error bounds (tails included).
  struct Eval {
    double F, eF;
    std::vector<double> v, ev;
  };
  Eval eval(const std::vector<double>& c, double rtol) {
    const std::size_t nc = n + 1;
    // |h(x)| <= C |x|^k for |x| >= L >= 1, C = sum_j |c_j| L^{j-k}
    double C = 0;
    for (int j = 0; j < n; ++j) C += std::fabs(c[j]) * std::pow(L, j - k);
    const double rm1 = r - 1.0;
    auto f = [&](double x, double* out) {
      const double h = horner(c, x), ah = std::fabs(h);
      const double p = ah > 0 ? std::exp(rm1 * std::log(ah)) : 0.0;
      out[0] = p * ah;
      const double sp = h < 0 ? -p : p;
      double xp = 1.0;
      for (int j = 0; j < n; ++j) { out[1 + j] = sp * xp; xp *= x; }
    };
    // tolerances: relative to the size of each component (|h|^{r-1} |x|^j ~ F^{(r-1)/r} E|x|^j)
    std::vector<double> atol(nc);
    double Fscale = 1.0;
    atol[0] = rtol * 1e-3 * Fscale;
    for (int j = 0; j < n; ++j) atol[1 + j] = rtol * 1e-3 * (1.0 + std::sqrt(G[j * n + j]));
    VQuadResult q = vquad(noise, f, nc, base_brk, L, rtol, atol, roots_in(c, L), qmap());
    n_eval += q.n_eval;
    Eval e;
    e.F = q.value[0];
    const double lC = C > 0 ? std::log(C) : -std::numeric_limits<double>::infinity();
    e.eF = q.err[0] + tail_bound(noise, r * lC, k * r, L);
    e.v.resize(n);
    e.ev.resize(n);
    for (int j = 0; j < n; ++j) {
      e.v[j] = q.value[1 + j];
      e.ev[j] = q.err[1 + j] + tail_bound(noise, rm1 * lC, k * rm1 + j, L);
    }
    return e;
  }
};

}  // namespace

void poly_moments(int noise, double s, int k, double* m, double* gram) {
  check_noise(noise);
  require(k >= 1 && k <= 8, "k", k, "a degree in 1..8");
  require(std::isfinite(s), "s", s, "a finite standardized shift");
  const int n = k + 1;
  for (int j = 0; j < n; ++j) {
    double acc = 0.0;
    for (int i = 0; i <= j; ++i) acc += binom(j, i) * std::pow(s, j - i) * raw_moment(noise, i);
    m[j] = acc;
  }
  if (gram)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) gram[i * n + j] = raw_moment(noise, i + j);
}

double gram_renyi2(int noise, double s, int k) {
  const int n = k + 1;
  std::vector<double> m(n), G(n * n), L, y(n);
  poly_moments(noise, s, k, m.data(), G.data());
  cholesky(G, n, L);
  fwd(L, n, m.data(), y.data());
  double q = 0;
  for (double v : y) q += v * v;
  return std::log(q);
}

RestrictedResult restricted_renyi_poly(int noise, double s, double alpha, int k, const double* coef_init,
                                       double gap_tol) {
  check_noise(noise);
  require(alpha > 1.0 && std::isfinite(alpha), "alpha", alpha, "a finite order > 1");
  require(alpha >= 1.01, "alpha", alpha, "an order >= 1.01 for the exact solver (|h|^{alpha*} overflows near 1; use the KL formulas at alpha = 1)");
  require(k >= 1 && k <= 8, "k", k, "a degree in 1..8");
  require(std::isfinite(s), "s", s, "a finite standardized shift");
  s = std::fabs(s);  // symmetric noise: D(Y+s || Y) = D(Y-s || Y) (reflection maps poly_k to itself)

  Problem P;
  P.noise = noise;
  P.k = k;
  P.n = k + 1;
  P.s = s;
  P.alpha = alpha;
  P.r = alpha / (alpha - 1.0);
  const int n = P.n;
  P.m.resize(n);
  P.G.resize(n * n);
  poly_moments(noise, s, k, P.m.data(), P.G.data());
  cholesky(P.G, n, P.Lc);
  const double mexp = k * std::max(P.r, alpha * std::max(P.r - 1.0, 1.0)) + k;
  P.L = P.window(mexp);
  for (double b : {0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0})
    if (b < P.L) { P.base_brk.push_back(b); if (b > 0) P.base_brk.push_back(-b); }
  if (s > 0 && s < P.L) P.base_brk.push_back(s);

  RestrictedResult res;
  {
    double u = s;
    const double uu[1] = {u};
    res.unrestricted = noise == kLaplace ? fdiv::laplace_renyi(alpha, uu, 1) : fdiv::gaussian_renyi(alpha, uu, 1);
    res.unrestricted = res.unrestricted * (1.0 + 1e-12) + 64.0 * kEps * alpha;
  }
  res.coef.assign(n, 0.0);
  if (s == 0.0) {  // P = Q: every restricted divergence is 0; h = 1 is optimal
    res.coef[0] = 1.0;
    res.converged = true;
    return res;
  }

  // Orthonormal coordinates: h = d^T psi, psi = Lc^{-1} phi, c = Lc^{-T} d, E_P psi = mt.
  std::vector<double> mt(n);
  fwd(P.Lc, n, P.m.data(), mt.data());
  double mt2 = 0;
  for (double v : mt) mt2 += v * v;
  const double mtn = std::sqrt(mt2);
  // Householder H = I - 2 u u^T/(u^T u), u = mt - |mt| e0 ... H e0 = mt/|mt|; columns 1..k span mt^perp.
  std::vector<double> hu(mt);
  hu[0] -= mtn;
  double hu2 = 0;
  for (double v : hu) hu2 += v * v;
  std::vector<double> N(n * k, 0.0);  // N[i*k + j]
  for (int j = 0; j < k; ++j)
    for (int i = 0; i < n; ++i) {
      double e = (i == j + 1) ? 1.0 : 0.0;
      N[i * k + j] = e - (hu2 > 0 ? 2.0 * hu[i] * hu[j + 1] / hu2 : 0.0);
    }
  std::vector<double> d0(n);
  for (int i = 0; i < n; ++i) d0[i] = mt[i] / mt2;
  auto coef_of = [&](const std::vector<double>& z) {
    std::vector<double> d(d0), c(n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < k; ++j) d[i] += N[i * k + j] * z[j];
    bwd(P.Lc, n, d.data(), c.data());
    return c;
  };
  std::vector<double> z(k, 0.0);
  if (coef_init) {  // warm start: project Lc^T c onto the constraint, then onto N
    std::vector<double> d(n, 0.0);
    for (int i = 0; i < n; ++i)
      for (int j = i; j < n; ++j) d[i] += P.Lc[j * n + i] * coef_init[j];
    double md = 0;
    for (int i = 0; i < n; ++i) md += mt[i] * d[i];
    if (md > 0 && std::isfinite(md)) {
      for (int j = 0; j < k; ++j) {
        double zz = 0;
        for (int i = 0; i < n; ++i) zz += N[i * k + j] * d[i] / md;
        z[j] = zz;
      }
    }
  }

  const double rtol_opt = 1e-9;
  auto objective = [&](const std::vector<double>& zz, std::vector<double>& gz) {
    std::vector<double> c = coef_of(zz);
    auto e = P.eval(c, rtol_opt);
    std::vector<double> gc(n), gd(n);
    for (int j = 0; j < n; ++j) gc[j] = P.r * e.v[j];
    fwd(P.Lc, n, gc.data(), gd.data());  // dF/dd = Lc^{-1} dF/dc
    // minimise the norm ||h||_r = F^{1/r} (convex, homogeneous, well scaled as alpha -> 1)
    const double nrm = std::pow(e.F, 1.0 / P.r);
    const double sc = nrm / (P.r * e.F);
    gz.assign(k, 0.0);
    for (int j = 0; j < k; ++j)
      for (int i = 0; i < n; ++i) gz[j] += N[i * k + j] * gd[i] * sc;
    return nrm;
  };

  // BFGS with Armijo backtracking (F is convex in z).
  std::vector<double> g(k), gnew(k), zn(k), H(k * k, 0.0), sv(k), yv(k), dir(k);
  double F = objective(z, g);
  const double h0 = 0.1;
  for (int i = 0; i < k; ++i) H[i * k + i] = h0;
  int it = 0;
  bool conv = false;
  for (; it < 200; ++it) {
    double gn = 0;
    for (double v : g) gn += v * v;
    gn = std::sqrt(gn);
    if (gn <= 1e-9 * F) { conv = true; break; }
    for (int i = 0; i < k; ++i) {
      dir[i] = 0;
      for (int j = 0; j < k; ++j) dir[i] -= H[i * k + j] * g[j];
    }
    double slope = 0;
    for (int i = 0; i < k; ++i) slope += dir[i] * g[i];
    if (!(slope < 0)) {  // reset to steepest descent
      for (int i = 0; i < k; ++i) { for (int j = 0; j < k; ++j) H[i * k + j] = (i == j) ? h0 : 0.0; dir[i] = -h0 * g[i]; }
      slope = 0;
      for (int i = 0; i < k; ++i) slope += dir[i] * g[i];
    }
    double t = 1.0, Fn = 0;
    bool ok = false;
    for (int ls = 0; ls < 60; ++ls) {
      for (int i = 0; i < k; ++i) zn[i] = z[i] + t * dir[i];
      Fn = objective(zn, gnew);
      if (std::isfinite(Fn) && Fn <= F + 1e-4 * t * slope) { ok = true; break; }
      t *= 0.5;
    }
    if (!ok) break;
    double sy = 0;
    for (int i = 0; i < k; ++i) { sv[i] = zn[i] - z[i]; yv[i] = gnew[i] - g[i]; sy += sv[i] * yv[i]; }
    const double dF = F - Fn;
    z = zn;
    g = gnew;
    F = Fn;
    if (sy > 1e-300) {
      if (it == 0) {  // Shanno scaling of the initial inverse Hessian
        double yy = 0;
        for (double v : yv) yy += v * v;
        for (int i = 0; i < k; ++i) for (int j = 0; j < k; ++j) H[i * k + j] = (i == j) ? sy / yy : 0.0;
      }
      std::vector<double> Hy(k, 0.0);
      for (int i = 0; i < k; ++i) for (int j = 0; j < k; ++j) Hy[i] += H[i * k + j] * yv[j];
      double yHy = 0;
      for (int i = 0; i < k; ++i) yHy += yv[i] * Hy[i];
      const double rho = 1.0 / sy;
      for (int i = 0; i < k; ++i)
        for (int j = 0; j < k; ++j)
          H[i * k + j] += (1.0 + yHy * rho) * rho * sv[i] * sv[j] - rho * (Hy[i] * sv[j] + sv[i] * Hy[j]);
    }
    if (dF <= 1e-15 * F) { conv = true; ++it; break; }
  }
  res.iterations = it;
  res.converged = conv;

  // ---- certificate ----
  std::vector<double> c = coef_of(z);
  auto e = P.eval(c, 1e-13);
  double mc = 0, vc = 0;
  for (int j = 0; j < n; ++j) { mc += P.m[j] * c[j]; vc += e.v[j] * c[j]; }
  if (!(e.F > 0) || !(vc > 0) || !(mc > 0)) throw NumericalFailure("capacity: restricted Renyi optimiser produced a degenerate adversary");
  // primal: rho >= E_P h / ||h||_r, with ||h||_r over-estimated
  const double mc_lo = mc * (1.0 - 8.0 * n * kEps);
  const double rho_lo = mc_lo / std::pow(e.F + e.eF, 1.0 / P.r);
  res.d_lo = std::max(0.0, P.r * std::log(rho_lo) * (rho_lo >= 1 ? 1.0 - 1e-14 : 1.0 + 1e-14));

  // dual: g = lam g0 + phi^T beta with G beta = m - lam v
  const double lam = 1.0 / vc;
  std::vector<double> rhs(n), y(n), beta(n);
  for (int j = 0; j < n; ++j) rhs[j] = P.m[j] - lam * e.v[j];
  fwd(P.Lc, n, rhs.data(), y.data());
  bwd(P.Lc, n, y.data(), beta.data());
  // residual bound of the moment equations: quadrature error of v and the rounding of the solve
  double R2 = 0;
  for (int j = 0; j < n; ++j) {
    double gb = 0, ga = 0;
    for (int i = 0; i < n; ++i) { gb += P.G[j * n + i] * beta[i]; ga += std::fabs(P.G[j * n + i] * beta[i]); }
    const double resid = std::fabs(P.m[j] - lam * e.v[j] - gb);
    const double Rj = lam * e.ev[j] + resid + 16.0 * n * kEps * (std::fabs(P.m[j]) + lam * std::fabs(e.v[j]) + ga);
    R2 += Rj * Rj;
  }
  // ||G^{-1}||_F (upper bound on the spectral norm), with a margin for its own rounding
  double ginvF = 0;
  for (int col = 0; col < n; ++col) {
    std::vector<double> ej(n, 0.0), yy(n), xx(n);
    ej[col] = 1.0;
    fwd(P.Lc, n, ej.data(), yy.data());
    bwd(P.Lc, n, yy.data(), xx.data());
    for (double v : xx) ginvF += v * v;
  }
  ginvF = std::sqrt(ginvF);
  {
    // the computed inverse carries a relative error of order cond(G) eps: widen accordingly
    double gF = 0;
    for (double v : P.G) gF += v * v;
    const double cond = std::sqrt(gF) * ginvF;
    if (!(cond * kEps < 1e-3)) throw NumericalFailure("capacity: Gram matrix too ill-conditioned for a certificate (lower the degree k)");
    ginvF *= 1.0 + 64.0 * cond * kEps + 1e-12;
  }
  double kappa;
  if (P.r >= 2.0) {
    kappa = std::sqrt(ginvF);
  } else {
    double Ka = 0;
    for (int j = 0; j < n; ++j) Ka += std::exp((2.0 / alpha) * log_abs_moment(noise, j * alpha));
    kappa = ginvF * std::sqrt(Ka) * (1.0 + 1e-10);
  }
  // ||g||_alpha by quadrature
  double Cc = 0, B = 0;
  for (int j = 0; j < n; ++j) {
    Cc += std::fabs(c[j]) * std::pow(P.L, j - k);
    B += std::fabs(beta[j]) * std::pow(P.L, j - k);
  }
  const double rm1 = P.r - 1.0;
  auto fg = [&](double x, double* out) {
    const double h = horner(c, x), ah = std::fabs(h);
    const double p = ah > 0 ? std::exp(rm1 * std::log(ah)) : 0.0;
    const double gv = lam * (h < 0 ? -p : p) + horner(beta, x);
    const double ag = std::fabs(gv);
    out[0] = ag > 0 ? std::exp(alpha * std::log(ag)) : 0.0;
  };
  std::vector<double> at1{1e-16};
  VQuadResult qg = vquad(noise, fg, 1, P.base_brk, P.L, 1e-13, at1, roots_in(c, P.L), P.qmap());
  P.n_eval += qg.n_eval;
  // |g|^alpha <= 2^{alpha-1} (lam^alpha C^{(r-1) alpha} |x|^{k r} + B^alpha |x|^{k alpha}) for |x| >= L
  const double ninf = -std::numeric_limits<double>::infinity();
  const double l2 = (alpha - 1.0) * std::log(2.0);
  const double gtail = tail_bound(noise, Cc > 0 ? l2 + alpha * (std::log(lam) + rm1 * std::log(Cc)) : ninf, k * P.r, P.L) +
                       tail_bound(noise, B > 0 ? l2 + alpha * std::log(B) : ninf, k * alpha, P.L);
  const double Ig = qg.value[0] + qg.err[0] + gtail;
  const double rho_hi = std::pow(Ig, 1.0 / alpha) * (1.0 + 4 * kEps) + std::sqrt(R2) * kappa;
  if (!(rho_hi >= 1.0 - 1e-9)) throw NumericalFailure("capacity: dual certificate below 1 (inconsistent quadrature)");
  double dhi = P.r * std::log(std::max(rho_hi, 1.0));
  dhi = dhi * (1.0 + 1e-14) + 8 * kEps;
  res.d_hi = dhi;
  res.quad_err = std::max({e.eF / e.F, (qg.err[0] + gtail) / std::max(qg.value[0], 1e-300), std::sqrt(R2)});
  // the unrestricted divergence is itself a (sound) upper bound
  if (res.d_hi > res.unrestricted) res.d_hi = std::max(res.unrestricted, res.d_lo);
  if (res.d_lo > res.unrestricted * (1 + 1e-9) + 1e-12)
    throw NumericalFailure("capacity: sandwich violated (restricted lower bound above the unrestricted divergence)");
  if (!(res.d_hi - res.d_lo <= gap_tol * (1.0 + res.d_hi))) res.converged = false;
  // report h* normalised so that E_P h* = 1
  for (int j = 0; j < n; ++j) res.coef[j] = c[j] / mc;
  res.n_eval = P.n_eval;
  return res;
}

}  // namespace puffer::capacity
