// K-norm noise for the Wasserstein K-norm gradient mechanism (Seeman, Reimherr & Slavkovic,
// Thm 10; sampler of Hardt & Talwar 2010): density proportional to exp(-||v||_K / s) on R^d.
// Polar decomposition: ||V||_K ~ Gamma(d, s) and V / ||V||_K is the cone measure of the unit
// sphere of K; equivalently V = R U with R ~ Gamma(d + 1, s), U uniform on the unit ball K.
//  * l_inf: V = R U, R ~ Gamma(d+1, s) (Marsaglia-Tsang), U uniform on [-1, 1]^d.
//  * l2:    V = R G / ||G||_2, R ~ Gamma(d, s), G standard normal (for the l2 ball the cone measure
//           is the uniform law on the sphere; R U^{1/d} with R ~ Gamma(d+1) is Gamma(d), same law).
//  * l1:    exp(-sum_j |v_j| / s) factorises: iid Laplace(s) coordinates (the same law as
//           Gamma(d+1) times the uniform cross-polytope point).
// All transforms are exact; the Gamma variates use Marsaglia & Tsang (2000) rejection.
#include <algorithm>
#include <cmath>

#include "common/errors.hpp"
#include "common/parallel.hpp"
#include "sampling/partial.hpp"
#include "sampling/philox_stream.hpp"

namespace puffer::sampling {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

// A pair of independent standard normals (Box-Muller with a fine radius uniform).
inline void normal_pair(ValueStream& st, double& z0, double& z1) {
  const double r = std::sqrt(-2.0 * std::log(st.fine()));
  const double th = kTwoPi * st.u53();
  z0 = r * std::cos(th);
  z1 = r * std::sin(th);
}

// Gamma(a, 1), a >= 1: Marsaglia & Tsang (2000), exact rejection sampler.
inline double gamma_mt(ValueStream& st, double a) {
  const double dd = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * dd);
  for (;;) {
    double z, z1;
    normal_pair(st, z, z1);
    for (double x : {z, z1}) {
      const double t = 1.0 + c * x;
      if (t <= 0.0) continue;
      const double v = t * t * t;
      const double u = st.u53();
      if (std::log(u) < 0.5 * x * x + dd - dd * v + dd * std::log(v)) return dd * v;
    }
  }
}

void one_knorm(int norm_code, std::size_t d, double scale, ValueStream& st, double* v) {
  if (norm_code == 1) {
    for (std::size_t j = 0; j < d; ++j) {
      const std::uint64_t w = st.next();
      const double u = (double(w >> 2) + 0.5) * 0x1p-62;
      const double e = -scale * std::log(u);
      v[j] = (w & 1u) ? -e : e;
    }
    return;
  }
  if (norm_code == 0) {
    const double r = scale * gamma_mt(st, double(d) + 1.0);
    for (std::size_t j = 0; j < d; ++j) v[j] = r * (2.0 * st.u53() - 1.0);
    return;
  }
  // l2
  double ss = 0.0;
  for (std::size_t j = 0; j < d; j += 2) {
    double z0, z1;
    normal_pair(st, z0, z1);
    v[j] = z0;
    ss += z0 * z0;
    if (j + 1 < d) {
      v[j + 1] = z1;
      ss += z1 * z1;
    }
  }
  const double r = scale * gamma_mt(st, double(d));
  const double f = r / std::sqrt(ss);
  for (std::size_t j = 0; j < d; ++j) v[j] *= f;
}

}  // namespace

void knorm_fill(int norm_code, std::size_t d, double scale, StreamKey key, std::uint64_t start, std::size_t n,
                const double* in, double* out, unsigned threads) {
  require(norm_code == 0 || norm_code == 1 || norm_code == 2, "norm", norm_code, "1, 2 or inf");
  require(d >= 1, "dim", d, "a dimension >= 1");
  require(std::isfinite(scale) && scale > 0.0, "scale", scale, "a finite scale > 0");
  require(threads <= 1024, "threads", threads, "0 (all cores) to 1024");
  const std::size_t task = std::max<std::size_t>(1, 4096 / d);
  parallel_for((n + task - 1) / task, threads, [&](std::size_t t) {
    const std::size_t lo = t * task, hi = std::min(n, lo + task);
    for (std::size_t i = lo; i < hi; ++i) {
      ValueStream st(key, start + i);
      double* v = out + i * d;
      one_knorm(norm_code, d, scale, st, v);
      if (in)
        for (std::size_t j = 0; j < d; ++j) v[j] += in[i * d + j];
    }
  });
}

}  // namespace puffer::sampling
