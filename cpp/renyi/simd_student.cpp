// SIMD (Highway, dynamic dispatch) evaluation of the folded Renyi log-integrand of the
// Student-type family h(x) = -(k/2) log1p(x^2/nu) (Cauchy, GenCauchy, Student-t) — the same
// formulas as Sym::md + SymRenyiFn in renyi.cpp, evaluated on whole vectors of quadrature
// nodes. Highway's Log/Log1p/Exp/Sinh are within 4 ulp; the quadrature's rounding margin
// (2e-13 relative + 64 eps * magnitude, renyi.cpp) covers that, and the tests compare the
// result with 50-digit mpmath.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "renyi/simd_student.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

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
    const auto m = hn::Neg(hn::Mul(vk4, hn::Log(d, hn::Mul(onepa, hn::Add(one, Bs)))));
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

}  // namespace HWY_NAMESPACE
}  // namespace renyi
}  // namespace puffer
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace puffer {
namespace renyi {
HWY_EXPORT(StudentLogIntegrand);

void student_log_integrand_simd(const double* y, std::size_t n, double c, double k, double nu, double alpha,
                                double beta, double base, double* out) {
  HWY_DYNAMIC_DISPATCH(StudentLogIntegrand)(y, n, c, k, nu, alpha, beta, base, out);
}
}  // namespace renyi
}  // namespace puffer
#endif
