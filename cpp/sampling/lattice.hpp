// Lattice noise that is safe in floating point and reproducible from a keyed stream: published
// values are (round_half_even(x / g) + Z) g on the lattice g Z (g = 2^g_exp), Z an integer with
// one of two exactly declared laws, drawn by inversion from a keyed ChaCha20 stream.
//
// Laws (the parameter is a 64-bit binary fraction S 2^-64, so every threshold is a dyadic number):
//  * family 0, rounded Laplace: Z = round(X), X ~ Laplace(beta) in lattice units, i.e.
//    P(|Z| >= n) = s^(2n-1) for n >= 1, sign uniform, s = exp(-1/(2 beta)) = S 2^-64. Rounding a
//    continuous Laplace is post-processing, so every divergence between the laws of two integer
//    shifts is at most the continuous Laplace's at the same shift (Renyi of every order, hockey
//    stick, pure eps): the lattice mechanism keeps the continuous mechanism's whole curve.
//  * family 1, discrete Gaussian: P(Z = z) ∝ w^(z^2), w = exp(-1/(2 sigma^2)) = S 2^-64 (Canonne,
//    Kamath, Steinke 2020); its Renyi divergences at integer shifts m are at most alpha m^2 /
//    (2 sigma^2), the continuous Gaussian's (CKS20 Prop 5).
//
// Sampler (inversion, exact). Value i of a stream reads the 64-bit word W of the lattice layout
// (keyed_stream.hpp): bit 63 is the sign, the low 63 bits u start a uniform U in [0, 1) of
// unbounded precision whose further bits come from value i's rare-path blocks. Then
// |Z| = #{n >= 1 : U < TH(n)}, TH(n) = P(|Z| >= n). The comparisons use tables of exact floors
// of the thresholds (computed with bigfix.hpp and error bounds; one 64-bit floor per threshold, or
// for large Laplace laws a product of two), found from a hint (Laplace: the
// double log(U) / log(s); Gaussian: a guide table on the top bits of u); the hint only decides
// where to look. With the direct tables (T63 below) a vector of values is inverted at once
// (keyed_stream.hpp: lattice_invert, SIMD gathers of the floors), each value decided there only by
// strict comparisons; the others go through the scalar table path. A comparison the 63 bits
// cannot decide (probability below 2^-60 per value) is settled with as many further bits as
// needed, so the law drawn is the declared law exactly.
// Not constant time: the rare path takes longer (as the rejection samplers of secure.hpp do).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "sampling/keyed_stream.hpp"

namespace puffer::sampling {

struct LatticeLaw {
  int family = 0;          // 0 = rounded Laplace, 1 = discrete Gaussian
  std::uint64_t S = 0;     // s (Laplace) or w (Gaussian) = S 2^-64
};

// Largest scales the tables are built for (lattice units): beta <= 2^32 (Laplace tables hold
// about 2 sqrt(45 beta) entries), sigma <= 2^16 (the Gaussian table about 9.4 sigma).
constexpr double kLatticeMaxBeta = 4294967296.0;
constexpr double kLatticeMaxSigma = 65536.0;

// Throws InvalidArgument unless the law's parameter is in range (1 <= S, scale within the limits).
void validate_lattice(const LatticeLaw& law);

// The tables of a law (built once per law and cached; immutable, shared by threads).
struct LatticeTables {
  LatticeLaw law;
  std::uint64_t nmax = 0;  // TH(nmax) < 2^-63: U >= TH(nmax) whenever u >= 1
  // Laplace: TH(n) = A[q] B[r] with n - 1 = q L + r; A[q] = floor(2^64 s^(1 + 2 q L)),
  // B[r] = floor(2^64 s^(2 r)) (B[0] stored as 2^64 - 1: the exact 2^64 does not fit).
  unsigned lbits = 0;
  std::vector<std::uint64_t> A, B;
  double log_scale = 0.0;  // 1 / log(s): the hint's factor
  // Gaussian, and Laplace laws of up to 2^19 thresholds: T63[n] = floor(2^63 TH(n)) for n = 0 ..
  // size - 1 (T63[0] unused; the last entry 0), used instead of A, B where present; Gaussian:
  // guide[c] = the smallest |Z| of the uniforms whose top gbits bits are c.
  std::vector<std::uint64_t> T63;
  unsigned gbits = 0;
  std::vector<std::uint32_t> guide;
  std::vector<std::uint64_t> guide64;  // guide widened (the SIMD inversion gathers 64-bit lanes)
};
std::shared_ptr<const LatticeTables> lattice_tables(const LatticeLaw& law);

// The integer noise of stream positions start .. start + n - 1 (out may be any length n).
void lattice_keyed_int(const LatticeLaw& law, const KeyedKey& key, std::uint64_t start, std::size_t n,
                       std::int64_t* out, unsigned threads);
// out[j] = (round_half_even(in[j] 2^-g_exp) + Z_{start + j}) 2^g_exp; in may equal out. Every
// input is checked first (finite, |x| <= 2^52 g), so a bad value never leaves partial output;
// a sum beyond 2^53 lattice units (not exactly representable) is refused.
void lattice_keyed_add_f64(const LatticeLaw& law, int g_exp, const KeyedKey& key, std::uint64_t start,
                           std::size_t n, const double* in, double* out, unsigned threads);

// Test hook: |Z| for a given uniform (u = its first 63 bits, then `extra` words; exhausted extra
// words are an error) through the exact path alone (fast = false) or the table path with the
// hint `hint` (fast = true; -1 when the tables cannot decide).
std::int64_t lattice_magnitude_for_tests(const LatticeLaw& law, std::uint64_t u, const std::vector<std::uint64_t>& extra,
                                         bool fast, std::int64_t hint);

}  // namespace puffer::sampling
