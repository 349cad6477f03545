#include "sampling/bigfix.hpp"

#include "common/errors.hpp"

namespace puffer::sampling {
namespace {

using u128 = unsigned __int128;

void same_precision(const Fix& a, const Fix& b) {
  if (a.l.size() != b.l.size()) throw NumericalFailure("fixed point: operands of different precision");
}

}  // namespace

Fix fix_frac64(std::uint64_t v, std::size_t F) {
  Fix r(F);
  if (F == 0) return r;  // v 2^-64 < 1 truncates to 0
  r.l[F - 1] = v;
  return r;
}

Fix fix_int(std::uint64_t v, std::size_t F) {
  Fix r(F);
  r.l[F] = v;
  return r;
}

Fix fix_resize(const Fix& a, std::size_t F) {
  Fix r(F);
  const std::size_t Fa = a.frac();
  // limb i of a (weight 2^(64 (i - Fa))) goes to limb i - Fa + F of r
  for (std::size_t i = 0; i < a.l.size(); ++i) {
    const std::ptrdiff_t j = std::ptrdiff_t(i) - std::ptrdiff_t(Fa) + std::ptrdiff_t(F);
    if (j >= 0) r.l[std::size_t(j)] = a.l[i];
  }
  return r;
}

Fix mul_floor(const Fix& a, const Fix& b, bool* exact) {
  same_precision(a, b);
  const std::size_t n = a.l.size(), F = a.frac();
  std::vector<std::uint64_t> p(2 * n, 0);  // the exact product as an integer, scale 2^(128 F)
  for (std::size_t i = 0; i < n; ++i) {
    if (a.l[i] == 0) continue;
    std::uint64_t carry = 0;
    for (std::size_t j = 0; j < n; ++j) {
      const u128 t = u128(a.l[i]) * b.l[j] + p[i + j] + carry;
      p[i + j] = std::uint64_t(t);
      carry = std::uint64_t(t >> 64);
    }
    p[i + n] = carry;  // row i - 1 wrote up to index i - 1 + n: this slot is still free
  }
  // dropping the F low limbs is the floor (all terms are non-negative)
  if (exact != nullptr) {
    *exact = true;
    for (std::size_t k = 0; k < F; ++k)
      if (p[k] != 0) *exact = false;
  }
  for (std::size_t k = F + n; k < 2 * n; ++k)
    if (p[k] != 0) throw NumericalFailure("fixed point: product beyond 2^64");
  Fix r(F);
  for (std::size_t k = 0; k < n; ++k) r.l[k] = p[F + k];
  return r;
}

Fix add(const Fix& a, const Fix& b) {
  same_precision(a, b);
  Fix r(a.frac());
  std::uint64_t carry = 0;
  for (std::size_t i = 0; i < a.l.size(); ++i) {
    const u128 t = u128(a.l[i]) + b.l[i] + carry;
    r.l[i] = std::uint64_t(t);
    carry = std::uint64_t(t >> 64);
  }
  if (carry != 0) throw NumericalFailure("fixed point: sum beyond 2^64");
  return r;
}

Fix add_ulps(const Fix& a, u128 k) {
  Fix r = a;
  u128 carry = k;
  for (std::size_t i = 0; i < r.l.size() && carry != 0; ++i) {
    const u128 t = u128(r.l[i]) + std::uint64_t(carry);
    r.l[i] = std::uint64_t(t);
    carry = (carry >> 64) + (t >> 64);
  }
  if (carry != 0) throw NumericalFailure("fixed point: sum beyond 2^64");
  return r;
}

Fix sub(const Fix& a, const Fix& b) {
  same_precision(a, b);
  if (cmp(a, b) < 0) throw NumericalFailure("fixed point: negative difference");
  Fix r(a.frac());
  std::uint64_t borrow = 0;
  for (std::size_t i = 0; i < a.l.size(); ++i) {
    const std::uint64_t x = a.l[i], y = b.l[i];
    const std::uint64_t d = x - y - borrow;
    borrow = (x < y || (x == y && borrow)) ? 1 : 0;
    r.l[i] = d;
  }
  return r;
}

Fix div_small_floor(const Fix& a, std::uint64_t k) {
  if (k == 0) throw NumericalFailure("fixed point: division by zero");
  Fix r(a.frac());
  u128 rem = 0;
  for (std::size_t i = a.l.size(); i-- > 0;) {
    const u128 cur = (rem << 64) | a.l[i];
    r.l[i] = std::uint64_t(cur / k);
    rem = cur % k;
  }
  return r;
}

Fix recip_floor(const Fix& a) {
  // floor(2^(128 F) / A) with A = a 2^(64 F): restoring division, one quotient bit at a time
  // (F is a few limbs; this runs once per table).
  const std::size_t F = a.frac(), n = a.l.size();
  if (a.l[F] == 0) throw NumericalFailure("fixed point: reciprocal of a value below 1");
  const std::size_t nbits = 128 * F + 1;  // bits of the dividend 2^(128 F)
  std::vector<std::uint64_t> rem(n + 1, 0), q(n, 0);
  auto geq = [&](void) {
    if (rem[n] != 0) return true;
    for (std::size_t i = n; i-- > 0;) {
      if (rem[i] != a.l[i]) return rem[i] > a.l[i];
    }
    return true;
  };
  for (std::size_t bit = nbits; bit-- > 0;) {
    // rem = 2 rem + (bit of the dividend: only the top one is set)
    for (std::size_t i = n + 1; i-- > 1;) rem[i] = (rem[i] << 1) | (rem[i - 1] >> 63);
    rem[0] = (rem[0] << 1) | (bit == nbits - 1 ? 1u : 0u);
    if (geq()) {
      std::uint64_t borrow = 0;
      for (std::size_t i = 0; i <= n; ++i) {
        const std::uint64_t y = i < n ? a.l[i] : 0;
        const std::uint64_t x = rem[i];
        rem[i] = x - y - borrow;
        borrow = (x < y || (x == y && borrow)) ? 1 : 0;
      }
      if (bit / 64 >= n) throw NumericalFailure("fixed point: reciprocal beyond 1");
      q[bit / 64] |= std::uint64_t(1) << (bit % 64);
    }
  }
  Fix r(F);
  r.l = q;
  return r;
}

int cmp(const Fix& a, const Fix& b) {
  same_precision(a, b);
  for (std::size_t i = a.l.size(); i-- > 0;) {
    if (a.l[i] != b.l[i]) return a.l[i] < b.l[i] ? -1 : 1;
  }
  return 0;
}

bool is_zero(const Fix& a) {
  for (auto x : a.l)
    if (x != 0) return false;
  return true;
}

std::uint64_t floor_scaled(const Fix& a, int bits) {
  require(bits >= 1 && bits <= 64, "bits", bits, "1 to 64");
  const std::size_t F = a.frac();
  if (F == 0) throw NumericalFailure("fixed point: no fraction limbs to scale");
  const std::uint64_t ip = a.l[F];
  if (bits < 64 && (ip >> (64 - bits)) != 0) throw NumericalFailure("fixed point: scaled value beyond 2^64");
  if (bits == 64) {
    if (ip != 0) throw NumericalFailure("fixed point: scaled value beyond 2^64");
    return a.l[F - 1];
  }
  return (ip << bits) | (a.l[F - 1] >> (64 - bits));
}

std::uint64_t mul_error(std::uint64_t ea, std::uint64_t eb, bool exact) {
  // (a + da)(b + db) - ab = a db + b da + da db <= da + db + da db for a, b <= 1, and da db < 1
  // ulp while ea eb < 2^(64 F): both below 2^60 and F >= 2 (every caller)
  if (ea > (std::uint64_t(1) << 60) || eb > (std::uint64_t(1) << 60))
    throw NumericalFailure("fixed point: error bound beyond 2^60 ulps");
  return ea + eb + ((ea != 0 && eb != 0) ? 1 : 0) + (exact ? 0 : 1);
}

Fix pow_floor(const Fix& s, std::uint64_t e, std::uint64_t& err_ulps) {
  const std::size_t F = s.frac();
  if (cmp(s, fix_int(1, F)) > 0) throw NumericalFailure("fixed point: power of a value above 1");
  Fix r = fix_int(1, F), b = s;
  std::uint64_t er = 0, eb = 0;  // ulps of error of r and b
  bool exact = true;
  while (e != 0) {
    if (e & 1u) {
      r = mul_floor(r, b, &exact);
      er = mul_error(er, eb, exact);
    }
    e >>= 1;
    if (e != 0) {
      b = mul_floor(b, b, &exact);
      eb = mul_error(eb, eb, exact);
    }
  }
  err_ulps = er;
  return r;
}

}  // namespace puffer::sampling
