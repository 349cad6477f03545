// Extended-range arithmetic for the Markov-chain kernel (markov.cpp).
//
// A value is m * 2^e with a double mantissa m in [1, 2) (m = 0: an exact zero, an unreachable
// sum; its exponent is kNoExp) and a 32-bit exponent e, so every probability a chain of length
// <= 1e5 can produce (>= 2^-(1075 * 1e5)) keeps double relative precision: nothing underflows.
// Sums of positive terms are formed relative to their largest term; a term more than 2^-kDrop
// below the largest term of the same sum is dropped (relative error <= n 2^-1000, far inside
// the transport kernel's tie band), the largest term never is.
#pragma once
#include <cstddef>
#include <cstdint>

namespace puffer::models::ext {

constexpr std::int32_t kNoExp = -(1 << 29);       // exponent of an exact zero
constexpr std::int32_t kReachable = -(1 << 28);   // exponents above this belong to positive values
constexpr int kDrop = 1000;

// One source of a gather: dst[s] += coef * src[s - shift] for s - shift in [0, len), with
// coef = pm * 2^pe (pm in [1, 2), coef > 0).
struct Src {
  const double* m;
  const std::int32_t* e;
  std::size_t len;
  double pm;
  std::int32_t pe;
  std::size_t shift;
};

// Splits x > 0 (normal or subnormal) into m in [1, 2) and an exponent.
void split(double x, double& m, std::int32_t& e);

// dst[s] = sum over sources of coef * src[s - shift], s in [0, n), in the extended
// representation (normalised mantissas). acc is scratch of n doubles.
void gather(double* dm, std::int32_t* de, std::size_t n, const Src* src, std::size_t n_src, double* acc);

// J[s1 + s2] = sum F[s1] B[s2] over s1 in [0, nf), s2 in [0, nb) in the extended
// representation: E[s] = the largest term's exponent (kNoExp if none), J[s] = sum of the terms
// scaled by 2^-E[s] (in [1, 4 min(nf, nb)) where positive, 0 where the sum is unreachable).
// J and E have nf + nb - 1 entries; F and B mantissas must be 0 exactly where exponents are
// kNoExp.
void convolve_ext(double* J, std::int32_t* E, const double* fm, const std::int32_t* fe, std::size_t nf,
                  const double* bm, const std::int32_t* be, std::size_t nb);

// J[s1 + s2] += F[s1] * B[s2] over s1 in [f_lo, f_hi], s2 in [0, b_hi] in plain doubles. Bp is B
// with three zeros on each side (Bp[j + 3] = B[j]); J must have room for index f_hi + b_hi.
// Bz is scratch of b_hi + 73 doubles.
void convolve_plain(double* J, const double* F, std::size_t f_lo, std::size_t f_hi, const double* Bp,
                    std::size_t b_hi, double* Bz);

// (m[j], e[j]) += v[j] 2^x for j in [0, n) (m in [1, 2) or 0 with e = kNoExp; v[j] >= 0 normal or
// 0): branch-free; a partial sum more than 2^-kDrop below the other is dropped.
void merge_scaled(double* m, std::int32_t* e, const double* v, std::size_t n, std::int64_t x);

// 2^d for an integer d in [-1022, 1023] (exact, by the exponent bits).
inline double pow2i(std::int64_t d) {
  const std::uint64_t bits = static_cast<std::uint64_t>(d + 1023) << 52;
  double w;
  __builtin_memcpy(&w, &bits, sizeof w);
  return w;
}

// Exponent of a positive normal double (floor(log2 x)).
inline std::int32_t exponent_of(double x) {
  std::uint64_t bits;
  __builtin_memcpy(&bits, &x, sizeof bits);
  return static_cast<std::int32_t>((bits >> 52) & 0x7ff) - 1023;
}

}  // namespace puffer::models::ext
