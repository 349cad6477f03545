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

// A pair of independent standard normals: Marsaglia's polar method (exact; no sin/cos; one
// attempt in 4/pi on average). (u, v) uniform in the unit disc from two 53-bit uniforms.
inline void normal_pair(ValueStream& st, double& z0, double& z1) {
  for (;;) {
    const double u = 2.0 * st.u53() - 1.0, v = 2.0 * st.u53() - 1.0;
    const double s = u * u + v * v;
    if (s < 1.0 && s > 0.0) {
      const double f = std::sqrt(-2.0 * std::log(s) / s);
      z0 = u * f;
      z1 = v * f;
      return;
    }
  }
}

// Standard normals by the ziggurat of Marsaglia & Tsang (2000), 128 layers, with independent
// bits for the layer, the sign and the 53-bit uniform (Doornik's 2005 fix): exact (rejection in
// the wedges, Marsaglia's exact tail method beyond r). One 64-bit word per draw in ~99 % of cases.
struct Ziggurat {
  static constexpr int kN = 128;
  static constexpr double kR = 3.442619855899, kV = 9.91256303526217e-3;
  double x[kN + 1], f[kN + 1];
  Ziggurat() {
    f[0] = 0.0;
    x[0] = kV / std::exp(-0.5 * kR * kR);  // width of the base strip (rectangle + tail)
    x[1] = kR;
    for (int i = 1; i < kN; ++i) x[i + 1] = std::sqrt(-2.0 * std::log(kV / x[i] + std::exp(-0.5 * x[i] * x[i])));
    x[kN] = 0.0;
    for (int i = 0; i <= kN; ++i) f[i] = std::exp(-0.5 * x[i] * x[i]);
  }
};
const Ziggurat& zig() {
  static const Ziggurat z;
  return z;
}

inline double normal_zig(ValueStream& st, const Ziggurat& Z) {
  for (;;) {
    const std::uint64_t w = st.next();
    const int i = int(w & 127u);
    const double u = (double(w >> 11) + 0.5) * 0x1p-53;  // (0, 1)
    const bool neg = (w >> 7) & 1u;
    const double z = u * Z.x[i];
    if (z < Z.x[i + 1]) return neg ? -z : z;  // inside the rectangle below the next layer
    if (i == 0) {                                // tail beyond r
      double a, b;
      do {
        a = -std::log(st.fine()) / Ziggurat::kR;
        b = -std::log(st.fine());
      } while (2.0 * b < a * a);
      return neg ? -(Ziggurat::kR + a) : (Ziggurat::kR + a);
    }
    // wedge: accept with the exact density
    if (Z.f[i] + st.u53() * (Z.f[i + 1] - Z.f[i]) < std::exp(-0.5 * z * z)) return neg ? -z : z;
  }
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
  const Ziggurat& Z = zig();
  double ss = 0.0;
  for (std::size_t j = 0; j < d; ++j) {
    const double z = normal_zig(st, Z);
    v[j] = z;
    ss += z * z;
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
