#include "models/markov_ext.hpp"

#include <algorithm>
#include <cmath>

namespace puffer::models::ext {

void split(double x, double& m, std::int32_t& e) {
  int ex = 0;
  const double f = std::frexp(x, &ex);  // f in [0.5, 1), exact also for subnormal x
  m = 2.0 * f;
  e = static_cast<std::int32_t>(ex - 1);
}

// Pass 1 finds each output's largest exponent (integer max), pass 2 sums the terms scaled by
// 2^(e - E) built from the exponent bits (integer ops, vectorisable), pass 3 renormalises.
__attribute__((target_clones("avx2,fma", "default")))
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

__attribute__((target_clones("avx2,fma", "default")))
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

// Register-blocked by four values of s1 so each J element is loaded and stored once per four
// FMAs (a one-element shift per step would stall store-to-load forwarding).
__attribute__((target_clones("avx2,fma", "default")))
void convolve_plain(double* __restrict J, const double* __restrict F, std::size_t f_lo, std::size_t f_hi,
                    const double* __restrict Bp, std::size_t b_hi) {
  const std::size_t nt = b_hi + 4;
  for (std::size_t s1 = f_lo; s1 <= f_hi; s1 += 4) {
    const double f0 = F[s1];
    const double f1 = s1 + 1 <= f_hi ? F[s1 + 1] : 0.0;
    const double f2 = s1 + 2 <= f_hi ? F[s1 + 2] : 0.0;
    const double f3 = s1 + 3 <= f_hi ? F[s1 + 3] : 0.0;
    double* __restrict dst = J + s1;
    for (std::size_t t = 0; t < nt; ++t) dst[t] += f0 * Bp[t + 3] + f1 * Bp[t + 2] + f2 * Bp[t + 1] + f3 * Bp[t];
  }
}

}  // namespace puffer::models::ext
