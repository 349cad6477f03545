#include "models/markov_ext.hpp"

#include <algorithm>
#include <cmath>

#include "common/target_clones.hpp"

namespace puffer::models::ext {

void split(double x, double& m, std::int32_t& e) {
  int ex = 0;
  const double f = std::frexp(x, &ex);  // f in [0.5, 1), exact also for subnormal x
  m = 2.0 * f;
  e = static_cast<std::int32_t>(ex - 1);
}

// Pass 1 finds each output's largest exponent (integer max), pass 2 sums the terms scaled by
// 2^(e - E) built from the exponent bits (integer ops, vectorisable), pass 3 renormalises.
PUFFER_TARGET_CLONES("avx2,fma", "default")
void gather(double* __restrict dm, std::int32_t* __restrict de, std::size_t n, const Src* src, std::size_t n_src,
            double* __restrict acc) {
  std::fill(de, de + n, kNoExp);
  std::fill(acc, acc + n, 0.0);
  for (std::size_t q = 0; q < n_src; ++q) {
    const Src& S = src[q];
    if (S.shift >= n) continue;
    const std::size_t len = std::min(S.len, n - S.shift);
    const std::int32_t* __restrict e = S.e;
    std::int32_t* __restrict d = de + S.shift;
    const std::int32_t pe = S.pe;
    for (std::size_t s = 0; s < len; ++s) d[s] = std::max(d[s], e[s] + pe);
  }
  for (std::size_t q = 0; q < n_src; ++q) {
    const Src& S = src[q];
    if (S.shift >= n) continue;
    const std::size_t len = std::min(S.len, n - S.shift);
    const std::int32_t* __restrict e = S.e;
    const double* __restrict m = S.m;
    const std::int32_t* __restrict d = de + S.shift;
    double* __restrict a = acc + S.shift;
    const double pm = S.pm;
    const std::int64_t pe = S.pe;
    for (std::size_t s = 0; s < len; ++s) {
      const std::int64_t x = static_cast<std::int64_t>(e[s]) + pe - d[s];  // <= 0
      const std::uint64_t bits = x >= -kDrop ? static_cast<std::uint64_t>(x + 1023) << 52 : 0;
      double w;
      __builtin_memcpy(&w, &bits, sizeof w);
      a[s] += m[s] * pm * w;
    }
  }
  for (std::size_t s = 0; s < n; ++s) {
    if (de[s] <= kReachable) {
      dm[s] = 0.0;
      de[s] = kNoExp;
      continue;
    }
    std::uint64_t bits;
    __builtin_memcpy(&bits, &acc[s], sizeof bits);  // acc in [1, 4 n_src): normal
    de[s] += static_cast<std::int32_t>((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & 0x000fffffffffffffULL) | (1023ULL << 52);
    __builtin_memcpy(&dm[s], &bits, sizeof bits);
  }
}

PUFFER_TARGET_CLONES("avx2,fma", "default")
void convolve_ext(double* __restrict J, std::int32_t* __restrict E, const double* __restrict fm,
                  const std::int32_t* __restrict fe, std::size_t nf, const double* __restrict bm,
                  const std::int32_t* __restrict be, std::size_t nb) {
  const std::size_t n = nf + nb - 1;
  std::fill(E, E + n, 2 * kNoExp);
  std::fill(J, J + n, 0.0);
  for (std::size_t s1 = 0; s1 < nf; ++s1) {
    if (fm[s1] == 0.0) continue;
    const std::int32_t f = fe[s1];
    std::int32_t* __restrict d = E + s1;
    for (std::size_t s2 = 0; s2 < nb; ++s2) d[s2] = std::max(d[s2], f + be[s2]);
  }
  for (std::size_t s1 = 0; s1 < nf; ++s1) {
    if (fm[s1] == 0.0) continue;
    const std::int64_t f = fe[s1];
    const double mf = fm[s1];
    const std::int32_t* __restrict d = E + s1;
    double* __restrict j = J + s1;
    for (std::size_t s2 = 0; s2 < nb; ++s2) {
      const std::int64_t x = f + be[s2] - d[s2];  // <= 0: d is the maximum over these terms
      const std::uint64_t bits = x >= -kDrop ? static_cast<std::uint64_t>(x + 1023) << 52 : 0;
      double w;
      __builtin_memcpy(&w, &bits, sizeof w);
      j[s2] += mf * bm[s2] * w;  // bm = 0 for an unreachable s2: the term vanishes
    }
  }
  for (std::size_t s = 0; s < n; ++s)
    if (!(J[s] > 0.0)) {
      J[s] = 0.0;
      E[s] = kNoExp;
    }
}

// Output-blocked: 32 consecutive outputs stay in eight 4-wide accumulators while s1 runs over
// every F entry that reaches them (one broadcast and eight unaligned B loads per eight FMAs, no
// store in the inner loop). B is copied with 32 zeros on each side so lanes whose s - s1 falls
// outside B read zeros.
typedef double v4 __attribute__((vector_size(32)));
typedef double v4u __attribute__((vector_size(32), aligned(8)));

PUFFER_TARGET_CLONES("avx2,fma", "default")
void convolve_plain(double* __restrict J, const double* __restrict F, std::size_t f_lo, std::size_t f_hi,
                    const double* __restrict Bp, std::size_t b_hi, double* __restrict Bz) {
  constexpr std::size_t kPad = 32;
  const std::size_t nb = b_hi + 1;
  std::fill(Bz, Bz + kPad, 0.0);
  std::copy(Bp + 3, Bp + 3 + nb, Bz + kPad);
  std::fill(Bz + kPad + nb, Bz + nb + 2 * kPad + 8, 0.0);
  const double* bz = Bz + kPad;
  const std::size_t s_end = f_hi + b_hi;  // last output
  for (std::size_t s0 = f_lo; s0 <= s_end; s0 += 32) {
    v4 a[8] = {};
    const std::size_t s1_lo = std::max(f_lo, s0 > b_hi ? s0 - b_hi : std::size_t{0});
    const std::size_t s1_hi = std::min(f_hi, s0 + 31);
    for (std::size_t s1 = s1_lo; s1 <= s1_hi; ++s1) {
      const double fv = F[s1];
      const v4 f = {fv, fv, fv, fv};
      const double* b = bz + s0 - s1;  // s0 - s1 >= -31: inside the zero padding
      for (int q = 0; q < 8; ++q) a[q] += f * *reinterpret_cast<const v4u*>(b + 4 * q);
    }
    double out[32];
    for (int q = 0; q < 8; ++q)
      for (int l = 0; l < 4; ++l) out[4 * q + l] = a[q][l];
    const std::size_t n_out = std::min<std::size_t>(32, s_end - s0 + 1);
    for (std::size_t l = 0; l < n_out; ++l) J[s0 + l] += out[l];
  }
}

// Branch-free (vectorisable) extended accumulation: both operands are split into a mantissa in
// [1, 2) and an exponent with integer ops, aligned on the larger exponent, and a partial sum
// more than 2^-kDrop below the other is dropped.
PUFFER_TARGET_CLONES("avx2,fma", "default")
void merge_scaled(double* __restrict m, std::int32_t* __restrict e, const double* __restrict v, std::size_t n,
                  std::int64_t x) {
  constexpr std::uint64_t kMant = 0x000fffffffffffffULL, kOne = 1023ULL << 52;
  for (std::size_t j = 0; j < n; ++j) {
    std::uint64_t vb;
    __builtin_memcpy(&vb, &v[j], sizeof vb);
    const bool vz = !(v[j] > 0.0);
    const std::int64_t xv = x + static_cast<std::int64_t>((vb >> 52) & 0x7ff) - 1023;
    const std::uint64_t vmb = (vb & kMant) | kOne;
    double vm;
    __builtin_memcpy(&vm, &vmb, sizeof vm);
    const bool mz = !(m[j] > 0.0);
    const std::int64_t ej = e[j];
    const std::int64_t en = vz ? ej : (mz ? xv : std::max(ej, xv));
    const std::int64_t d1 = std::max<std::int64_t>(ej - en, -kDrop - 1), d2 = std::max<std::int64_t>(xv - en, -kDrop - 1);
    const std::uint64_t b1 = (mz || d1 < -kDrop) ? 0 : static_cast<std::uint64_t>(d1 + 1023) << 52;
    const std::uint64_t b2 = (vz || d2 < -kDrop) ? 0 : static_cast<std::uint64_t>(d2 + 1023) << 52;
    double s1, s2;
    __builtin_memcpy(&s1, &b1, sizeof s1);
    __builtin_memcpy(&s2, &b2, sizeof s2);
    const double r = m[j] * s1 + vm * s2;  // in [1, 4) unless both are zero
    std::uint64_t rb;
    __builtin_memcpy(&rb, &r, sizeof rb);
    const std::int64_t re = static_cast<std::int64_t>((rb >> 52) & 0x7ff) - 1023;
    const std::uint64_t rmb = (rb & kMant) | kOne;
    double rm;
    __builtin_memcpy(&rm, &rmb, sizeof rm);
    const bool rz = mz && vz;
    m[j] = rz ? 0.0 : rm;
    e[j] = rz ? kNoExp : static_cast<std::int32_t>(en + re);
  }
}

}  // namespace puffer::models::ext
