// Samplers of the partially-private-data mechanisms (Seeman, Reimherr & Slavkovic, "Formal
// privacy for partially private data": Thm 9 Wasserstein exponential mechanism, Thm 10 K-norm
// gradient mechanism, §4 case study), on the Philox4x32-10 streams of samplers.hpp.
//
// Stream layout ("per-value sub-stream", word tag 3 in bits 30-31 set by the Python facade):
// value i of a draw uses the Philox blocks with counter (i lo, i hi, sub, word), sub = 0, 1, 2,
// ... in order, each block giving two 64-bit words. Value i therefore depends only on
// (key, word, i): output is bitwise identical for every thread count and chunking. For the
// Markov chains of wem_lattice_mh, "value" = chain and sub = step.
//
// Uniforms: u53 = (k + 1/2) 2^-53 in (0,1); fine u = (k + 1/2) 2^-63 (tails, smallest 2^-64).
#pragma once
#include <cstddef>
#include <cstdint>

#include "sampling/samplers.hpp"

namespace puffer::sampling {

// K-norm noise (Thm 10): density proportional to exp(-||v||_K / scale) on R^d, norm_code
// 1 (l1), 2 (l2) or 0 (l_inf). out has n*d values, row-major; in (optional, n*d) is added.
void knorm_fill(int norm_code, std::size_t d, double scale, StreamKey key, std::uint64_t start, std::size_t n,
                const double* in, double* out, unsigned threads);

// Categorical draws from unnormalised log-weights logw[0..K) (-inf allowed, at least one
// finite): out[j] = index drawn for value start + j. Inverse CDF (guide table + short walk) on the
// cumulative weights (computed once in long double).
void categorical_fill(const double* logw, std::size_t K, StreamKey key, std::uint64_t start, std::size_t n,
                      std::int64_t* out, unsigned threads);

// Laplace(center, b) truncated to [lo, hi] (lo < hi, finite): out[j] for centers c[j] (or the
// scalar c0 when c == nullptr). Inverse CDF in the tail-stable form (reflection to the left tail).
void trunc_laplace_fill(const double* c, double c0, double b, double lo, double hi, StreamKey key,
                        std::uint64_t start, std::size_t n, double* out, unsigned threads);

// Discrete Laplace on Z with P(k) proportional to exp(-|k| / t): difference of two geometric
// variables floor(t E1) - floor(t E2), E exponential (fine uniforms); in (optional) is added.
void discrete_laplace_fill(double t, StreamKey key, std::uint64_t start, std::size_t n, const std::int64_t* in,
                           std::int64_t* out, unsigned threads);

// Metropolis-Hastings for the case-study WEM (Seeman et al. §4.2) on y = (c_1..c_J, d_1..d_J) in
// Z^{2J}: target  exp(-kappa ||y - x||_2) * prior(c) * 1{constraints}, with
//   mode 0 (naive):      no constraint, prior 1;
//   mode 1 (congenial):  sum_j c_j = s, c_j >= d_j >= 0;
//   mode 2 (prior):      as 1, prior(c) = Dirichlet-multinomial(c; s, a) (a_j > 0).
// m chains; chain r has x[r*2J..], s[r], a[r*J..] (mode 2), starts at y0[r*2J..] (must satisfy the
// constraints) and runs `steps` symmetric proposals of size uniform in {1..max_step[r]}: mode 0 moves
// one coordinate; modes 1-2 move cases between two counties (mass preserving) or one death count.
// Writes the final states to out (m*2J) and the accepted-move counts to accepted (m).
void wem_lattice_mh(int mode, std::size_t J, std::size_t m, const std::int64_t* x, const std::int64_t* s,
                    const double* a, const std::int64_t* y0, double kappa, const std::int64_t* max_step,
                    std::uint64_t steps, StreamKey key, std::uint64_t start, std::int64_t* out,
                    std::int64_t* accepted, unsigned threads);

}  // namespace puffer::sampling
