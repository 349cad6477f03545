// Arithmetic modulo random 50-bit primes: exact images of dyadic rationals (every double is
// one), used to certify that two floating-point quantities which round alike are *exactly*
// equal. Two integers that differ are congruent modulo a prime p only if p divides their
// (nonzero) difference; a difference of N bits has at most N / 49 prime factors above 2^49, out
// of ~1.6e13 primes in [2^49, 2^50), so a random prime errs with probability <= N / 7.8e14.
// Residues below 2^50 have products below 2^100: a 128-bit accumulator takes 2^28 of them before
// it must be reduced.
#pragma once
#include <cmath>
#include <cstdint>
#include <random>

namespace puffer::modp {

using u64 = std::uint64_t;
using u128 = unsigned __int128;

inline u64 mul(u64 a, u64 b, u64 p) { return static_cast<u64>(static_cast<u128>(a) * b % p); }
inline u64 add(u64 a, u64 b, u64 p) {
  const u64 s = a + b;  // a, b < p < 2^63: no overflow
  return s >= p ? s - p : s;
}
inline u64 sub(u64 a, u64 b, u64 p) { return a >= b ? a - b : a + p - b; }

inline u64 pow(u64 a, u64 e, u64 p) {
  u64 r = 1 % p;
  for (a %= p; e != 0; e >>= 1, a = mul(a, a, p))
    if (e & 1) r = mul(r, a, p);
  return r;
}

// Deterministic Miller-Rabin for n < 3.3e24 (these twelve bases suffice).
inline bool is_prime(u64 n) {
  if (n < 2) return false;
  for (u64 q : {2ull, 3ull, 5ull, 7ull, 11ull, 13ull, 17ull, 19ull, 23ull, 29ull, 31ull, 37ull})
    if (n % q == 0) return n == q;
  u64 d = n - 1;
  int s = 0;
  for (; (d & 1) == 0; d >>= 1) ++s;
  for (u64 a : {2ull, 3ull, 5ull, 7ull, 11ull, 13ull, 17ull, 19ull, 23ull, 29ull, 31ull, 37ull}) {
    u64 x = pow(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int r = 1; r < s && composite; ++r) {
      x = mul(x, x, n);
      composite = x != n - 1;
    }
    if (composite) return false;
  }
  return true;
}

constexpr int kPrimeBits = 50;

// A prime drawn uniformly from the primes in [2^49, 2^50) (rejection sampling on odd numbers).
template <class Rng>
u64 random_prime(Rng& rng) {
  for (;;) {
    const u64 c = (u64{1} << (kPrimeBits - 1)) | (rng() & ((u64{1} << (kPrimeBits - 1)) - 1)) | 1u;
    if (is_prime(c)) return c;
  }
}

// A field Z_p with the powers of 1/2 needed to map doubles (m 2^e, e >= -1074) into it.
struct Field {
  u64 p = 0;
  u64 inv2 = 0;
  explicit Field(u64 prime) : p(prime), inv2((prime + 1) / 2) {}
  // The exact image of a finite double x >= 0: x = m 2^e with an integer m < 2^53.
  u64 of(double x) const {
    if (x == 0.0) return 0;
    int ex = 0;
    const double fr = std::frexp(x, &ex);  // x = fr 2^ex, fr in [0.5, 1)
    const u64 m = static_cast<u64>(std::ldexp(fr, 53));
    const int e = ex - 53;
    const u64 mm = m % p;
    return e >= 0 ? mul(mm, pow(2, static_cast<u64>(e), p), p) : mul(mm, pow(inv2, static_cast<u64>(-e), p), p);
  }
};

}  // namespace puffer::modp
