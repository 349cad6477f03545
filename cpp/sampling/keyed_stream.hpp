// Keyed noise streams for publication: counter-mode ChaCha20 (Bernstein 2008; RFC 8439 block
// function) under a secret 256-bit key, driving the same variate transforms as the Philox
// samplers (samplers.hpp). ChaCha20 is a stream cipher: without the key, outputs at positions
// an adversary does not hold are indistinguishable from uniform even given every other
// position's output (its PRF security), which Philox (a statistical generator with a 64-bit
// key) does not offer.
//
// Block layout (documented contract; tests check it). A block is the RFC 8439 block function of
//   state = (constants, key[0..7], w12, w13, w14, w15),
// whose 16 output words x[0..15] are read as eight little-endian 64-bit words
//   W_k = x[2k] | x[2k+1] << 32, k = 0..7.
//  * pair layout (uniform, exponential, Laplace, Gaussian, Cauchy, logistic): block j has
//    (w12, w13) = (j mod 2^32, j >> 32), w14 = 0, w15 = word; value i takes W_{i mod 8} of block
//    i / 8 (Box-Muller pairs (2q, 2q+1) take W_{2q mod 8}, W_{2q+1 mod 8}), transformed exactly
//    as the Philox pair samplers transform their words w0 (value 2q) and w1 (value 2q+1).
//  * rejection layouts (Student-t / GenCauchy: tag 1; generalized Gaussian: tag 2): attempt a of
//    value i is the block (w12, w13) = (i mod 2^32, i >> 32), w14 = tag << 30 | a, w15 = word;
//    Student-t uses (W_0, W_1), the generalized Gaussian (W_0, W_1, W_2, W_3) as the Philox
//    (a0, a1, b0, b1) of one attempt.
//  * lattice layout (tag 3, lattice.hpp): value i takes W_{i mod 8} of the fast block i / 8, whose
//    input words are (w12, w13) = (j mod 2^32, j >> 32), w14 = 3 << 30, w15 = word; the rare path
//    of value i (bits of its uniform beyond the first 63) reads attempts a = 1, 2, ... of the
//    rejection layout with tag 3 (w14 = 3 << 30 | a, W_0 .. W_7 in order).
// The tags keep layouts apart (a pair block has w14 = 0, a rejection attempt w14 >= 2^30), so
// value i depends only on (key, word, i): output is bitwise identical for every thread count
// and chunking (same SIMD-target caveat as samplers.hpp).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

#include "sampling/samplers.hpp"

namespace puffer::sampling {

struct KeyedKey {
  std::array<std::uint32_t, 8> key{};  // 256-bit secret, little-endian words
  std::uint32_t word = 0;              // w15: a public domain separator (0 for release streams)
};

constexpr unsigned kKeyedTagShift = 30;
constexpr std::uint32_t kKeyedMaxAttempt = (1u << kKeyedTagShift) - 1u;

// The 16 input words of block (w12, w13, w14) of key (the reference for the SIMD kernels).
std::array<std::uint32_t, 16> keyed_block_input(const KeyedKey& k, std::uint32_t w12, std::uint32_t w13,
                                                std::uint32_t w14);

// The eight 64-bit words W_0..W_7 of pair block j (scalar reference).
std::array<std::uint64_t, 8> keyed_pair_words(const KeyedKey& k, std::uint64_t j);

// The eight 64-bit words of attempt `attempt` of value i in rejection layout `tag` (1 or 2).
std::array<std::uint64_t, 8> keyed_reject_words(const KeyedKey& k, std::uint32_t tag, std::uint64_t i,
                                                std::uint32_t attempt);

constexpr std::uint32_t kLatticeTag = 3;

// The eight 64-bit words of lattice fast block j (scalar reference).
std::array<std::uint64_t, 8> keyed_lattice_words(const KeyedKey& k, std::uint64_t j);

// SIMD (dispatched): words[8 (j - j0) + k] = W_k of lattice fast blocks j = j0 .. j0 + nb - 1, and
// with hints != nullptr also hints[i] = log_scale * log(((words[i] mod 2^63) + 1/2) 2^-63).
void keyed_lattice_fill(const KeyedKey& k, std::uint64_t j0, std::size_t nb, std::uint64_t* words, double* hints,
                        double log_scale);

// SIMD (dispatched), lattice.cpp's two passes over the values. lattice_snap_add: out[i] =
// (round_half_even(in[i] inv_g) + z[i]) g for i < n (in may equal out), for |in[i] inv_g| <= 2^52
// and integers z[i] below 2^52 in magnitude held as doubles: the sum (below 2^53) and its product
// with the power of two g are exact in doubles; false if a sum is beyond 2^53 (defensive).
// lattice_any_beyond: whether some |in[i] inv_g| <= 2^52 fails (a NaN fails).
bool lattice_snap_add(const double* in, const double* z, double* out, std::size_t n, double inv_g, double g);
bool lattice_any_beyond(const double* in, std::size_t n, double inv_g);

// SIMD (dispatched) table inversion of lattice.cpp's direct tables (t63[n] = floor(2^63 TH(n)),
// n < size, t63[size - 1] = 0): for i < n (values), |Z_i| from u = words[i] mod 2^63 and its hint
// (guide != nullptr: guide[u >> (63 - gbits)], else the Laplace hint from log_scale log(u)), by
// comparisons with the floors that u decides strictly; z[i] = Z_i (sign = bit 63). The indices i
// whose comparisons the tables do not settle this way go to pending (the count is returned; their
// z[i] is unspecified): the caller's scalar table and exact paths decide them.
std::size_t lattice_invert(const std::uint64_t* words, std::size_t n, const std::uint64_t* t63, std::uint64_t size,
                           const std::uint64_t* guide, unsigned gbits, double log_scale, std::int64_t* z,
                           std::uint32_t* pending);
std::size_t lattice_invert(const std::uint64_t* words, std::size_t n, const std::uint64_t* t63, std::uint64_t size,
                           const std::uint64_t* guide, unsigned gbits, double log_scale, double* z,
                           std::uint32_t* pending);

// out[j] = (in ? in[j] : 0) + X_{start + j} for j < n, X the keyed stream of p's kind; in may
// equal out. threads: 0 = all cores. float32: computed in double, rounded once.
void fill_keyed_f64(const KernelParams& p, const KeyedKey& key, std::uint64_t start, std::size_t n,
                    const double* in, double* out, unsigned threads);
void fill_keyed_f32(const KernelParams& p, const KeyedKey& key, std::uint64_t start, std::size_t n,
                    const float* in, float* out, unsigned threads);

}  // namespace puffer::sampling
