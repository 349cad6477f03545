// SIMD kernels of the noise samplers, compiled once per Highway target (foreach_target) and
// dispatched at run time (see samplers.hpp for the stream layout and reproducibility contract).
//
// Designs (all exact transforms of uniforms, no truncation; tail mass reached in brackets):
//  * uniform: (k + 1/2) 2^-53, k = top 53 bits, so u in (0,1) excluding 0 and 1.
//  * "fine" uniforms for tails: u = (k + 1/2) 2^-63 from 63 bits, rounded once to double, so the
//    smallest u is 2^-64 and small u keep full relative precision [tail mass 2^-64 ~ 5.4e-20].
//  * exponential / Laplace: -b log u (Laplace: sign from bit 63) [|X| up to 64 ln2 b = 44.4 b].
//  * logistic: v = (k + 1/2) 2^-64 in (0, 1/2], X = ±s (log1p(-v) - log v) [45.1 s, mass 2^-64].
//  * Cauchy: X = ±gamma cos(pi u/2)/sin(pi u/2) (exact inverse of P(|X| > x) = (2/pi) atan(gamma/x))
//    [|X| up to 1.2e19 gamma, tail mass 2^-64].
//  * Gaussian: Box-Muller, R = sqrt(-2 log u1) (fine u1), theta uniform (CosSinUniform)
//    [R up to 9.42 sigma; P(R > 9.42) = 2^-64].
//  * Student-t (and GenCauchy = gamma t_{k-1}/sqrt(k-1)): Bailey's polar method (Math. Comp. 1994):
//    (U,V) uniform in the unit disc (rejection, acceptance pi/4), W = U^2+V^2,
//    T = U sqrt(nu (W^{-2/nu} - 1) / W), evaluated in log space [W down to ~2^-105].
//  * generalized Gaussian: |X/s|^beta ~ Gamma(1/beta); Gamma(a) by Marsaglia-Tsang (2000) with a
//    normal proposal, boosted by U^(1/a) when a < 1; the power 1/beta is taken in log space.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "sampling/samplers.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "common/errors.hpp"
#include "sampling/keyed_stream.hpp"
#include "sampling/philox.hpp"
#include "sampling/samplers.hpp"

HWY_BEFORE_NAMESPACE();
namespace puffer::sampling {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DU = hn::ScalableTag<std::uint64_t>;
using DI = hn::ScalableTag<std::int64_t>;
using DF = hn::ScalableTag<double>;
using VU = hn::Vec<DU>;
using VF = hn::Vec<DF>;

// Full 64-bit product of two values < 2^32 held in 64-bit lanes.
HWY_INLINE VU MulWide(VU a, VU b) {
#if HWY_TARGET == HWY_SCALAR
  const VU lo = hn::Set(DU(), 0xFFFFFFFFull);
  return hn::And(a, lo) * hn::And(b, lo);
#else
  const hn::Repartition<std::uint32_t, DU> d32;
  return hn::MulEven(hn::BitCast(d32, a), hn::BitCast(d32, b));
#endif
}

// Philox4x32-10 on U x Lanes(DU) independent blocks; counters in the low halves of 64-bit
// lanes. U independent chains are interleaved so the multiply latency is hidden (the rounds of
// one chain are strictly sequential). Returns the two 64-bit words of each block.
template <int U>
HWY_INLINE void PhiloxN(VU (&c0)[U], VU (&c1)[U], VU (&c2)[U], VU (&c3)[U], std::uint32_t k0, std::uint32_t k1,
                        VU (&w0)[U], VU (&w1)[U]) {
  const DU du;
  const VU m0 = hn::Set(du, kPhiloxM0), m1 = hn::Set(du, kPhiloxM1);
  const VU lo = hn::Set(du, 0xFFFFFFFFull);
#pragma GCC unroll 10
  for (int r = 0; r < 10; ++r) {
    const VU key0 = hn::Set(du, k0), key1 = hn::Set(du, k1);
    for (int u = 0; u < U; ++u) {
      const VU p0 = MulWide(c0[u], m0), p1 = MulWide(c2[u], m1);
      const VU n0 = hn::Xor(hn::Xor(hn::ShiftRight<32>(p1), c1[u]), key0);
      const VU n2 = hn::Xor(hn::Xor(hn::ShiftRight<32>(p0), c3[u]), key1);
      // Only the low 32 bits of each lane are meaningful: MulEven reads just those, so the
      // high halves may carry garbage until the final masking below (saves two ANDs a round).
      c1[u] = p1;
      c3[u] = p0;
      c0[u] = n0;
      c2[u] = n2;
    }
    k0 += kPhiloxW0;
    k1 += kPhiloxW1;
  }
  for (int u = 0; u < U; ++u) {
    w0[u] = hn::Or(hn::And(c0[u], lo), hn::ShiftLeft<32>(c1[u]));
    w1[u] = hn::Or(hn::And(c2[u], lo), hn::ShiftLeft<32>(c3[u]));
  }
}

HWY_INLINE void Philox(VU c0, VU c1, VU c2, VU c3, std::uint32_t k0, std::uint32_t k1, VU& w0, VU& w1) {
  VU a0[1] = {c0}, a1[1] = {c1}, a2[1] = {c2}, a3[1] = {c3}, o0[1], o1[1];
  PhiloxN<1>(a0, a1, a2, a3, k0, k1, o0, o1);
  w0 = o0[0];
  w1 = o1[0];
}

// (k + 1/2) 2^-53 with k the top 53 bits: uniform on (0,1), never 0 or 1.
HWY_INLINE VF U53(VU w) {
  const DF df;
  const DI di;
  const VF k = hn::ConvertTo(df, hn::BitCast(di, hn::ShiftRight<11>(w)));
  return hn::Mul(hn::Add(k, hn::Set(df, 0.5)), hn::Set(df, 0x1.0p-53));
}
// (k + 1/2) 2^-63 with k the low 63 bits, rounded once: (0,1], smallest 2^-64, full relative
// precision near 0 (where the tails live).
HWY_INLINE VF Fine63(VU w) {
  const DF df;
  const DI di;
  const DU du;
  const VF k = hn::ConvertTo(df, hn::BitCast(di, hn::And(w, hn::Set(du, 0x7FFFFFFFFFFFFFFFull))));
  return hn::Mul(hn::Add(k, hn::Set(df, 0.5)), hn::Set(df, 0x1.0p-63));
}
// Sign bit (bit 63 of w) as a double mask to Xor into a non-negative magnitude.
HWY_INLINE VF SignOf(VU w) {
  const DF df;
  const DU du;
  return hn::BitCast(df, hn::And(w, hn::Set(du, 0x8000000000000000ull)));
}

// (cos theta, sin theta) for theta uniform on the circle, from 64 random bits: the top 2 bits
// pick a quadrant q, the next 53 bits give delta uniform in (-pi/4, pi/4), and theta =
// q pi/2 + delta (a measure-preserving map onto the circle; rotation invariance of the pair
// makes the offset irrelevant). cos/sin of |delta| <= pi/4 by the fdlibm kernels.
HWY_INLINE void CosSinUniform(VU w, VF& c, VF& s) {
  const DF df;
  const DU du;
  const DI di;
  const VF k = hn::ConvertTo(df, hn::BitCast(di, hn::And(hn::ShiftRight<9>(w), hn::Set(du, (1ull << 53) - 1))));
  // delta = ((k + 1/2) 2^-53 - 1/2) pi/2
  const VF d = hn::Mul(hn::Sub(hn::Mul(hn::Add(k, hn::Set(df, 0.5)), hn::Set(df, 0x1.0p-53)), hn::Set(df, 0.5)),
                       hn::Set(df, 1.5707963267948966));
  const VF x2 = hn::Mul(d, d);
  // fdlibm __kernel_sin / __kernel_cos minimax polynomials for |x| <= pi/4 (errors < 1 ulp;
  // checked against mpmath at 30 digits: 6.5e-17 / 1.2e-16 absolute).
  VF ps = hn::Set(df, 1.58969099521155010221e-10);
  ps = hn::MulAdd(ps, x2, hn::Set(df, -2.50507602534068634195e-08));
  ps = hn::MulAdd(ps, x2, hn::Set(df, 2.75573137070700676789e-06));
  ps = hn::MulAdd(ps, x2, hn::Set(df, -1.98412698298579493134e-04));
  ps = hn::MulAdd(ps, x2, hn::Set(df, 8.33333333332248946124e-03));
  ps = hn::MulAdd(ps, x2, hn::Set(df, -1.66666666666666324348e-01));
  const VF sn = hn::MulAdd(hn::Mul(ps, x2), d, d);
  VF pc = hn::Set(df, -1.13596475577881948265e-11);
  pc = hn::MulAdd(pc, x2, hn::Set(df, 2.08757232129817482790e-09));
  pc = hn::MulAdd(pc, x2, hn::Set(df, -2.75573143513906633035e-07));
  pc = hn::MulAdd(pc, x2, hn::Set(df, 2.48015872894767294178e-05));
  pc = hn::MulAdd(pc, x2, hn::Set(df, -1.38888888888741095749e-03));
  pc = hn::MulAdd(pc, x2, hn::Set(df, 4.16666666666666019037e-02));
  const VF cs = hn::MulAdd(hn::Mul(pc, x2), x2, hn::MulAdd(x2, hn::Set(df, -0.5), hn::Set(df, 1.0)));
  // Quadrant rotation by q * 90 degrees: q=0 (c,s); 1 (-s,c); 2 (-c,-s); 3 (s,-c).
  const VU q = hn::ShiftRight<62>(w);
  const hn::Mask<DF> odd = hn::RebindMask(df, hn::Eq(hn::And(q, hn::Set(du, 1)), hn::Set(du, 1)));
  const VF cc = hn::IfThenElse(odd, sn, cs), ss = hn::IfThenElse(odd, cs, sn);
  // Negate cos for q in {1,2}, sin for q in {2,3}: sign masks built from the bits of q.
  const VU b0 = hn::ShiftLeft<63>(q), b1 = hn::ShiftLeft<62>(q);  // bit 63 = q&1, (q&2)<<62 = bit 63
  const VF negc = hn::BitCast(df, hn::And(hn::Xor(b0, b1), hn::Set(du, 0x8000000000000000ull)));
  const VF negs = hn::BitCast(df, hn::And(b1, hn::Set(du, 0x8000000000000000ull)));
  c = hn::Xor(cc, negc);
  s = hn::Xor(ss, negs);
}

// log of a fine uniform (normal, in [2^-64, 1]): Highway's Log without the subnormal path.
HWY_INLINE VF LogU(VF u) { return hn::impl::Log<DF, VF, false>(DF(), u); }

HWY_INLINE void Counters(std::uint64_t first, VU& c0, VU& c1) {
  const DU du;
  const VU idx = hn::Iota(du, first);
  c0 = hn::And(idx, hn::Set(du, 0xFFFFFFFFull));
  c1 = hn::ShiftRight<32>(idx);
}

// ---- pair samplers: block q -> values 2q, 2q+1. Group = 2 * kUnroll * Lanes values from an
// even index (kUnroll interleaved Philox chains).
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX2
constexpr int kUnroll = 4;  // four chains hide the multiply latency (measured +15-25 %)
#else
constexpr int kUnroll = 2;
#endif

template <int K>
HWY_INLINE void PairValues(const KernelParams& p, VU w0, VU w1, VF& a, VF& b) {
  const DF df;
  const VF s = hn::Set(df, p.scale);
  if constexpr (K == int(Kind::Uniform)) {
    a = U53(w0);
    b = U53(w1);
  } else if constexpr (K == int(Kind::Exponential)) {
    a = hn::Mul(hn::Neg(LogU(Fine63(w0))), s);
    b = hn::Mul(hn::Neg(LogU(Fine63(w1))), s);
  } else if constexpr (K == int(Kind::Laplace)) {
    a = hn::Xor(hn::Mul(hn::Neg(LogU(Fine63(w0))), s), SignOf(w0));
    b = hn::Xor(hn::Mul(hn::Neg(LogU(Fine63(w1))), s), SignOf(w1));
  } else if constexpr (K == int(Kind::Logistic)) {
    const VF v0 = hn::Mul(Fine63(w0), hn::Set(df, 0.5)), v1 = hn::Mul(Fine63(w1), hn::Set(df, 0.5));
    a = hn::Xor(hn::Mul(hn::Sub(hn::Log1p(df, hn::Neg(v0)), LogU(v0)), s), SignOf(w0));
    b = hn::Xor(hn::Mul(hn::Sub(hn::Log1p(df, hn::Neg(v1)), LogU(v1)), s), SignOf(w1));
  } else if constexpr (K == int(Kind::Cauchy)) {
    const VF h = hn::Set(df, 1.5707963267948966);
    const VF t0 = hn::Mul(Fine63(w0), h), t1 = hn::Mul(Fine63(w1), h);
    a = hn::Xor(hn::Mul(hn::Div(hn::Cos(df, t0), hn::Sin(df, t0)), s), SignOf(w0));
    b = hn::Xor(hn::Mul(hn::Div(hn::Cos(df, t1), hn::Sin(df, t1)), s), SignOf(w1));
  } else {  // Gaussian, Box-Muller
    const VF r = hn::Mul(hn::Sqrt(hn::Mul(LogU(Fine63(w0)), hn::Set(df, -2.0))), s);
    VF c, sn;
    CosSinUniform(w1, c, sn);
    a = hn::Mul(r, c);
    b = hn::Mul(r, sn);
  }
}

template <int K>
HWY_INLINE void PairGroup(const KernelParams& p, StreamKey key, std::uint64_t g0, double* HWY_RESTRICT dst) {
  const DF df;
  const DU du;
  const std::size_t N = hn::Lanes(df);
  VU c0[kUnroll], c1[kUnroll], c2[kUnroll], c3[kUnroll], w0[kUnroll], w1[kUnroll];
  for (int u = 0; u < kUnroll; ++u) {
    Counters(g0 / 2 + u * N, c0[u], c1[u]);
    c2[u] = hn::Zero(du);
    c3[u] = hn::Set(du, key.word);
  }
  PhiloxN<kUnroll>(c0, c1, c2, c3, key.k0, key.k1, w0, w1);
  for (int u = 0; u < kUnroll; ++u) {
    VF a, b;
    PairValues<K>(p, w0[u], w1[u], a, b);
    hn::StoreInterleaved2(a, b, df, dst + 2 * N * u);
  }
}

// ---- rejection samplers: value i owns sub-stream (i, sub). Group = Lanes values.
HWY_INLINE VF StudentCandidate(const KernelParams& p, VU w0, VU w1, hn::Mask<DF>& ok) {
  const DF df;
  const VF one = hn::Set(df, 1.0), two = hn::Set(df, 2.0);
  const VF u = hn::Sub(hn::Mul(U53(w0), two), one);  // (2k+1) 2^-53 - 1: in (-1,1), never 0
  const VF v = hn::Sub(hn::Mul(U53(w1), two), one);
  const VF w = hn::MulAdd(u, u, hn::Mul(v, v));
  ok = hn::Lt(w, one);
  const VF ws = hn::IfThenElse(ok, w, hn::Set(df, 0.5));  // keep logs finite in rejected lanes
  // L = -(2/nu) log W >= 0; root = sqrt(expm1(L)), which overflows only for L > 709: there
  // root = exp(L/2) to double precision (exp(-L) < 1e-300). Exp is evaluated only if a lane needs it.
  const VF L = hn::Mul(LogU(ws), hn::Set(df, -2.0 / p.nu));
  const VF big_l = hn::Set(df, 700.0);
  VF root = hn::Sqrt(hn::Expm1(df, hn::Min(L, big_l)));
  const hn::Mask<DF> huge = hn::Gt(L, big_l);
  if (!hn::AllFalse(df, huge)) root = hn::IfThenElse(huge, hn::Exp(df, hn::Mul(L, hn::Set(df, 0.5))), root);
  // T = U sqrt(nu) root / sqrt(W); p.scale already includes sqrt(nu) and the user scale.
  return hn::Mul(hn::Div(hn::Mul(u, root), hn::Sqrt(ws)), hn::Set(df, p.scale));
}

HWY_INLINE VF GenGaussCandidate(const KernelParams& p, VU a0, VU a1, VU b0, VU b1, hn::Mask<DF>& ok) {
  const DF df;
  // Normal proposal (one Box-Muller coordinate).
  const VF r = hn::Sqrt(hn::Mul(LogU(Fine63(a0)), hn::Set(df, -2.0)));
  VF cth, sth;
  CosSinUniform(a1, cth, sth);
  const VF x = hn::Mul(r, cth);
  const VF d = hn::Set(df, p.ma_d);
  const VF v1 = hn::MulAdd(hn::Set(df, p.ma_c), x, hn::Set(df, 1.0));
  const hn::Mask<DF> pos = hn::Gt(v1, hn::Zero(df));
  const VF v1s = hn::IfThenElse(pos, v1, hn::Set(df, 1.0));
  const VF v = hn::Mul(hn::Mul(v1s, v1s), v1s);
  const VF logv = hn::Mul(hn::Log(df, v1s), hn::Set(df, 3.0));
  // Marsaglia-Tsang acceptance: u < 1 - 0.0331 x^4 (squeeze, implies the exact test) or
  // log u < x^2/2 + d - d v + d log v. The log is skipped when every lane passed the squeeze.
  const VF u = Fine63(b0);
  const VF x2 = hn::Mul(x, x);
  ok = hn::And(pos, hn::Lt(u, hn::NegMulAdd(hn::Mul(x2, x2), hn::Set(df, 0.0331), hn::Set(df, 1.0))));
  if (!hn::AllTrue(df, ok)) {
    const VF rhs = hn::MulAdd(d, logv, hn::Sub(hn::MulAdd(x2, hn::Set(df, 0.5), d), hn::Mul(d, v)));
    ok = hn::And(pos, hn::Or(ok, hn::Lt(LogU(u), rhs)));
  }
  VF logg = hn::Add(hn::Set(df, p.log_d), logv);  // log(d v)
  if (p.inv_a > 0.0) logg = hn::MulAdd(LogU(Fine63(b1)), hn::Set(df, p.inv_a), logg);
  const VF mag = hn::Mul(hn::Exp(df, hn::Mul(logg, hn::Set(df, p.inv_beta))), hn::Set(df, p.scale));
  return hn::Xor(mag, SignOf(b1));
}

// One attempt for the values idx (lanes) at attempt numbers att: candidate and acceptance.
template <int K>
HWY_INLINE VF Candidate(const KernelParams& p, StreamKey key, VU idx, VU att, hn::Mask<DF>& ok) {
  const DU du;
  const VU c0 = hn::And(idx, hn::Set(du, 0xFFFFFFFFull)), c1 = hn::ShiftRight<32>(idx);
  const VU word = hn::Set(du, key.word);
  if constexpr (K == int(Kind::GenGaussian)) {
    VU c0s[2] = {c0, c0}, c1s[2] = {c1, c1}, c2s[2], c3s[2] = {word, word}, w0[2], w1[2];
    c2s[0] = hn::Add(att, att);
    c2s[1] = hn::Add(c2s[0], hn::Set(du, 1));
    PhiloxN<2>(c0s, c1s, c2s, c3s, key.k0, key.k1, w0, w1);
    return GenGaussCandidate(p, w0[0], w1[0], w0[1], w1[1], ok);
  } else {
    VU w0, w1;
    Philox(c0, c1, att, word, key.k0, key.k1, w0, w1);
    return StudentCandidate(p, w0, w1, ok);
  }
}

// Rejection samplers. Value i owns the sub-stream (i, attempt = 0, 1, 2, ...) and takes its
// first accepted attempt, so the result depends on i alone. Vectorised without waiting for the
// slowest lane: a first pass tries attempt 0 for a batch of B = 4N consecutive values; rejected
// values go to a pending list that is retried B at a time (compaction), so each pass does full
// work. The bookkeeping is branch-free so independent vectors overlap in the pipeline.
// Sources of one batch of B = kReject * Lanes candidates for the rejection loop below: lane l is
// attempt ba[l] of value bi[l]; writes the candidate to vals[l] and 1.0/0.0 (accepted) to okv[l].
constexpr std::size_t kReject = 4;
struct PhiloxSource {
  StreamKey key;
  template <int K>
  HWY_INLINE void Batch(const KernelParams& p, const std::uint64_t* bi, const std::uint64_t* ba, double* vals,
                        double* okv) const {
    const DF df;
    const DU du;
    const std::size_t N = hn::Lanes(df);
    for (std::size_t u = 0; u < kReject; ++u) {
      hn::Mask<DF> ok;
      const VF c = Candidate<K>(p, key, hn::Load(du, bi + u * N), hn::Load(du, ba + u * N), ok);
      hn::Store(c, df, vals + u * N);
      hn::Store(hn::IfThenElseZero(ok, hn::Set(df, 1.0)), df, okv + u * N);
    }
  }
};

template <int K, class T, class Src>
void RunReject(const KernelParams& p, const Src& src, std::uint64_t start, std::size_t n, const T* in, T* out) {
  const DF df;
  const DU du;
  constexpr std::size_t kU = kReject;
  constexpr std::size_t kMax = kU * HWY_MAX_BYTES / sizeof(double);
  const std::size_t N = hn::Lanes(df), B = kU * N;
  HWY_ALIGN double vals[kMax];
  HWY_ALIGN double okv[kMax];
  HWY_ALIGN std::uint64_t bi[kMax], ba[kMax];
  std::uint64_t pend_i[4 * kMax], pend_a[4 * kMax];
  std::size_t np = 0;
  const std::uint64_t end = start + n;
  // Candidates for the B lanes in bi/ba; the first m are real, the rest padding.
  auto run = [&](std::size_t m) {
    src.template Batch<K>(p, bi, ba, vals, okv);
    for (std::size_t l = 0; l < m; ++l) {
      const std::size_t j = std::size_t(bi[l] - start);
      const bool ok = okv[l] != 0.0;
      const T cur = out[j];  // still untouched for a rejected lane (also when in == out)
      const T fresh = T((in ? double(in[j]) : 0.0) + vals[l]);
      out[j] = ok ? fresh : cur;
      pend_i[np] = bi[l];
      pend_a[np] = ba[l] + 1;
      np += ok ? 0 : 1;
      if (HWY_UNLIKELY(!ok && ba[l] >= 4000))
        throw NumericalFailure("sampler: rejection loop did not terminate (probability < 1e-300)");
    }
  };
  auto drain = [&](bool all) {
    while (np >= B || (all && np > 0)) {
      const std::size_t m = std::min(B, np);
      np -= m;
      for (std::size_t l = 0; l < B; ++l) {  // pad a partial batch with copies of its first entry
        bi[l] = pend_i[np + (l < m ? l : 0)];
        ba[l] = pend_a[np + (l < m ? l : 0)];
      }
      run(m);
    }
  };
  for (std::uint64_t i = start; i < end; i += B) {
    const std::size_t m = std::size_t(std::min<std::uint64_t>(B, end - i));
    for (std::size_t u = 0; u < kU; ++u) {
      hn::Store(hn::Iota(du, i + u * N), du, bi + u * N);
      hn::Store(hn::Zero(du), du, ba + u * N);
    }
    run(m);
    drain(false);  // np < B before run, so np < 2B after: pend arrays (4 kMax) never overflow
  }
  drain(true);
}

template <int K>
HWY_INLINE void Group(const KernelParams& p, StreamKey key, std::uint64_t g0, double* HWY_RESTRICT dst) {
  PairGroup<K>(p, key, g0, dst);
}

template <int K>
constexpr bool IsPair() {
  return !(K == int(Kind::StudentT) || K == int(Kind::GenGaussian));
}

// Values [start, start + n) of the stream into out (plus in, if given).
template <int K, class T>
void RunKind(const KernelParams& p, StreamKey key, std::uint64_t start, std::size_t n, const T* in, T* out) {
  const DF df;
  const std::size_t G = IsPair<K>() ? 2 * kUnroll * hn::Lanes(df) : hn::Lanes(df);
  HWY_ALIGN double tmp[2 * kUnroll * HWY_MAX_BYTES / sizeof(double)];
  std::uint64_t i = start;
  const std::uint64_t end = start + n;
  while (i < end) {
    const bool aligned = !IsPair<K>() || (i % 2 == 0);
    if (aligned && end - i >= G) {
      // Whole groups straight into out.
      std::size_t j = std::size_t(i - start);
      if constexpr (std::is_same_v<T, double>) {
        if (in == nullptr) {
          for (; end - i >= G; i += G, j += G) Group<K>(p, key, i, out + j);
          continue;
        }
      }
      for (; end - i >= G; i += G, j += G) {
        Group<K>(p, key, i, tmp);
        if constexpr (std::is_same_v<T, double>) {
          for (std::size_t l = 0; l < G; l += hn::Lanes(df)) {
            hn::StoreU(hn::Add(hn::LoadU(df, in + j + l), hn::Load(df, tmp + l)), df, out + j + l);
          }
        } else {
          for (std::size_t l = 0; l < G; ++l) out[j + l] = T((in ? double(in[j + l]) : 0.0) + tmp[l]);
        }
      }
      continue;
    }
    // Ragged head/tail: compute the group containing i, copy the part we need.
    const std::uint64_t g0 = IsPair<K>() ? (i & ~std::uint64_t(1)) : i;
    Group<K>(p, key, g0, tmp);
    const std::uint64_t stop = std::min<std::uint64_t>(end, g0 + G);
    for (; i < stop; ++i) {
      const std::size_t j = std::size_t(i - start);
      out[j] = T((in ? double(in[j]) : 0.0) + tmp[i - g0]);
    }
  }
}

template <class T>
void Run(const KernelParams& p, StreamKey key, std::uint64_t start, std::size_t n, const T* in, T* out) {
  switch (Kind(p.kind)) {
    case Kind::Uniform: return RunKind<int(Kind::Uniform), T>(p, key, start, n, in, out);
    case Kind::Exponential: return RunKind<int(Kind::Exponential), T>(p, key, start, n, in, out);
    case Kind::Laplace: return RunKind<int(Kind::Laplace), T>(p, key, start, n, in, out);
    case Kind::Gaussian: return RunKind<int(Kind::Gaussian), T>(p, key, start, n, in, out);
    case Kind::Cauchy: return RunKind<int(Kind::Cauchy), T>(p, key, start, n, in, out);
    case Kind::Logistic: return RunKind<int(Kind::Logistic), T>(p, key, start, n, in, out);
    case Kind::StudentT:
    case Kind::GenCauchy: return RunReject<int(Kind::StudentT), T>(p, PhiloxSource{key}, start, n, in, out);
    case Kind::GenGaussian: return RunReject<int(Kind::GenGaussian), T>(p, PhiloxSource{key}, start, n, in, out);
  }
}

void RunF64(const KernelParams& p, StreamKey key, std::uint64_t start, std::size_t n, const double* in,
            double* out) {
  Run<double>(p, key, start, n, in, out);
}
void RunF32(const KernelParams& p, StreamKey key, std::uint64_t start, std::size_t n, const float* in,
            float* out) {
  Run<float>(p, key, start, n, in, out);
}

// ---- keyed ChaCha20 streams (layout in keyed_stream.hpp). One vector lane = one block.
#if HWY_TARGET == HWY_SCALAR
using D32 = hn::Rebind<std::uint32_t, DU>;  // one-lane vectors only
#else
using D32 = hn::Repartition<std::uint32_t, DU>;  // 2 x Lanes(DU) blocks per call
#endif
using V32 = hn::Vec<D32>;
constexpr std::size_t kMaxL32 = HWY_MAX_BYTES / sizeof(std::uint32_t);

HWY_INLINE void QuarterRound(V32& a, V32& b, V32& c, V32& d) {
  a = hn::Add(a, b); d = hn::RotateRight<16>(hn::Xor(d, a));  // rotl 16
  c = hn::Add(c, d); b = hn::RotateRight<20>(hn::Xor(b, c));  // rotl 12
  a = hn::Add(a, b); d = hn::RotateRight<24>(hn::Xor(d, a));  // rotl 8
  c = hn::Add(c, d); b = hn::RotateRight<25>(hn::Xor(b, c));  // rotl 7
}

// Lanes(D32) RFC 8439 blocks at once, lane l with input words (w12, w13, w14) = lane l of
// (c12, c13, c14); lane l of o[r] = output word r of lane l's block.
HWY_INLINE void ChaChaRegs(const KeyedKey& k, V32 c12, V32 c13, V32 c14, V32 (&o)[16]) {
  const D32 d;
  V32 s[16];
  s[0] = hn::Set(d, 0x61707865u);
  s[1] = hn::Set(d, 0x3320646eu);
  s[2] = hn::Set(d, 0x79622d32u);
  s[3] = hn::Set(d, 0x6b206574u);
  for (int i = 0; i < 8; ++i) s[4 + i] = hn::Set(d, k.key[std::size_t(i)]);
  s[12] = c12;
  s[13] = c13;
  s[14] = c14;
  s[15] = hn::Set(d, k.word);
  V32 v[16];
  for (int i = 0; i < 16; ++i) v[i] = s[i];
  for (int r = 0; r < 10; ++r) {
    QuarterRound(v[0], v[4], v[8], v[12]);
    QuarterRound(v[1], v[5], v[9], v[13]);
    QuarterRound(v[2], v[6], v[10], v[14]);
    QuarterRound(v[3], v[7], v[11], v[15]);
    QuarterRound(v[0], v[5], v[10], v[15]);
    QuarterRound(v[1], v[6], v[11], v[12]);
    QuarterRound(v[2], v[7], v[8], v[13]);
    QuarterRound(v[3], v[4], v[9], v[14]);
  }
  for (int i = 0; i < 16; ++i) o[i] = hn::Add(v[i], s[i]);
}

// As ChaChaRegs, stored: x[r * L + l] = output word r of lane l's block.
HWY_INLINE void ChaChaLanes(const KeyedKey& k, V32 c12, V32 c13, V32 c14, std::uint32_t* HWY_RESTRICT x) {
  const D32 d;
  const std::size_t L = hn::Lanes(d);
  V32 o[16];
  ChaChaRegs(k, c12, c13, c14, o);
  for (int i = 0; i < 16; ++i) hn::Store(o[i], d, x + std::size_t(i) * L);
}

#undef PUFFER_CHACHA_TRANSPOSE16  // (this file is compiled once per target)
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define PUFFER_CHACHA_TRANSPOSE16 1
// The 16 x 16 transpose of 32-bit words in registers (two rounds of unpacks within 128-bit
// blocks, two of 128-bit block shuffles): row l (lane l's block: its words x[0..15], i.e. its
// eight little-endian 64-bit words W_0..W_7 in order) to dst + 16 l, for the first nl lanes.
HWY_INLINE void StoreBlocksTransposed(const V32 (&x)[16], std::size_t nl, std::uint32_t* HWY_RESTRICT dst) {
  __m512i t[16], u[16];
  for (int p = 0; p < 8; ++p) {
    t[2 * p] = _mm512_unpacklo_epi32(x[2 * p].raw, x[2 * p + 1].raw);
    t[2 * p + 1] = _mm512_unpackhi_epi32(x[2 * p].raw, x[2 * p + 1].raw);
  }
  // u[4 q + m], block j: (x[4 q], .., x[4 q + 3]) of lane 4 j + m
  for (int q = 0; q < 4; ++q) {
    u[4 * q + 0] = _mm512_unpacklo_epi64(t[4 * q], t[4 * q + 2]);
    u[4 * q + 1] = _mm512_unpackhi_epi64(t[4 * q], t[4 * q + 2]);
    u[4 * q + 2] = _mm512_unpacklo_epi64(t[4 * q + 1], t[4 * q + 3]);
    u[4 * q + 3] = _mm512_unpackhi_epi64(t[4 * q + 1], t[4 * q + 3]);
  }
  for (int m = 0; m < 4; ++m) {
    const __m512i a = _mm512_shuffle_i32x4(u[m], u[4 + m], 0x44), b = _mm512_shuffle_i32x4(u[m], u[4 + m], 0xEE);
    const __m512i c = _mm512_shuffle_i32x4(u[8 + m], u[12 + m], 0x44), e = _mm512_shuffle_i32x4(u[8 + m], u[12 + m], 0xEE);
    const __m512i row[4] = {_mm512_shuffle_i32x4(a, c, 0x88), _mm512_shuffle_i32x4(a, c, 0xDD),
                            _mm512_shuffle_i32x4(b, e, 0x88), _mm512_shuffle_i32x4(b, e, 0xDD)};
    for (std::size_t j = 0; j < 4; ++j) {
      const std::size_t l = 4 * j + std::size_t(m);
      if (l < nl) _mm512_storeu_si512(reinterpret_cast<void*>(dst + 16 * l), row[j]);
    }
  }
}
#endif

// 64-bit word k of lane l's block: x[2k] | x[2k+1] << 32 (little-endian keystream).
HWY_INLINE std::uint64_t Word64(const std::uint32_t* x, std::size_t L, std::size_t l, std::size_t k) {
  return std::uint64_t(x[2 * k * L + l]) | (std::uint64_t(x[(2 * k + 1) * L + l]) << 32);
}

// Values 8 j0 .. 8 (j0 + L) - 1 of the pair layout (blocks j0 .. j0 + L - 1) into dst.
template <int K>
HWY_INLINE void KeyedPairGroup(const KernelParams& p, const KeyedKey& key, std::uint64_t j0,
                               double* HWY_RESTRICT dst) {
  const D32 d32;
  const DU du;
  const DF df;
  const std::size_t L = hn::Lanes(d32), N = hn::Lanes(df);
  HWY_ALIGN std::uint32_t x[16 * kMaxL32];
  HWY_ALIGN std::uint64_t w[8 * kMaxL32];
  const V32 lo = hn::Iota(d32, std::uint32_t(j0));  // wraps mod 2^32: carry into w13 below
  const V32 carry = hn::IfThenElseZero(hn::Lt(lo, hn::Set(d32, std::uint32_t(j0))), hn::Set(d32, 1u));
  ChaChaLanes(key, lo, hn::Add(hn::Set(d32, std::uint32_t(j0 >> 32)), carry), hn::Zero(d32), x);
  for (std::size_t l = 0; l < L; ++l)
    for (std::size_t k = 0; k < 8; ++k) w[8 * l + k] = Word64(x, L, l, k);
  for (std::size_t o = 0; o < 8 * L; o += 2 * N) {
    VU w0, w1;
    hn::LoadInterleaved2(du, w + o, w0, w1);  // value o + 2m takes w[o + 2m], value o + 2m + 1 w[o + 2m + 1]
    VF a, b;
    PairValues<K>(p, w0, w1, a, b);
    hn::StoreInterleaved2(a, b, df, dst + o);
  }
}

template <int K, class T>
void RunKeyedPair(const KernelParams& p, const KeyedKey& key, std::uint64_t start, std::size_t n, const T* in,
                  T* out) {
  const std::size_t G = 8 * hn::Lanes(D32());
  HWY_ALIGN double tmp[8 * kMaxL32] = {};  // (zeroed: silences a false -Wmaybe-uninitialized on SCALAR)
  std::uint64_t i = start;
  const std::uint64_t end = start + n;
  while (i < end) {
    const std::uint64_t g0 = i - i % G;  // groups aligned to absolute positions
    const std::uint64_t stop = std::min<std::uint64_t>(end, g0 + G);
    KeyedPairGroup<K>(p, key, g0 / 8, tmp);
    for (; i < stop; ++i) {
      const std::size_t j = std::size_t(i - start);
      out[j] = T((in ? double(in[j]) : 0.0) + tmp[i - g0]);
    }
  }
}

// Rejection candidates from the keyed blocks (value bi[l], attempt ba[l]) of layout tag.
struct KeyedSource {
  const KeyedKey& key;
  template <int K>
  HWY_INLINE void Batch(const KernelParams& p, const std::uint64_t* bi, const std::uint64_t* ba, double* vals,
                        double* okv) const {
    const D32 d32;
    const DU du;
    const DF df;
    const std::size_t L = hn::Lanes(d32), N = hn::Lanes(df), B = kReject * N;
    constexpr std::size_t kB = kReject * HWY_MAX_BYTES / sizeof(double);
    constexpr std::uint32_t tag = K == int(Kind::GenGaussian) ? 2u : 1u;
    constexpr std::size_t nw = K == int(Kind::GenGaussian) ? 4 : 2;
    HWY_ALIGN std::uint32_t c12[kB], c13[kB], c14[kB];
    HWY_ALIGN std::uint32_t x[16 * kMaxL32];
    HWY_ALIGN std::uint64_t w[4][kB];
    for (std::size_t l = 0; l < B; ++l) {
      c12[l] = std::uint32_t(bi[l]);
      c13[l] = std::uint32_t(bi[l] >> 32);
      c14[l] = (tag << kKeyedTagShift) | std::uint32_t(ba[l]);  // ba < 4001 (RunReject's cap)
    }
    for (std::size_t b0 = 0; b0 < B; b0 += L) {
      ChaChaLanes(key, hn::Load(d32, c12 + b0), hn::Load(d32, c13 + b0), hn::Load(d32, c14 + b0), x);
      for (std::size_t l = 0; l < L && b0 + l < B; ++l)
        for (std::size_t k = 0; k < nw; ++k) w[k][b0 + l] = Word64(x, L, l, k);
    }
    for (std::size_t u = 0; u < kReject; ++u) {
      hn::Mask<DF> ok;
      VF c;
      if constexpr (K == int(Kind::GenGaussian)) {
        c = GenGaussCandidate(p, hn::Load(du, w[0] + u * N), hn::Load(du, w[1] + u * N), hn::Load(du, w[2] + u * N),
                              hn::Load(du, w[3] + u * N), ok);
      } else {
        c = StudentCandidate(p, hn::Load(du, w[0] + u * N), hn::Load(du, w[1] + u * N), ok);
      }
      hn::Store(c, df, vals + u * N);
      hn::Store(hn::IfThenElseZero(ok, hn::Set(df, 1.0)), df, okv + u * N);
    }
  }
};

// Lattice layout (keyed_stream.hpp, tag 3): the raw words of fast blocks j0 .. j0 + nb - 1 and,
// with hints, log_scale * log(Fine63(word)) -- the hint of the lattice samplers (lattice.hpp),
// which only decides where their exact comparisons start.
void RunKeyedLatticeFill(const KeyedKey& key, std::uint64_t j0, std::size_t nb, std::uint64_t* words, double* hints,
                         double log_scale) {
  const D32 d32;
  const DU du;
  const DF df;
  const std::size_t L = hn::Lanes(d32), N = hn::Lanes(df);
  HWY_ALIGN std::uint32_t x[16 * kMaxL32];
  for (std::size_t b0 = 0; b0 < nb; b0 += L) {
    const std::uint64_t j = j0 + b0;
    const V32 lo = hn::Iota(d32, std::uint32_t(j));  // wraps mod 2^32: carry into w13
    const V32 carry = hn::IfThenElseZero(hn::Lt(lo, hn::Set(d32, std::uint32_t(j))), hn::Set(d32, 1u));
    const std::size_t nl = std::min(L, nb - b0);
#ifdef PUFFER_CHACHA_TRANSPOSE16
    V32 o[16];
    ChaChaRegs(key, lo, hn::Add(hn::Set(d32, std::uint32_t(j >> 32)), carry),
               hn::Set(d32, kLatticeTag << kKeyedTagShift), o);
    // (words little-endian: W_k = x[2k] | x[2k+1] << 32 is the pair x[2k], x[2k+1] in memory)
    StoreBlocksTransposed(o, nl, reinterpret_cast<std::uint32_t*>(words + 8 * b0));
    continue;
#endif
    ChaChaLanes(key, lo, hn::Add(hn::Set(d32, std::uint32_t(j >> 32)), carry),
                hn::Set(d32, kLatticeTag << kKeyedTagShift), x);
    for (std::size_t l = 0; l < nl; ++l)
      for (std::size_t k = 0; k < 8; ++k) words[8 * (b0 + l) + k] = Word64(x, L, l, k);
  }
  if (hints == nullptr) return;
  const VF c = hn::Set(df, log_scale);
  std::size_t i = 0;
  for (; i + N <= 8 * nb; i += N) hn::StoreU(hn::Mul(LogU(Fine63(hn::LoadU(du, words + i))), c), df, hints + i);
  for (; i < 8 * nb; ++i) {  // (8 nb is a multiple of N on every target but SCALAR-free corner cases)
    const double u = (double(words[i] & 0x7FFFFFFFFFFFFFFFull) + 0.5) * 0x1.0p-63;
    hints[i] = log_scale * std::log(u);
  }
}

// Lattice inversion on vectors (lattice.cpp: lattice_invert in keyed_stream.hpp). Per lane: u =
// the word's low 63 bits, the hint n (Laplace: (x + 1) / 2 truncated, x = log_scale log(Fine63(w))
// as keyed_lattice_fill's hint; Gaussian: guide[u >> (63 - gbits)]), clamped to [0, size];
// c0: U < TH(n) (n = 0: TH(0) = 1 > U; else u < t63[n]), then up to kInvertSteps steps up while
// U < TH(n + 1). An index is clamped to size - 1 (t63[size - 1] = 0: u > 0 says U >= TH, u = 0 is
// undecided, as direct_below's n >= size). A lane is decided only where every comparison it made
// was strict (u != t63[.]) and it stopped at U >= TH(n + 1): then |Z| = n exactly (the table
// path's answer); any other lane (hint too high, a tie with a floor, more steps) goes to pending.
constexpr int kInvertSteps = 4;
template <class Z>
std::size_t LatticeInvert(const std::uint64_t* HWY_RESTRICT words, std::size_t n, const std::uint64_t* t63,
                          std::uint64_t size, const std::uint64_t* guide, unsigned gbits, double log_scale,
                          Z* HWY_RESTRICT z, std::uint32_t* HWY_RESTRICT pending) {
  const DU du;
  const DI di;
  const DF df;
  const std::size_t N = hn::Lanes(du);
  using VI = hn::Vec<DI>;
  const auto* t = reinterpret_cast<const std::int64_t*>(t63);
  const auto* gd = reinterpret_cast<const std::int64_t*>(guide);
  const VU m63 = hn::Set(du, 0x7FFFFFFFFFFFFFFFull);
  const VI vsize = hn::Set(di, std::int64_t(size)), last = hn::Set(di, std::int64_t(size) - 1);
  const VI zero = hn::Zero(di), one = hn::Set(di, 1);
  const VF ls = hn::Set(df, log_scale), f1 = hn::Set(df, 1.0), fh = hn::Set(df, 0.5);
  const VF f0 = hn::Zero(df), c52 = hn::Set(df, 0x1p52);
  const VU exp52 = hn::Set(du, 0x4330000000000000ull);
  std::size_t np = 0;
  std::size_t i = 0;
  // two passes per chunk: the hints first, then the table gathers, whose loop is short enough for
  // the core to keep many of them (L2 misses: a default table is about 1 MiB) in flight
  constexpr std::size_t kChunk = 512;
  HWY_ALIGN std::int64_t hint[kChunk];
  for (std::size_t c0 = 0; c0 + N <= n; c0 += kChunk) {
  const std::size_t c1 = std::min(n - (n - c0) % N, c0 + kChunk);
  for (std::size_t k = c0; k < c1; k += N) {
    VI nn;
    if (guide != nullptr) {
      const VU uu = hn::And(hn::LoadU(du, words + k), m63);
      nn = hn::GatherIndex(di, gd, hn::BitCast(di, hn::ShiftRightSame(uu, int(63 - gbits))));
    } else {
      const VF x = hn::Mul(LogU(Fine63(hn::LoadU(du, words + k))), ls);
      const VF h = hn::Min(hn::Max(hn::Mul(hn::Add(x, f1), fh), f0), c52);  // h <= 0: 0; >= 2^52: 2^52
      nn = hn::ConvertTo(di, h);                                          // truncation = floor (h >= 0)
    }
    hn::Store(hn::Min(nn, vsize), di, hint + (k - c0));
  }
  for (i = c0; i < c1; i += N) {
    const VU w = hn::LoadU(du, words + i);
    const VI u = hn::BitCast(di, hn::And(w, m63));
    VI nn = hn::Load(di, hint + (i - c0));
    const VI th0 = hn::GatherIndex(di, t, hn::Min(nn, last));
    auto active = hn::Or(hn::Eq(nn, zero), hn::Lt(u, th0));  // U < TH(n) decided
    auto done = hn::Not(hn::Eq(zero, zero));
    done = hn::And(done, hn::Not(done));  // all false
    for (int step = 0; step < kInvertSteps; ++step) {
      const VI n1 = hn::Add(nn, one);
      const VI th1 = hn::GatherIndex(di, t, hn::Min(n1, last));
      done = hn::Or(done, hn::And(active, hn::Gt(u, th1)));  // U >= TH(n + 1): |Z| = n
      active = hn::And(active, hn::Lt(u, th1));               // U < TH(n + 1): one more
      nn = hn::IfThenElse(active, n1, nn);
      if (hn::AllFalse(di, active)) break;
    }
    const VI neg = hn::ShiftRight<63>(hn::BitCast(di, w));  // all ones where bit 63 (the sign) is set
    if constexpr (std::is_same_v<Z, double>) {
      // |Z| < 2^52 as a double exactly; a negative sign as 0 - d (so |Z| = 0 stays +0.0)
      const VF d = hn::Sub(hn::BitCast(df, hn::Or(hn::BitCast(du, nn), exp52)), c52);
      const VF sd = hn::IfThenElse(hn::RebindMask(df, hn::Ne(neg, zero)), hn::Sub(f0, d), d);
      hn::StoreU(sd, df, z + i);
    } else {
      hn::StoreU(hn::Sub(hn::Xor(nn, neg), neg), di, z + i);
    }
    if (!hn::AllTrue(di, done)) {
      HWY_ALIGN std::int64_t flag[HWY_MAX_BYTES / sizeof(std::int64_t)];
      hn::Store(hn::VecFromMask(di, done), di, flag);
      for (std::size_t l = 0; l < N; ++l)
        if (flag[l] == 0) pending[np++] = std::uint32_t(i + l);
    }
  }
  }
  for (; i < n; ++i) pending[np++] = std::uint32_t(i);  // a tail shorter than a vector: the scalar path
  return np;
}

std::size_t RunLatticeInvertI64(const std::uint64_t* words, std::size_t n, const std::uint64_t* t63,
                                std::uint64_t size, const std::uint64_t* guide, unsigned gbits, double log_scale,
                                std::int64_t* z, std::uint32_t* pending) {
  return LatticeInvert<std::int64_t>(words, n, t63, size, guide, gbits, log_scale, z, pending);
}
std::size_t RunLatticeInvertF64(const std::uint64_t* words, std::size_t n, const std::uint64_t* t63,
                                std::uint64_t size, const std::uint64_t* guide, unsigned gbits, double log_scale,
                                double* z, std::uint32_t* pending) {
  return LatticeInvert<double>(words, n, t63, size, guide, gbits, log_scale, z, pending);
}

// Lattice snapping (lattice.cpp): out = (round_half_even(in inv_g) + z) g, all in doubles (exact:
// see lattice_snap_add); false if a sum leaves [-2^53, 2^53].
bool RunLatticeSnapAdd(const double* in, const double* z, double* out, std::size_t n, double inv_g, double g) {
  const DF df;
  const std::size_t N = hn::Lanes(df);
  const VF vi = hn::Set(df, inv_g), vg = hn::Set(df, g), c52 = hn::Set(df, 0x1p52);
  VF big = hn::Zero(df);  // max |sum| (finite: inputs are checked first)
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    const VF x = hn::Mul(hn::LoadU(df, in + i), vi);
    const VF k = hn::CopySign(hn::Sub(hn::Add(hn::Abs(x), c52), c52), x);
    const VF v = hn::Add(k, hn::LoadU(df, z + i));
    big = hn::Max(big, hn::Abs(v));
    hn::StoreU(hn::Mul(v, vg), df, out + i);
  }
  double m = hn::GetLane(hn::MaxOfLanes(df, big));
  for (; i < n; ++i) {
    const double x = in[i] * inv_g;
    const double v = std::copysign((std::fabs(x) + 0x1p52) - 0x1p52, x) + z[i];
    m = std::max(m, std::fabs(v));
    out[i] = v * g;
  }
  return m <= 0x1p53;
}

// Whether some |in[i] inv_g| <= 2^52 fails (a NaN fails).
bool RunLatticeAnyBeyond(const double* in, std::size_t n, double inv_g) {
  const DF df;
  const DU du;
  const std::size_t N = hn::Lanes(df);
  const VF vi = hn::Set(df, inv_g), c52 = hn::Set(df, 0x1p52);
  VU bad = hn::Zero(du);
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    const VF a = hn::Abs(hn::Mul(hn::LoadU(df, in + i), vi));
    bad = hn::Or(bad, hn::BitCast(du, hn::VecFromMask(df, hn::Not(hn::Le(a, c52)))));
  }
  if (!hn::AllTrue(du, hn::Eq(bad, hn::Zero(du)))) return true;
  for (; i < n; ++i)
    if (!(std::fabs(in[i] * inv_g) <= 0x1p52)) return true;
  return false;
}

template <class T>
void RunKeyed(const KernelParams& p, const KeyedKey& key, std::uint64_t start, std::size_t n, const T* in, T* out) {
  switch (Kind(p.kind)) {
    case Kind::Uniform: return RunKeyedPair<int(Kind::Uniform), T>(p, key, start, n, in, out);
    case Kind::Exponential: return RunKeyedPair<int(Kind::Exponential), T>(p, key, start, n, in, out);
    case Kind::Laplace: return RunKeyedPair<int(Kind::Laplace), T>(p, key, start, n, in, out);
    case Kind::Gaussian: return RunKeyedPair<int(Kind::Gaussian), T>(p, key, start, n, in, out);
    case Kind::Cauchy: return RunKeyedPair<int(Kind::Cauchy), T>(p, key, start, n, in, out);
    case Kind::Logistic: return RunKeyedPair<int(Kind::Logistic), T>(p, key, start, n, in, out);
    case Kind::StudentT:
    case Kind::GenCauchy: return RunReject<int(Kind::StudentT), T>(p, KeyedSource{key}, start, n, in, out);
    case Kind::GenGaussian: return RunReject<int(Kind::GenGaussian), T>(p, KeyedSource{key}, start, n, in, out);
  }
}

void RunKeyedF64(const KernelParams& p, const KeyedKey& key, std::uint64_t start, std::size_t n, const double* in,
                 double* out) {
  RunKeyed<double>(p, key, start, n, in, out);
}
void RunKeyedF32(const KernelParams& p, const KeyedKey& key, std::uint64_t start, std::size_t n, const float* in,
                 float* out) {
  RunKeyed<float>(p, key, start, n, in, out);
}

}  // namespace HWY_NAMESPACE
}  // namespace puffer::sampling
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <mutex>

#include "common/parallel.hpp"

namespace puffer::sampling {
namespace {

using F64Fn = void (*)(const KernelParams&, StreamKey, std::uint64_t, std::size_t, const double*, double*);
using F32Fn = void (*)(const KernelParams&, StreamKey, std::uint64_t, std::size_t, const float*, float*);
using KF64Fn = void (*)(const KernelParams&, const KeyedKey&, std::uint64_t, std::size_t, const double*, double*);
using KF32Fn = void (*)(const KernelParams&, const KeyedKey&, std::uint64_t, std::size_t, const float*, float*);
using KLFn = void (*)(const KeyedKey&, std::uint64_t, std::size_t, std::uint64_t*, double*, double);
using SnapFn = bool (*)(const double*, const double*, double*, std::size_t, double, double);
using BeyondFn = bool (*)(const double*, std::size_t, double);
using InvIFn = std::size_t (*)(const std::uint64_t*, std::size_t, const std::uint64_t*, std::uint64_t,
                               const std::uint64_t*, unsigned, double, std::int64_t*, std::uint32_t*);
using InvFFn = std::size_t (*)(const std::uint64_t*, std::size_t, const std::uint64_t*, std::uint64_t,
                               const std::uint64_t*, unsigned, double, double*, std::uint32_t*);
struct Target {
  std::int64_t bit;
  F64Fn f64;
  F32Fn f32;
  KF64Fn kf64;
  KF32Fn kf32;
  KLFn klattice;
  SnapFn snap;
  BeyondFn beyond;
  InvIFn invi;
  InvFFn invf;
};

// Every target compiled into this file, best first.
const std::vector<Target>& compiled() {
  static const std::vector<Target> t = [] {
    std::vector<Target> v;
#define PUFFER_ADD_TARGET(TGT, NS) \
  v.push_back({TGT, &NS::RunF64, &NS::RunF32, &NS::RunKeyedF64, &NS::RunKeyedF32, &NS::RunKeyedLatticeFill, \
               &NS::RunLatticeSnapAdd, &NS::RunLatticeAnyBeyond, &NS::RunLatticeInvertI64,         \
               &NS::RunLatticeInvertF64});
#if HWY_TARGETS & HWY_AVX3_DL
    PUFFER_ADD_TARGET(HWY_AVX3_DL, N_AVX3_DL)
#endif
#if HWY_TARGETS & HWY_AVX3
    PUFFER_ADD_TARGET(HWY_AVX3, N_AVX3)
#endif
#if HWY_TARGETS & HWY_AVX2
    PUFFER_ADD_TARGET(HWY_AVX2, N_AVX2)
#endif
#if HWY_TARGETS & HWY_SSE4
    PUFFER_ADD_TARGET(HWY_SSE4, N_SSE4)
#endif
#if HWY_TARGETS & HWY_SSSE3
    PUFFER_ADD_TARGET(HWY_SSSE3, N_SSSE3)
#endif
#if HWY_TARGETS & HWY_NEON
    PUFFER_ADD_TARGET(HWY_NEON, N_NEON)
#endif
#if HWY_TARGETS & HWY_EMU128
    PUFFER_ADD_TARGET(HWY_EMU128, N_EMU128)
#endif
#if HWY_TARGETS & HWY_SCALAR
    PUFFER_ADD_TARGET(HWY_SCALAR, N_SCALAR)
#endif
#undef PUFFER_ADD_TARGET
    std::vector<Target> out;
    const std::int64_t supported = hwy::SupportedTargets();
    for (const auto& x : v)
      if ((x.bit & supported) != 0) out.push_back(x);
    return out;
  }();
  return t;
}

std::string upper(std::string s) {
  for (auto& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::atomic<int> g_target{-1};  // index into compiled(); -1 = not yet chosen
std::mutex g_target_mu;

int index_of(const std::string& name) {
  const std::string u = upper(name);
  if (u.empty() || u == "AUTO" || u == "BEST") return 0;
  const auto& c = compiled();
  for (std::size_t i = 0; i < c.size(); ++i)
    if (upper(hwy::TargetName(c[i].bit)) == u) return int(i);
  std::string avail;
  for (const auto& t : c) avail += (avail.empty() ? "" : ", ") + std::string(hwy::TargetName(t.bit));
  throw InvalidArgument("simd target", "'" + name + "'", "one of: auto, " + avail);
}

const Target& current() {
  int i = g_target.load(std::memory_order_acquire);
  if (i < 0) {
    std::lock_guard<std::mutex> lk(g_target_mu);
    i = g_target.load();
    if (i < 0) {
      const char* env = std::getenv("PUFFER_SIMD");
      i = env ? index_of(env) : 0;
      g_target.store(i);
    }
  }
  return compiled()[std::size_t(i)];
}

constexpr std::size_t kTask = std::size_t(1) << 15;  // values per task (even: pair layout)

template <class T, class Fn, class Key>
void fill_any(Fn fn, const KernelParams& p, const Key& key, std::uint64_t start, std::size_t n, const T* in,
              T* out, unsigned threads) {
  require(threads <= 1024, "threads", threads, "0 (all cores) to 1024");
  require(out != nullptr || n == 0, "out", "null", "a buffer");
  require(start <= ~std::uint64_t(0) - n, "start", start, "start + size < 2^64");
  const std::size_t n_tasks = (n + kTask - 1) / kTask;
  parallel_for(n_tasks, threads, [&](std::size_t t) {
    const std::size_t off = t * kTask;
    const std::size_t len = std::min(kTask, n - off);
    fn(p, key, start + off, len, in ? in + off : nullptr, out + off);
  });
}

}  // namespace

KernelParams make_kernel_params(int kind, double p0, double p1) {
  require(kind >= 0 && kind <= 8, "kind", kind, "a sampler kind in 0..8");
  auto pos = [](const char* name, double v) { require(std::isfinite(v) && v > 0.0, name, v, "a finite number > 0"); };
  KernelParams k;
  k.kind = kind;
  switch (Kind(kind)) {
    case Kind::Uniform: break;
    case Kind::Exponential: pos("scale", p0); k.scale = p0; break;
    case Kind::Laplace: pos("b", p0); k.scale = p0; break;
    case Kind::Gaussian: pos("sigma", p0); k.scale = p0; break;
    case Kind::Cauchy: pos("gamma", p0); k.scale = p0; break;
    case Kind::Logistic: pos("scale", p0); k.scale = p0; break;
    case Kind::StudentT:
      pos("nu", p0);
      // Below nu ~ 0.01 the polar method's W^(-2/nu) leaves double range and the kernel emitted
      // NaN and exact zeros (no noise at all); refused, with a 5x margin (kMinStudentNu).
      require(p0 >= kMinStudentNu, "nu", p0, "nu >= 0.05 (smaller nu cannot be sampled accurately in double)");
      pos("scale", p1);
      k.nu = p0;
      k.scale = p1 * std::sqrt(p0);
      break;
    case Kind::GenCauchy:
      pos("gamma", p0);
      require(std::isfinite(p1) && p1 > 1.0, "k", p1, "a finite number > 1");
      require(p1 - 1.0 >= kMinStudentNu, "k", p1, "k >= 1.05 (k - 1 is the Student-t nu; smaller cannot be sampled accurately in double)");
      // (1 + (x/gamma)^2)^(-k/2) is gamma t_{k-1} / sqrt(k-1): T = U sqrt(nu) root / sqrt(W) with
      // nu = k - 1, so the factors sqrt(nu) cancel.
      k.kind = int(Kind::GenCauchy);
      k.nu = p1 - 1.0;
      k.scale = p0;
      break;
    case Kind::GenGaussian: {
      pos("beta", p0);
      pos("scale", p1);
      const double a = 1.0 / p0;
      require(a < 1e12 && std::isfinite(a), "beta", p0, "beta >= 1e-12");
      const double ap = a < 1.0 ? a + 1.0 : a;
      k.ma_d = ap - 1.0 / 3.0;
      k.ma_c = 1.0 / std::sqrt(9.0 * k.ma_d);
      k.log_d = std::log(k.ma_d);
      k.inv_a = a < 1.0 ? 1.0 / a : 0.0;
      k.inv_beta = 1.0 / p0;
      k.scale = p1;
      break;
    }
  }
  return k;
}

void fill_f64(const KernelParams& p, StreamKey key, std::uint64_t start, std::size_t n, const double* in,
              double* out, unsigned threads) {
  fill_any<double>(current().f64, p, key, start, n, in, out, threads);
}
void fill_f32(const KernelParams& p, StreamKey key, std::uint64_t start, std::size_t n, const float* in,
              float* out, unsigned threads) {
  fill_any<float>(current().f32, p, key, start, n, in, out, threads);
}

void fill_keyed_f64(const KernelParams& p, const KeyedKey& key, std::uint64_t start, std::size_t n,
                    const double* in, double* out, unsigned threads) {
  fill_any<double>(current().kf64, p, key, start, n, in, out, threads);
}
void fill_keyed_f32(const KernelParams& p, const KeyedKey& key, std::uint64_t start, std::size_t n,
                    const float* in, float* out, unsigned threads) {
  fill_any<float>(current().kf32, p, key, start, n, in, out, threads);
}

void keyed_lattice_fill(const KeyedKey& k, std::uint64_t j0, std::size_t nb, std::uint64_t* words, double* hints,
                        double log_scale) {
  current().klattice(k, j0, nb, words, hints, log_scale);
}
bool lattice_snap_add(const double* in, const double* z, double* out, std::size_t n, double inv_g, double g) {
  return current().snap(in, z, out, n, inv_g, g);
}
bool lattice_any_beyond(const double* in, std::size_t n, double inv_g) { return current().beyond(in, n, inv_g); }
std::size_t lattice_invert(const std::uint64_t* words, std::size_t n, const std::uint64_t* t63, std::uint64_t size,
                           const std::uint64_t* guide, unsigned gbits, double log_scale, std::int64_t* z,
                           std::uint32_t* pending) {
  return current().invi(words, n, t63, size, guide, gbits, log_scale, z, pending);
}
std::size_t lattice_invert(const std::uint64_t* words, std::size_t n, const std::uint64_t* t63, std::uint64_t size,
                           const std::uint64_t* guide, unsigned gbits, double log_scale, double* z,
                           std::uint32_t* pending) {
  return current().invf(words, n, t63, size, guide, gbits, log_scale, z, pending);
}

std::vector<std::string> simd_targets() {
  std::vector<std::string> names;
  for (const auto& t : compiled()) names.emplace_back(hwy::TargetName(t.bit));
  return names;
}
std::string simd_target() { return hwy::TargetName(current().bit); }
void set_simd_target(const std::string& name) {
  const int i = index_of(name);
  std::lock_guard<std::mutex> lk(g_target_mu);
  g_target.store(i);
}

}  // namespace puffer::sampling
#endif  // HWY_ONCE
