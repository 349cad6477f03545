// Non-negative fixed-point reals of any precision, for the exact lattice samplers (lattice.hpp):
// the tables and the rare exact path compare a uniform's bits with thresholds such as s^e that
// 64 bits cannot hold. A Fix with F fraction limbs is the integer sum_i l[i] 2^(64 i) (little
// endian, F + 1 limbs) divided by 2^(64 F): limb F is the integer part. Every operation rounds
// toward zero, so a computed value is a lower bound of the exact one; callers carry the error
// in ulps (1 ulp = 2^(-64 F)) and say why it is bounded where they compute it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace puffer::sampling {

struct Fix {
  std::vector<std::uint64_t> l;  // F + 1 limbs, little endian; l.back() = integer part
  Fix() : l(1, 0) {}
  explicit Fix(std::size_t frac_limbs) : l(frac_limbs + 1, 0) {}
  std::size_t frac() const { return l.size() - 1; }
};

// v 2^-64 (a 64-bit binary fraction) with F fraction limbs; and the integer v.
Fix fix_frac64(std::uint64_t v, std::size_t F);
Fix fix_int(std::uint64_t v, std::size_t F);
// The same value with F fraction limbs (truncated when F shrinks).
Fix fix_resize(const Fix& a, std::size_t F);

// floor(a b) at a's precision (a and b have the same F); throws NumericalFailure when the
// integer part leaves 64 bits. *exact (if given) says whether nothing was dropped.
Fix mul_floor(const Fix& a, const Fix& b, bool* exact = nullptr);
// The error in ulps of a product of a <= 1 and b <= 1 known to ea and eb ulps (plus one for the
// truncation unless it was exact): ea + eb + [ea eb > 0] + [inexact].
std::uint64_t mul_error(std::uint64_t ea, std::uint64_t eb, bool exact);
// a + b, exact (same F; throws on integer overflow); a + k ulps.
Fix add(const Fix& a, const Fix& b);
Fix add_ulps(const Fix& a, unsigned __int128 k);
// a - b for a >= b, exact.
Fix sub(const Fix& a, const Fix& b);
// floor(a / k) for an integer k >= 1.
Fix div_small_floor(const Fix& a, std::uint64_t k);
// floor(1 / a) at a's precision, a >= 1 (so the quotient is <= 1).
Fix recip_floor(const Fix& a);
int cmp(const Fix& a, const Fix& b);  // -1, 0, 1
bool is_zero(const Fix& a);

// floor(a 2^bits) for 0 <= a < 2^(64 - bits), 1 <= bits <= 64.
std::uint64_t floor_scaled(const Fix& a, int bits);

// s^e for s <= 1 (lower bound) and its error in ulps (mul_error along the square-and-multiply
// chain; 0 when every product was exact).
Fix pow_floor(const Fix& s, std::uint64_t e, std::uint64_t& err_ulps);

}  // namespace puffer::sampling
