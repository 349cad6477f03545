// SIMD (Highway, dynamic dispatch) evaluation of the folded Renyi log-integrand
//   log( 4 e^{m(y) + logZ} sinh(alpha d(y)) sinh((alpha - 1) d(y)) )
// of the Student-type (h = -(k/2) log1p(x^2/nu): Cauchy, GenCauchy, Student-t), logistic and
// generalized Gaussian families — the same formulas as Sym::md + SymRenyiFn in renyi.cpp,
// evaluated on whole vectors of quadrature nodes. Highway's Log/Log1p/Exp/Sinh are within 4 ulp; the quadrature's rounding margin
// (2e-13 relative + 64 eps * magnitude, renyi.cpp) covers that, and the tests compare the
// result with 50-digit mpmath.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "renyi/simd_integrands.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <cmath>
#include <cstddef>
#include <limits>

HWY_BEFORE_NAMESPACE();
namespace puffer {
namespace renyi {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class D, class V>
HWY_INLINE V LogSinh(D d, V x) {
  // log(sinh(x)) for x > 0: log(sinh(min(x, 20))) below 20, x - log 2 + log1p(-e^{-2x}) above
  const V k20 = hn::Set(d, 20.0);
  const auto big = hn::Gt(x, k20);
  V small = hn::Zero(d);
  V large = hn::Zero(d);
  if (!hn::AllTrue(d, big)) small = hn::Log(d, hn::Sinh(d, hn::Min(x, k20)));
  if (!hn::AllFalse(d, big)) {
    const V e = hn::Exp(d, hn::Max(hn::Mul(hn::Set(d, -2.0), x), hn::Set(d, -700.0)));
    large = hn::Add(hn::Sub(x, hn::Set(d, 0.69314718055994530942)), hn::Log1p(d, hn::Neg(e)));
  }
  return hn::IfThenElse(big, large, small);
}

void StudentLogIntegrand(const double* HWY_RESTRICT y, std::size_t n, double c, double k, double nu,
                         double alpha, double beta, double base, double* HWY_RESTRICT out) {
  const hn::ScalableTag<double> d;
  const std::size_t N = hn::Lanes(d);
  const auto vc = hn::Set(d, c), vk4 = hn::Set(d, 0.25 * k), vnu = hn::Set(d, nu);
  const auto va = hn::Set(d, alpha), vb = hn::Set(d, beta), vbase = hn::Set(d, base);
  const auto one = hn::Set(d, 1.0), four = hn::Set(d, 4.0), zero = hn::Zero(d);
  const auto ninf = hn::Set(d, -std::numeric_limits<double>::infinity());
  const auto lim = hn::Set(d, 1e300);
  HWY_ALIGN double buf_in[64];
  HWY_ALIGN double buf_out[64];
  for (std::size_t i = 0; i < n; i += N) {
    const std::size_t cnt = (n - i < N) ? n - i : N;
    for (std::size_t j = 0; j < N; ++j) buf_in[j] = j < cnt ? y[i + j] : 1.0;
    const auto vy = hn::Load(d, buf_in);
    const auto ym = hn::Sub(vy, vc), yp = hn::Add(vy, vc);
    const auto A = hn::Div(hn::Mul(ym, ym), vnu);
    const auto B = hn::Div(hn::Mul(yp, yp), vnu);
    const auto ok_range = hn::Lt(B, lim);
    const auto Bs = hn::IfThenElse(ok_range, B, one);
    const auto As = hn::IfThenElse(ok_range, A, one);
    const auto onepa = hn::Add(one, As);
    // log1p of each factor (not log of the product): accurate relative to m for large nu
    const auto m = hn::Neg(hn::Mul(vk4, hn::Add(hn::Log1p(d, As), hn::Log1p(d, Bs))));
    const auto r = hn::Div(hn::Div(hn::Mul(hn::Mul(four, vy), vc), vnu), onepa);
    const auto dd = hn::Mul(vk4, hn::Log1p(d, r));
    const auto pos = hn::And(ok_range, hn::Gt(dd, zero));
    const auto dsafe = hn::IfThenElse(pos, dd, one);
    const auto t = hn::Add(LogSinh(d, hn::Mul(va, dsafe)), LogSinh(d, hn::Mul(vb, dsafe)));
    const auto L = hn::Add(hn::Add(vbase, m), t);
    hn::Store(hn::IfThenElse(pos, L, ninf), d, buf_out);
    for (std::size_t j = 0; j < cnt; ++j) out[i + j] = buf_out[j];
  }
}

// Logistic, h = -2 log cosh(x/2): m = -(lcosh(A) + lcosh(B)), A = (y+c)/2, B = (y-c)/2,
// d = log1p(2 sinh(y/2) sinh(c/2) / cosh B) for y, c <= 40 (no cancellation for small c),
// else min(y, c) + log1p(e^{-2|A|}) - log1p(e^{-2|B|}).
void LogisticLogIntegrand(const double* HWY_RESTRICT y, std::size_t n, double c, double alpha, double beta,
                          double base, double* HWY_RESTRICT out) {
  const hn::ScalableTag<double> d;
  const std::size_t N = hn::Lanes(d);
  const auto vc = hn::Set(d, c), va = hn::Set(d, alpha), vb = hn::Set(d, beta), vbase = hn::Set(d, base);
  const auto half = hn::Set(d, 0.5), one = hn::Set(d, 1.0), two = hn::Set(d, 2.0), zero = hn::Zero(d);
  const auto mtwo = hn::Set(d, -2.0), ln2 = hn::Set(d, 0.69314718055994530942), k40 = hn::Set(d, 40.0);
  const auto ninf = hn::Set(d, -std::numeric_limits<double>::infinity());
  const bool c_small = c <= 40.0;
  const auto sc = hn::Set(d, c_small ? std::sinh(0.5 * c) : 0.0);
  HWY_ALIGN double buf_in[64];
  HWY_ALIGN double buf_out[64];
  for (std::size_t i = 0; i < n; i += N) {
    const std::size_t cnt = (n - i < N) ? n - i : N;
    for (std::size_t j = 0; j < N; ++j) buf_in[j] = j < cnt ? y[i + j] : 1.0;
    const auto vy = hn::Load(d, buf_in);
    const auto aA = hn::Abs(hn::Mul(half, hn::Add(vy, vc)));
    const auto aB = hn::Abs(hn::Mul(half, hn::Sub(vy, vc)));
    const auto eA = hn::Exp(d, hn::Max(hn::Mul(mtwo, aA), hn::Set(d, -700.0)));
    const auto eB = hn::Exp(d, hn::Max(hn::Mul(mtwo, aB), hn::Set(d, -700.0)));
    const auto lA = hn::Log1p(d, eA), lB = hn::Log1p(d, eB);
    const auto m = hn::Neg(hn::Sub(hn::Add(hn::Add(aA, lA), hn::Add(aB, lB)), hn::Add(ln2, ln2)));
    // large-y (or large-c) form
    auto dd = hn::Add(hn::Min(vy, vc), hn::Sub(lA, lB));
    if (c_small) {
      const auto ysm = hn::Le(vy, k40);
      if (!hn::AllFalse(d, ysm)) {
        const auto ys = hn::Min(vy, k40);
        const auto bs = hn::Min(aB, hn::Set(d, 20.0));
        const auto coshB = hn::Mul(hn::Mul(half, hn::Exp(d, bs)), hn::Add(one, hn::Exp(d, hn::Mul(mtwo, bs))));
        const auto q = hn::Div(hn::Mul(hn::Mul(two, hn::Sinh(d, hn::Mul(half, ys))), sc), coshB);
        dd = hn::IfThenElse(ysm, hn::Log1p(d, q), dd);
      }
    }
    const auto pos = hn::Gt(dd, zero);
    const auto dsafe = hn::IfThenElse(pos, dd, one);
    const auto t = hn::Add(LogSinh(d, hn::Mul(va, dsafe)), LogSinh(d, hn::Mul(vb, dsafe)));
    hn::Store(hn::IfThenElse(pos, hn::Add(hn::Add(vbase, m), t), ninf), d, buf_out);
    for (std::size_t j = 0; j < cnt; ++j) out[i + j] = buf_out[j];
  }
}

// Generalized Gaussian, h = -|x|^beta: p = y + c, m = -(p^b + |y - c|^b)/2,
// d = -p^b expm1(b log1p(-2 min(y, c)/p)) / 2.
void GenGaussLogIntegrand(const double* HWY_RESTRICT y, std::size_t n, double c, double shape, double alpha,
                          double beta, double base, double* HWY_RESTRICT out) {
  const hn::ScalableTag<double> d;
  const std::size_t N = hn::Lanes(d);
  const auto vc = hn::Set(d, c), va = hn::Set(d, alpha), vb = hn::Set(d, beta), vbase = hn::Set(d, base);
  const auto vs = hn::Set(d, shape), half = hn::Set(d, 0.5), one = hn::Set(d, 1.0), zero = hn::Zero(d);
  const auto mtwo = hn::Set(d, -2.0), lim = hn::Set(d, 1e300);
  const auto ninf = hn::Set(d, -std::numeric_limits<double>::infinity());
  HWY_ALIGN double buf_in[64];
  HWY_ALIGN double buf_out[64];
  for (std::size_t i = 0; i < n; i += N) {
    const std::size_t cnt = (n - i < N) ? n - i : N;
    for (std::size_t j = 0; j < N; ++j) buf_in[j] = j < cnt ? y[i + j] : 1.0;
    const auto vy = hn::Load(d, buf_in);
    const auto p = hn::Add(vy, vc);
    const auto ppos = hn::Gt(p, zero);
    const auto ps = hn::IfThenElse(ppos, p, one);
    const auto pb = hn::Exp(d, hn::Min(hn::Mul(vs, hn::Log(d, ps)), hn::Set(d, 700.0)));
    const auto q = hn::Abs(hn::Sub(vy, vc));
    const auto qpos = hn::Gt(q, zero);
    const auto qb = hn::IfThenElse(qpos, hn::Exp(d, hn::Min(hn::Mul(vs, hn::Log(d, hn::IfThenElse(qpos, q, one))),
                                                         hn::Set(d, 700.0))),
                                   zero);
    const auto m = hn::Neg(hn::Mul(half, hn::Add(pb, qb)));
    const auto arg = hn::Div(hn::Mul(mtwo, hn::Min(vy, vc)), ps);       // in [-1, 0]
    const auto argc = hn::Max(arg, hn::Set(d, -1.0 + 1e-16));
    const auto r = hn::IfThenElse(qpos, hn::Log1p(d, argc), hn::Set(d, -1e300));
    const auto em = hn::IfThenElse(qpos, hn::Expm1(d, hn::Max(hn::Mul(vs, r), hn::Set(d, -745.0))), hn::Set(d, -1.0));
    const auto dd = hn::Neg(hn::Mul(hn::Mul(half, pb), em));
    const auto pos = hn::And(hn::And(ppos, hn::Lt(pb, lim)), hn::Gt(dd, zero));
    const auto dsafe = hn::IfThenElse(pos, dd, one);
    const auto t = hn::Add(LogSinh(d, hn::Mul(va, dsafe)), LogSinh(d, hn::Mul(vb, dsafe)));
    hn::Store(hn::IfThenElse(pos, hn::Add(hn::Add(vbase, m), t), ninf), d, buf_out);
    for (std::size_t j = 0; j < cnt; ++j) out[i + j] = buf_out[j];
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace renyi
}  // namespace puffer
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace puffer {
namespace renyi {
HWY_EXPORT(StudentLogIntegrand);
HWY_EXPORT(LogisticLogIntegrand);
HWY_EXPORT(GenGaussLogIntegrand);

void logistic_log_integrand_simd(const double* y, std::size_t n, double c, double alpha, double beta, double base,
                                 double* out) {
  HWY_DYNAMIC_DISPATCH(LogisticLogIntegrand)(y, n, c, alpha, beta, base, out);
}

void gengauss_log_integrand_simd(const double* y, std::size_t n, double c, double shape, double alpha, double beta,
                                 double base, double* out) {
  HWY_DYNAMIC_DISPATCH(GenGaussLogIntegrand)(y, n, c, shape, alpha, beta, base, out);
}

void student_log_integrand_simd(const double* y, std::size_t n, double c, double k, double nu, double alpha,
                                double beta, double base, double* out) {
  HWY_DYNAMIC_DISPATCH(StudentLogIntegrand)(y, n, c, k, nu, alpha, beta, base, out);
}
}  // namespace renyi
}  // namespace puffer
#endif
