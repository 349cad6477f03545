#include "sampling/lattice.hpp"

#include <algorithm>
#include <array>
#include <type_traits>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "common/errors.hpp"
#include "common/parallel.hpp"
#include "sampling/bigfix.hpp"

namespace puffer::sampling {
namespace {

using u128 = unsigned __int128;
constexpr std::uint64_t kMask63 = 0x7FFFFFFFFFFFFFFFull;
constexpr std::size_t kF0 = 3;          // fraction limbs the tables are computed with (192 bits)
constexpr std::size_t kMaxF = 64;       // the exact path's precision limit (4096 bits)
constexpr std::uint64_t kMaxN = std::uint64_t(1) << 52;  // |Z| beyond this: refused
// direct Laplace tables up to 4 MiB: every law of beta <= 11800 lattice units (noise scales up to
// 11.5 at the default 1025 steps per unit), so the default path's inversion is the SIMD one
constexpr std::size_t kLaplaceDirect = std::size_t(1) << 19;

// log(S 2^-64) = log1p(-(2^64 - S) 2^-64) (a hint-quality double).
double log_param(std::uint64_t S) { return std::log1p(-double(std::uint64_t(0) - S) * 0x1.0p-64); }

double laplace_beta(std::uint64_t S) { return -0.5 / log_param(S); }
double gaussian_sigma(std::uint64_t S) { return std::sqrt(-0.5 / log_param(S)); }

// The floor of x 2^bits for x known to lie in [lo, lo + err ulps], or false if that interval
// holds an integer step (then a higher precision decides).
bool exact_floor(const Fix& lo, std::uint64_t err, int bits, std::uint64_t& out) {
  const std::uint64_t a = floor_scaled(lo, bits);
  if (err != 0 && floor_scaled(add_ulps(lo, err), bits) != a) return false;
  out = a;
  return true;
}

// ---- Laplace: TH(n) = s^(2n - 1) ----------------------------------------------------------

// s^e at F fraction limbs with its error (lower bound + ulps).
Fix laplace_pow(std::uint64_t S, std::uint64_t e, std::size_t F, std::uint64_t& err) {
  return pow_floor(fix_frac64(S, F), e, err);
}

// floor(2^64 s^e) exactly (raising the precision until the bounds agree).
std::uint64_t laplace_floor64(std::uint64_t S, std::uint64_t e) {
  for (std::size_t F = kF0 + 2; F <= kMaxF; F *= 2) {
    std::uint64_t err = 0, out = 0;
    const Fix x = laplace_pow(S, e, F, err);
    if (exact_floor(x, err, 64, out)) return out;
  }
  throw NumericalFailure("lattice tables: could not certify a threshold floor");
}

void build_laplace(LatticeTables& T) {
  const std::uint64_t S = T.law.S;
  const double ls = log_param(S);
  T.log_scale = 1.0 / ls;
  // TH(n) < 2^-64 once (2n - 1) log s < -64 log 2: n > 32 log 2 / (-log s) + 1/2
  const double nneed = 32.0 * std::log(2.0) / -ls + 2.5;
  unsigned lb = 0;
  while (lb < 40 && double(std::uint64_t(1) << (2 * lb)) < nneed) ++lb;  // L = 2^lb >= sqrt(nneed)
  T.lbits = lb;
  const std::uint64_t L = std::uint64_t(1) << lb;
  const std::size_t F = kF0;
  const Fix s = fix_frac64(S, F);
  bool exact = true;
  const Fix t = mul_floor(s, s, &exact);  // 128 bits: exact at F = 3
  if (!exact) throw NumericalFailure("lattice tables: s^2 not exact");
  // B[r] = floor(2^64 t^r), B[0] = 2^64 - 1 (see lattice.hpp)
  T.B.assign(std::size_t(L), 0);
  T.B[0] = ~std::uint64_t(0);
  Fix b = fix_int(1, F);
  std::uint64_t eb = 0;
  for (std::uint64_t r = 1; r < L; ++r) {
    b = mul_floor(b, t, &exact);
    eb = mul_error(eb, 0, exact);
    std::uint64_t v = 0;
    T.B[std::size_t(r)] = exact_floor(b, eb, 64, v) ? v : laplace_floor64(S, 2 * r);
  }
  // t^L, then A[q] = floor(2^64 s t^(q L)) until it reaches 0
  std::uint64_t etl = 0;
  const Fix tl = pow_floor(t, L, etl);
  Fix a = s;
  std::uint64_t ea = 0;
  T.A.clear();
  for (std::uint64_t q = 0;; ++q) {
    std::uint64_t v = 0;
    if (!exact_floor(a, ea, 64, v)) v = laplace_floor64(S, 1 + 2 * q * L);
    T.A.push_back(v);
    if (v == 0) break;
    if (T.A.size() > (std::size_t(1) << 26)) throw NumericalFailure("lattice tables: Laplace table too large");
    a = mul_floor(a, tl, &exact);
    ea = mul_error(ea, etl, exact);
  }
  T.nmax = std::uint64_t(T.A.size()) * L + 1;  // its q is past the table: TH < 2^-64
  // Laws of up to kLaplaceDirect thresholds (the default lattices: about 45500 per unit of noise
  // scale at 1025 steps per unit) also get T63[n] = floor(2^63 TH(n)) directly: one load and one
  // comparison per threshold instead of a 128-bit product (the same tables as the Gaussian's), and
  // the SIMD inversion (keyed_stream.hpp: lattice_invert)
  if (nneed > double(kLaplaceDirect)) return;
  std::vector<std::uint64_t> t63(1, 0);  // T63[0] unused (TH(0) = 1)
  Fix c = s;                             // s^(2n - 1), n = 1
  std::uint64_t ec = 0;
  for (std::uint64_t n = 1;; ++n) {
    std::uint64_t v = 0;
    // floor(2^63 x) = floor(2^64 x) / 2 (integer division)
    if (!exact_floor(c, ec, 63, v)) v = laplace_floor64(S, 2 * n - 1) >> 1;
    t63.push_back(v);
    if (v == 0) break;
    if (t63.size() > kLaplaceDirect + 64) throw NumericalFailure("lattice tables: Laplace direct table too large");
    c = mul_floor(c, t, &exact);
    ec = mul_error(ec, 0, exact);
  }
  T.T63 = std::move(t63);
  T.nmax = T.T63.size();  // past the table: TH < 2^-63
}

// Table decision for U < TH(n): 1 yes, 0 no, -1 undecided by u's 63 bits.
inline int laplace_below(const LatticeTables& T, std::uint64_t u, std::uint64_t n) {
  const std::uint64_t m = n - 1, q = m >> T.lbits, r = m & ((std::uint64_t(1) << T.lbits) - 1);
  if (q >= T.A.size()) return u >= 1 ? 0 : -1;  // TH(n) < 2^-64 (A's last entry is 0)
  const u128 P = u128(T.A[std::size_t(q)]) * T.B[std::size_t(r)];
  // 2^128 TH(n) lies in [P, (A + 1)(B + 1)) subset [P, P + 2^65 + 1): 2^63 TH(n) in [lo, lo + 2)
  const std::uint64_t lo = std::uint64_t(P >> 65);
  if (u + 1 <= lo) return 1;
  if (u >= lo + 2) return 0;
  return -1;
}

// ---- Gaussian: TH(n) = 2 sum_{y >= n} w^(y^2) / Theta, Theta = sum_y w^(y^2) ------------------

// The terms p_y = w^(y^2), y = 1, 2, ..., and their running sums, at F fraction limbs, with
// error bounds; `visit(n, prefix_lo, prefix_err)` sees the sum of p_1 .. p_(n-1) for n = 1, 2,
// ... up to n_stop (or until the terms vanish). Returns the bounds of sum_{y >= 1} p_y.
struct Sum1 {
  Fix lo;
  u128 err = 0;
};
constexpr u128 kMaxErr = u128(1) << 100;  // far below 1 at F >= 2 limbs

template <class Visit>
Sum1 gaussian_sums(std::uint64_t S, std::size_t F, std::uint64_t n_stop, Visit visit) {
  const Fix w = fix_frac64(S, F);
  bool exact = true;
  const Fix w2 = mul_floor(w, w, &exact);
  std::uint64_t ew2 = mul_error(0, 0, exact);
  Fix p = w, r = mul_floor(w, w2, &exact);  // p_1 = w, r_1 = w^3 (p_(y+1) = p_y r_y, r_(y+1) = r_y w^2)
  std::uint64_t ep = 0, er = mul_error(0, ew2, exact);
  Fix sum(F);
  u128 esum = 0;
  for (std::uint64_t y = 1;; ++y) {
    visit(y, sum, esum);  // sum = p_1 + ... + p_(y-1)
    // stop past n_stop once the lower bound of p_y is 0: p_y <= ep ulps, and the rest of the
    // series is below p_y / (1 - w) (each later ratio w^(2y + 1) <= w)
    if (y > n_stop && is_zero(p)) {
      const std::uint64_t D = std::uint64_t(0) - S;  // 2^64 - S >= 1
      const u128 rem = u128(ep + 1) * ((~std::uint64_t(0)) / D + 2);  // >= (ep + 1) 2^64 / D
      if (esum > kMaxErr || rem > kMaxErr) throw NumericalFailure("lattice tables: Gaussian error bound too large");
      return Sum1{sum, esum + rem};
    }
    sum = add(sum, p);
    esum += ep;
    if ((y & 4095u) == 0) {  // fresh powers now and then: the error counts stay near 2^26 ulps
      const std::uint64_t y1 = y + 1;
      p = pow_floor(w, y1 * y1, ep);
      r = pow_floor(w, 2 * y1 + 1, er);
      continue;
    }
    p = mul_floor(p, r, &exact);
    ep = mul_error(ep, er, exact);
    r = mul_floor(r, w2, &exact);
    er = mul_error(er, ew2, exact);
    if (y > (std::uint64_t(1) << 40)) throw NumericalFailure("lattice tables: Gaussian sum did not converge");
  }
}

// Bounds of Theta = 1 + 2 sum_{y >= 1} p_y.
void theta_bounds(const Sum1& s1, Fix& th_lo, Fix& th_hi) {
  const std::size_t F = s1.lo.frac();
  th_lo = add(fix_int(1, F), add(s1.lo, s1.lo));
  th_hi = add_ulps(th_lo, 2 * s1.err);
}

void build_gaussian(LatticeTables& T) {
  const std::uint64_t S = T.law.S;
  const double sigma = gaussian_sigma(S);
  // TH(n) < 2^-63 well before n = sigma sqrt(2 * 64 log 2) + 2
  const std::uint64_t nmax = std::uint64_t(std::ceil(sigma * std::sqrt(128.0 * std::log(2.0)))) + 3;
  for (std::size_t F = kF0; F <= kMaxF; F *= 2) {
    const Sum1 s1 = gaussian_sums(S, F, 0, [](std::uint64_t, const Fix&, u128) {});
    Fix th_lo, th_hi;
    theta_bounds(s1, th_lo, th_hi);
    const Fix r1 = recip_floor(th_hi);                  // <= 1/Theta
    const Fix r2 = add_ulps(recip_floor(th_lo), 1);     // >= 1/Theta
    std::vector<std::uint64_t> t63(1, 0);
    bool ok = true;
    bool done = false;
    gaussian_sums(S, F, nmax, [&](std::uint64_t n, const Fix& pre, u128 epre) {
      if (!ok || done) return;
      // T(n) = sum_1 - prefix in [s1.lo - pre - epre, s1.lo + s1.err - pre]
      const Fix pre_hi = add_ulps(pre, epre);
      const Fix tn_lo = cmp(s1.lo, pre_hi) >= 0 ? sub(s1.lo, pre_hi) : Fix(F);
      const Fix tn_hi = sub(add_ulps(s1.lo, s1.err), pre);
      const Fix x_lo = mul_floor(add(tn_lo, tn_lo), r1);
      const Fix x_hi = add_ulps(mul_floor(add(tn_hi, tn_hi), r2), 1);
      const std::uint64_t a = floor_scaled(x_lo, 63), b = floor_scaled(x_hi, 63);
      if (a != b) {
        ok = false;
        return;
      }
      t63.push_back(a);
      if (a == 0 || n >= nmax) done = true;
    });
    if (!ok) continue;
    if (t63.back() != 0) throw NumericalFailure("lattice tables: Gaussian table did not reach 0");
    T.T63 = std::move(t63);
    T.nmax = T.T63.size();  // past the table: TH < 2^-63
    // guide: top gbits bits of u -> the smallest |Z| of that cell
    unsigned gb = 4;
    while (gb < 16 && (std::size_t(1) << gb) < T.T63.size()) ++gb;
    T.gbits = gb;
    T.guide.assign(std::size_t(1) << gb, 0);
    std::uint64_t n = 0;  // #{n' >= 1 : T63[n'] >= bound}, non-increasing in the cell index
    for (std::size_t c = T.guide.size(); c-- > 0;) {
      const std::uint64_t bound = std::uint64_t(c + 1) << (63 - gb);
      while (n + 1 < T.T63.size() && T.T63[std::size_t(n + 1)] >= bound) ++n;
      T.guide[c] = std::uint32_t(n);
    }
    T.guide64.assign(T.guide.begin(), T.guide.end());
    return;
  }
  throw NumericalFailure("lattice tables: could not certify the Gaussian thresholds");
}

inline int direct_below(const LatticeTables& T, std::uint64_t u, std::uint64_t n) {
  if (n >= T.T63.size()) return u >= 1 ? 0 : -1;  // TH(n) < 2^-63 (the last entry is 0)
  const std::uint64_t f = T.T63[std::size_t(n)];    // 2^63 TH(n) in [f, f + 1)
  if (u < f) return 1;
  if (u > f) return 0;
  return -1;
}

// ---- the exact path -------------------------------------------------------------------------

// The bits of one value's uniform U: the 63 bits of u, then words from `more()` as needed.
template <class More>
class ExactU {
 public:
  ExactU(std::uint64_t u, More more) : u_(u), more_(std::move(more)) {}
  // U's first 64 F bits as a Fix (lower bound; U < it + 1 ulp).
  Fix at(std::size_t F) {
    while (64 * F > 63 + 64 * words_.size()) words_.push_back(more_());
    Fix x(F);
    // bit stream: 63 bits of u, then the words; limb F-1 holds bits 1..64, limb F-2 bits 65..128, ...
    auto word = [&](std::size_t k) -> std::uint64_t {  // the k-th 64-bit chunk of the stream
      const std::uint64_t hi = k == 0 ? (u_ << 1) : (words_[k - 1] << 1);
      const std::uint64_t lo = k < words_.size() ? (words_[k] >> 63) : 0;
      return hi | lo;
    };
    for (std::size_t k = 0; k < F; ++k) x.l[F - 1 - k] = word(k);
    return x;
  }

 private:
  std::uint64_t u_;
  More more_;
  std::vector<std::uint64_t> words_;
};

// Exact decision of U < TH(n) at increasing precision.
template <class More>
class ExactDecider {
 public:
  ExactDecider(const LatticeLaw& law, std::uint64_t u, More more) : law_(law), U_(u, std::move(more)) {}

  bool below(std::uint64_t n) {
    for (std::size_t F = kF0; F <= kMaxF; ++F) {
      const int c = try_below(n, F);
      if (c >= 0) return c == 1;
    }
    throw NumericalFailure("lattice sampling: the exact comparison needed more than 4096 bits");
  }

 private:
  int try_below(std::uint64_t n, std::size_t F) {
    const Fix u_lo = U_.at(F), u_hi = add_ulps(u_lo, 1);
    if (law_.family == 0) {
      std::uint64_t err = 0;
      const Fix th = laplace_pow(law_.S, 2 * n - 1, F, err);
      if (cmp(u_hi, th) <= 0) return 1;
      if (cmp(u_lo, add_ulps(th, err)) >= 0) return 0;
      return -1;
    }
    // Gaussian: U < 2 T(n) / Theta  <=>  U Theta < 2 T(n)
    if (F != theta_F_) {
      s1_ = gaussian_sums(law_.S, F, 0, [](std::uint64_t, const Fix&, u128) {});
      theta_bounds(s1_, th_lo_, th_hi_);
      theta_F_ = F;
    }
    Fix pre(F);
    u128 epre = 0;
    gaussian_sums(law_.S, F, n, [&](std::uint64_t y, const Fix& p, u128 e) {
      if (y == n) {
        pre = p;
        epre = e;
      }
    });
    const Fix pre_hi = add_ulps(pre, epre);
    const Fix tn_lo = cmp(s1_.lo, pre_hi) >= 0 ? sub(s1_.lo, pre_hi) : Fix(F);
    const Fix tn_hi = sub(add_ulps(s1_.lo, s1_.err), pre);
    const Fix lhs_hi = add_ulps(mul_floor(u_hi, th_hi_), 1);  // >= U Theta
    const Fix lhs_lo = mul_floor(u_lo, th_lo_);               // <= U Theta
    if (cmp(lhs_hi, add(tn_lo, tn_lo)) <= 0) return 1;
    if (cmp(lhs_lo, add(tn_hi, tn_hi)) >= 0) return 0;
    return -1;
  }

  LatticeLaw law_;
  ExactU<More> U_;
  std::size_t theta_F_ = 0;
  Sum1 s1_;
  Fix th_lo_, th_hi_;
};

// |Z| by the exact path alone: exponential then binary search on n.
template <class Decider>
std::uint64_t exact_magnitude(Decider& d) {
  if (!d.below(1)) return 0;
  std::uint64_t lo = 1, hi = 2;  // U < TH(lo); look for U >= TH(hi)
  while (d.below(hi)) {
    lo = hi;
    hi *= 2;
    if (hi > kMaxN) throw NumericalFailure("lattice sampling: |Z| beyond 2^52");
  }
  while (hi - lo > 1) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (d.below(mid)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Modes of the table path: the Laplace product tables, the Gaussian's T63, the Laplace's T63.
enum TableMode : int { kLaplaceAB = 0, kGaussian = 1, kLaplaceDirectT63 = 2 };

template <int Mode>
inline int tbelow(const LatticeTables& T, std::uint64_t u, std::uint64_t n) {
  if (n == 0) return 1;  // TH(0) = 1 > U
  return Mode == kLaplaceAB ? laplace_below(T, u, n) : direct_below(T, u, n);
}

// |Z| from the tables, starting at the hint; false where they cannot decide (then the exact path).
template <int Mode>
inline bool table_magnitude(const LatticeTables& T, std::uint64_t u, std::int64_t hint, std::uint64_t& out) {
  std::uint64_t n = hint <= 0 ? 0 : std::min<std::uint64_t>(std::uint64_t(hint), T.nmax);
  // the common case in straight-line code: the hint is right (U < TH(n) and U >= TH(n + 1))
  const int c0 = tbelow<Mode>(T, u, n), c1 = tbelow<Mode>(T, u, n + 1);
  if (c0 == 1 && c1 == 0) {
    out = n;
    return true;
  }
  if (c0 < 0 || c1 < 0 || u == 0) return false;
  // otherwise gallop away from the hint (the answer is mostly a step or two off: a guide cell that
  // holds a threshold), then bisect between what is known: U < TH(lo), U >= TH(hi) (TH(0) = 1 > U,
  // TH(nmax) < 2^-63 <= U)
  std::uint64_t lo = 0, hi = T.nmax;
  if (c0 == 0) {
    hi = n;
    for (std::uint64_t step = 1; hi > step;) {
      const int c = tbelow<Mode>(T, u, hi - step);
      if (c < 0) return false;
      if (c == 1) {
        lo = hi - step;
        break;
      }
      hi -= step;
      step *= 2;
    }
  } else {  // c1 == 1
    lo = n + 1;
    for (std::uint64_t step = 1; lo + step < T.nmax;) {
      const int c = tbelow<Mode>(T, u, lo + step);
      if (c < 0) return false;
      if (c == 0) {
        hi = lo + step;
        break;
      }
      lo += step;
      step *= 2;
    }
  }
  while (hi - lo > 1) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    const int c = tbelow<Mode>(T, u, mid);
    if (c < 0) return false;
    if (c == 1) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  out = lo;
  return true;
}

// Hint of |Z| for a word: Laplace from the SIMD log (x = log U / log s: |Z| = #{n: 2n - 1 < x}),
// Gaussian from the guide table.
template <int Mode>
inline std::int64_t hint_of(const LatticeTables& T, std::uint64_t u, double x) {
  if (Mode != kGaussian) {
    const double h = (x + 1.0) * 0.5;  // truncation = floor for h >= 0
    return h >= double(kMaxN) ? std::int64_t(kMaxN) : h <= 0.0 ? 0 : std::int64_t(h);
  }
  return std::int64_t(T.guide[std::size_t(u >> (63 - T.gbits))]);
}

// The words of value pos's rare-path blocks (attempts 1, 2, ... of the tag-3 rejection layout).
struct RareWords {
  const KeyedKey* key;
  std::uint64_t pos;
  std::uint32_t attempt = 1;
  std::array<std::uint64_t, 8> buf{};
  unsigned k = 8;
  std::uint64_t operator()() {
    if (k == 8) {
      if (attempt > kKeyedMaxAttempt) throw NumericalFailure("lattice sampling: rare path beyond 2^30 blocks");
      buf = keyed_reject_words(*key, kLatticeTag, pos, attempt++);
      k = 0;
    }
    return buf[k++];
  }
};

inline std::int64_t signed_of(std::uint64_t w, std::uint64_t n) {
  return (w >> 63) != 0 ? -std::int64_t(n) : std::int64_t(n);
}

template <int Mode, class Z, class Body>
void run_lattice_family(const LatticeTables& T, const KeyedKey& key, std::uint64_t start, std::size_t n,
                        unsigned threads, Body& body) {
  constexpr std::size_t kTask = std::size_t(1) << 15;
  constexpr std::size_t kBlocks = 64;  // a batch: 512 words
  const std::size_t n_tasks = (n + kTask - 1) / kTask;
  parallel_for(n_tasks, threads, [&](std::size_t task) {
    std::uint64_t words[8 * kBlocks];
    double hints[8 * kBlocks];
    Z z[8 * kBlocks];
    std::uint32_t pending[8 * kBlocks];
    const std::uint64_t p0 = start + task * kTask;
    const std::uint64_t p1 = p0 + std::min<std::uint64_t>(kTask, n - task * kTask);
    std::uint64_t p = p0;
    while (p < p1) {
      const std::uint64_t j0 = p / 8;  // the batch starts at p's block
      const std::uint64_t jend = std::min<std::uint64_t>(j0 + kBlocks, (p1 - 1) / 8 + 1);
      const std::uint64_t stop = std::min<std::uint64_t>(p1, jend * 8);
      const std::size_t i0 = std::size_t(p - 8 * j0), i1 = std::size_t(stop - 8 * j0);
      if constexpr (Mode != kLaplaceAB) {
        // direct tables: the SIMD inversion decides almost every value; the rest (a hint off by
        // more than a few steps, a tie with a floor) take the scalar table and exact paths below
        keyed_lattice_fill(key, j0, std::size_t(jend - j0), words, nullptr, T.log_scale);
        const std::size_t np = lattice_invert(words, 8 * std::size_t(jend - j0), T.T63.data(), T.T63.size(),
                                              Mode == kGaussian ? T.guide64.data() : nullptr, T.gbits, T.log_scale,
                                              z, pending);
        for (std::size_t k = 0; k < np; ++k) {
          const std::size_t i = pending[k];
          if (i < i0 || i >= i1) continue;
          const std::uint64_t w = words[i];
          const std::uint64_t u = w & kMask63;
          double x = 0.0;
          if constexpr (Mode != kGaussian) x = T.log_scale * std::log((double(u) + 0.5) * 0x1.0p-63);
          std::uint64_t m = 0;
          if (!table_magnitude<Mode>(T, u, hint_of<Mode>(T, u, x), m)) {
            ExactDecider<RareWords> d(T.law, u, RareWords{&key, 8 * j0 + i});
            m = exact_magnitude(d);
          }
          z[i] = Z(signed_of(w, m));
        }
        body(p, z + i0, i1 - i0);
        p = stop;
        continue;
      }
      keyed_lattice_fill(key, j0, std::size_t(jend - j0), words, Mode != kGaussian ? hints : nullptr, T.log_scale);
      for (std::size_t i = i0; i < i1; ++i) {
        const std::uint64_t w = words[i];
        const std::uint64_t u = w & kMask63;
        std::uint64_t m = 0;
        if (!table_magnitude<Mode>(T, u, hint_of<Mode>(T, u, Mode != kGaussian ? hints[i] : 0.0), m)) {
          ExactDecider<RareWords> d(T.law, u, RareWords{&key, 8 * j0 + i});
          m = exact_magnitude(d);
        }
        z[i] = Z(signed_of(w, m));  // |Z| < 2^52: exact as a double too
      }
      // the batch's consumer in one loop (vectorisable: no call, no branch per value)
      body(p, z + i0, i1 - i0);
      p = stop;
    }
  });
}

// Runs body(first position, z, count) over batches of positions [start, start + n), threads over
// tasks of 2^15; z holds the batch's integers as Z (std::int64_t or double).
template <class Z, class Body>
void run_lattice(const LatticeLaw& law, const KeyedKey& key, std::uint64_t start, std::size_t n, unsigned threads,
                 Body body) {
  require(threads <= 1024, "threads", threads, "0 (all cores) to 1024");
  require(start <= ~std::uint64_t(0) - n, "start", start, "start + size < 2^64");
  const auto tables = lattice_tables(law);
  if (law.family == 1) {
    run_lattice_family<kGaussian, Z>(*tables, key, start, n, threads, body);
  } else if (!tables->T63.empty()) {
    run_lattice_family<kLaplaceDirectT63, Z>(*tables, key, start, n, threads, body);
  } else {
    run_lattice_family<kLaplaceAB, Z>(*tables, key, start, n, threads, body);
  }
}

std::mutex g_tables_mu;
std::map<std::pair<int, std::uint64_t>, std::shared_ptr<const LatticeTables>> g_tables;

}  // namespace

void validate_lattice(const LatticeLaw& law) {
  require(law.family == 0 || law.family == 1, "family", law.family, "0 (rounded Laplace) or 1 (discrete Gaussian)");
  require(law.S >= 1, "S", law.S, "a parameter S 2^-64 in (0, 1)");
  if (law.family == 0) {
    require(laplace_beta(law.S) <= kLatticeMaxBeta, "beta", laplace_beta(law.S),
            "a Laplace scale of at most 2^32 lattice units (use a coarser granularity)");
  } else {
    require(gaussian_sigma(law.S) <= kLatticeMaxSigma, "sigma", gaussian_sigma(law.S),
            "a Gaussian scale of at most 2^16 lattice units (use a coarser granularity)");
  }
}

std::shared_ptr<const LatticeTables> lattice_tables(const LatticeLaw& law) {
  validate_lattice(law);
  const auto key = std::make_pair(law.family, law.S);
  {
    std::lock_guard<std::mutex> lk(g_tables_mu);
    auto it = g_tables.find(key);
    if (it != g_tables.end()) return it->second;
  }
  auto t = std::make_shared<LatticeTables>();
  t->law = law;
  if (law.family == 0) {
    build_laplace(*t);
  } else {
    build_gaussian(*t);
  }
  std::lock_guard<std::mutex> lk(g_tables_mu);
  if (g_tables.size() >= 16) g_tables.clear();  // a handful of laws per process: keep it bounded
  return g_tables.emplace(key, std::move(t)).first->second;
}

void lattice_keyed_int(const LatticeLaw& law, const KeyedKey& key, std::uint64_t start, std::size_t n,
                       std::int64_t* out, unsigned threads) {
  require(out != nullptr || n == 0, "out", "null", "a buffer");
  run_lattice<std::int64_t>(law, key, start, n, threads, [&](std::uint64_t p, const std::int64_t* z, std::size_t cnt) {
    std::copy(z, z + cnt, out + (p - start));
  });
}

void lattice_keyed_add_f64(const LatticeLaw& law, int g_exp, const KeyedKey& key, std::uint64_t start,
                           std::size_t n, const double* in, double* out, unsigned threads) {
  require(g_exp >= -1000 && g_exp <= 960, "granularity", "2^" + std::to_string(g_exp), "2^k with -1000 <= k <= 960");
  require((in != nullptr && out != nullptr) || n == 0, "values", "null", "a buffer");
  require(threads <= 1024, "threads", threads, "0 (all cores) to 1024");
  // powers of two: x / g and v g are exact (|v| <= 2^53, g >= 2^-1000: no subnormal results)
  const double inv_g = std::ldexp(1.0, -g_exp), g = std::ldexp(1.0, g_exp);
  // every input before any noise (in may equal out: a bad value must not leave partial output)
  constexpr std::size_t kCheck = std::size_t(1) << 16;
  std::vector<std::size_t> first_bad((n + kCheck - 1) / kCheck, n);
  parallel_for(first_bad.size(), threads, [&](std::size_t t) {
    const std::size_t hi = std::min(n, (t + 1) * kCheck);
    if (!lattice_any_beyond(in + t * kCheck, hi - t * kCheck, inv_g)) return;  // SIMD; the index only if one is bad
    for (std::size_t j = t * kCheck; j < hi; ++j) {
      if (!(std::fabs(in[j] * inv_g) <= 0x1p52)) {
        first_bad[t] = j;
        return;
      }
    }
  });
  for (const std::size_t j : first_bad)
    if (j < n) require(false, "values", in[j], "finite values with |x| <= 2^52 * granularity");
  run_lattice<double>(law, key, start, n, threads, [&](std::uint64_t p, const double* z, std::size_t cnt) {
    // (round_half_even(x / g) + Z) g in doubles, exactly (keyed_stream.hpp: lattice_snap_add)
    if (!lattice_snap_add(in + (p - start), z, out + (p - start), cnt, inv_g, g))
      throw NumericalFailure("lattice sampling: a value beyond 2^53 lattice units (not exact in float64)");
  });
}

std::int64_t lattice_magnitude_for_tests(const LatticeLaw& law, std::uint64_t u, const std::vector<std::uint64_t>& extra,
                                         bool fast, std::int64_t hint) {
  require(u <= kMask63, "u", u, "63 bits");
  const auto tables = lattice_tables(law);
  std::size_t k = 0;
  auto more = [&extra, &k]() -> std::uint64_t {
    if (k >= extra.size()) throw InvalidArgument("extra", std::to_string(extra.size()) + " words", "more words");
    return extra[k++];
  };
  if (fast) {
    std::uint64_t n = 0;
    const bool ok = law.family == 1              ? table_magnitude<kGaussian>(*tables, u, hint, n)
                    : !tables->T63.empty() ? table_magnitude<kLaplaceDirectT63>(*tables, u, hint, n)
                                           : table_magnitude<kLaplaceAB>(*tables, u, hint, n);
    return ok ? std::int64_t(n) : -1;
  }
  ExactDecider<decltype(more)> d(law, u, more);
  return std::int64_t(exact_magnitude(d));
}

}  // namespace puffer::sampling
