// Secure mode (issue 5): exact discrete noise on a lattice with integer arithmetic only, from a
// ChaCha20 stream keyed by OS entropy. Samplers from Canonne, Kamath, Steinke, "The Discrete
// Gaussian for Differential Privacy" (NeurIPS 2020), Algorithms 1-3:
//   * Bernoulli(exp(-gamma)) for rational gamma (Alg. 1, alternating-series trick),
//   * discrete Laplace with rational scale num/den: P(z) ∝ exp(-|z| den/num) (Alg. 2),
//   * discrete Gaussian with rational sigma^2 = N/D: P(z) ∝ exp(-z^2 / (2 sigma^2)) (Alg. 3).
// No floating point touches a random quantity: the float output (k + Z) g is a deterministic
// function of the lattice point k = round(x / g) and the exact integer Z (post-processing).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

namespace puffer::sampling {

struct SecureParams {
  int kind = 0;  // 0 = discrete Laplace, 1 = discrete Gaussian
  // discrete Laplace: scale num/den; discrete Gaussian: sigma^2 = num/den, t = floor(sigma) + 1.
  std::uint64_t num = 1, den = 1, t = 1;
};

// Checks the ranges the exact integer arithmetic is proven for (see secure.cpp).
void validate_secure(const SecureParams& p);

// out[j] = exact sample (int64). key: 32 bytes or nullptr (= fresh OS entropy).
void secure_sample_int(const SecureParams& p, std::int64_t* out, std::size_t n, unsigned threads,
                       const std::uint8_t* key);

// out[j] = (round_half_even(in[j] / g) + Z_j) * g with g = 2^g_exp. in may equal out.
void secure_add_f64(const SecureParams& p, int g_exp, const double* in, double* out, std::size_t n,
                    unsigned threads, const std::uint8_t* key);

}  // namespace puffer::sampling
