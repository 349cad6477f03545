#include "sampling/secure.hpp"

#include <cmath>
#include <cstring>

#include "common/errors.hpp"
#include "common/parallel.hpp"
#include "sampling/chacha20.hpp"

namespace puffer::sampling {
namespace {

using u128 = unsigned __int128;
using i128 = __int128;

// Bernoulli(num/den), num <= den, den > 0: exact.
inline bool bern(ChaCha20& r, u128 num, u128 den) { return r.below128(den) < num; }

// CKS20 Alg. 1: Bernoulli(exp(-num/den)) for 0 <= num/den <= 1. Bernoulli(gamma/k) is drawn as
// Bernoulli(gamma) AND Bernoulli(1/k) (independent), so no product den*k can overflow.
bool bern_exp_le1(ChaCha20& r, u128 num, u128 den) {
  std::uint64_t k = 1;
  for (;;) {
    const bool a = (k == 1 || r.below(k) == 0) && bern(r, num, den);
    if (!a) break;
    ++k;
  }
  return (k & 1u) == 1u;
}

// Bernoulli(exp(-num/den)) for any num/den >= 0 (CKS20 Alg. 1, integer part by repetition).
bool bern_exp(ChaCha20& r, u128 num, u128 den) {
  u128 whole = num / den;
  const u128 frac = num % den;
  for (u128 i = 0; i < whole; ++i) {
    if (!bern_exp_le1(r, 1, 1)) return false;
    // Surviving 2^28 consecutive Bernoulli(1/e) has probability e^{-2^28}; refuse rather than loop.
    if (i > (u128(1) << 28)) throw NumericalFailure("secure sampling: Bernoulli(exp(-gamma)) with gamma > 2^28 survived");
  }
  return bern_exp_le1(r, frac, den);
}

// CKS20 Alg. 2: discrete Laplace, P(z) ∝ exp(-|z| s/t) (scale t/s).
std::int64_t discrete_laplace(ChaCha20& r, std::uint64_t t, std::uint64_t s) {
  for (;;) {
    const std::uint64_t u = r.below(t);
    if (!bern_exp_le1(r, u, t)) continue;
    std::uint64_t v = 0;
    while (bern_exp_le1(r, 1, 1)) ++v;
    const u128 x = u128(u) + u128(t) * v;
    const u128 y = x / s;
    const bool b = r.bit();
    if (b && y == 0) continue;
    if (y >= (u128(1) << 62)) throw NumericalFailure("secure sampling: discrete Laplace sample beyond 2^62");
    return b ? -std::int64_t(y) : std::int64_t(y);
  }
}

// CKS20 Alg. 3: discrete Gaussian with sigma^2 = N/D, t = floor(sigma) + 1:
// Y ~ DLap(t); accept with prob exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2))
//   = exp(-(|Y| t D - N)^2 / (2 N t^2 D)).
std::int64_t discrete_gaussian(ChaCha20& r, std::uint64_t N, std::uint64_t D, std::uint64_t t) {
  const u128 den = u128(2) * N * t * t * D;  // <= 2^99 by validate_secure
  for (;;) {
    const std::int64_t y = discrete_laplace(r, t, 1);
    const u128 ay = u128(y < 0 ? -(i128)y : (i128)y);
    const u128 a = ay * t * D;  // |Y| < 2^62, t D < 2^58: fits
    const u128 diff = a > N ? a - N : N - a;
    if (diff >= (u128(1) << 63)) {
      // gamma >= 2^126 / 2^99: reject unless e^{-2^27}-unlikely survival (bern_exp throws then).
      if (!bern_exp(r, u128(1) << 27, 1)) continue;
      throw NumericalFailure("secure sampling: discrete Gaussian acceptance with gamma > 2^27 survived");
    }
    if (bern_exp(r, diff * diff, den)) return y;
  }
}

std::int64_t draw(ChaCha20& r, const SecureParams& p) {
  return p.kind == 0 ? discrete_laplace(r, p.num, p.den) : discrete_gaussian(r, p.num, p.den, p.t);
}

constexpr std::size_t kTask = 4096;

std::array<std::uint32_t, 8> make_key(const std::uint8_t* key) {
  std::array<std::uint32_t, 8> k{};
  if (key != nullptr) {
    std::memcpy(k.data(), key, 32);
  } else {
    os_entropy(k.data(), 32);
  }
  return k;
}

template <class Body>
void run_tasks(std::size_t n, unsigned threads, const std::uint8_t* key, Body body) {
  require(threads <= 1024, "threads", threads, "0 (all cores) to 1024");
  const auto k = make_key(key);
  const std::size_t n_tasks = (n + kTask - 1) / kTask;
  parallel_for(n_tasks, threads, [&](std::size_t task) {
    // One ChaCha20 stream per task: nonce = task index (unique per key); the key is fresh per call.
    ChaCha20 r(k, {std::uint32_t(task), std::uint32_t(std::uint64_t(task) >> 32), 0x73656375u});
    const std::size_t lo = task * kTask, hi = std::min(n, lo + kTask);
    for (std::size_t j = lo; j < hi; ++j) body(r, j);
  });
}

}  // namespace

void validate_secure(const SecureParams& p) {
  require(p.kind == 0 || p.kind == 1, "kind", p.kind, "0 (discrete Laplace) or 1 (discrete Gaussian)");
  require(p.num >= 1 && p.den >= 1, "scale", std::to_string(p.num) + "/" + std::to_string(p.den),
          "a positive rational");
  if (p.kind == 0) {
    require(p.num < (std::uint64_t(1) << 62) && p.den < (std::uint64_t(1) << 62), "scale",
            std::to_string(p.num) + "/" + std::to_string(p.den), "numerator and denominator < 2^62");
  } else {
    // sigma^2 = N/D with N < 2^49, D = 2^d <= 2^57, and sigma <= 2^24: then 2 N t^2 D <= 2^99.
    require(p.num < (std::uint64_t(1) << 49) && p.den <= (std::uint64_t(1) << 57), "sigma^2",
            std::to_string(p.num) + "/" + std::to_string(p.den), "N < 2^49 and D <= 2^57");
    const long double s2 = (long double)p.num / (long double)p.den;
    require(s2 <= (long double)(1ull << 48), "sigma", std::sqrt((double)s2), "sigma <= 2^24 lattice units");
    // t = floor(sigma) + 1, checked exactly: (t-1)^2 <= N/D < t^2.
    const u128 tm1 = p.t - 1;
    require(p.t >= 1 && tm1 * tm1 * p.den <= p.num && u128(p.t) * p.t * p.den > p.num, "t", p.t,
            "floor(sigma) + 1");
  }
}

void secure_sample_int(const SecureParams& p, std::int64_t* out, std::size_t n, unsigned threads,
                       const std::uint8_t* key) {
  validate_secure(p);
  run_tasks(n, threads, key, [&](ChaCha20& r, std::size_t j) { out[j] = draw(r, p); });
}

void secure_add_f64(const SecureParams& p, int g_exp, const double* in, double* out, std::size_t n,
                    unsigned threads, const std::uint8_t* key) {
  validate_secure(p);
  require(g_exp >= -1000 && g_exp <= 1000, "granularity", "2^" + std::to_string(g_exp), "2^k with |k| <= 1000");
  const double inv_g = std::ldexp(1.0, -g_exp);
  // Inputs are checked before any noise is drawn so a bad value never leaves partial output.
  for (std::size_t j = 0; j < n; ++j) {
    const double k = in[j] * inv_g;  // exact: power-of-two scaling, no overflow below 2^62 g
    require(std::isfinite(in[j]) && std::fabs(k) <= 0x1p52, "values", in[j],
            "finite values with |x| <= 2^52 * granularity");
  }
  run_tasks(n, threads, key, [&](ChaCha20& r, std::size_t j) {
    const std::int64_t k = std::int64_t(std::nearbyint(in[j] * inv_g));  // ties to even
    const std::int64_t z = draw(r, p);
    out[j] = std::ldexp(double(k + z), g_exp);  // a lattice point: multiple of 2^g_exp
  });
}

}  // namespace puffer::sampling
