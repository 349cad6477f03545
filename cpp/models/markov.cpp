#include "models/markov.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <atomic>

#include "common/errors.hpp"
#include "common/parallel.hpp"
#include "common/modp.hpp"
#include "models/markov_ext.hpp"
#include "models/markov_modp.hpp"
#include "transport/w_inf_ranges.hpp"

namespace puffer::models {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
// Largest total exponent range (bits) of the two factors for the plain-double convolution:
// every product of reachable entries is then >= 2^-962 of the largest (normal, with margin).
constexpr std::int64_t kPlainRange = 960;
// Largest exponent range (bits) of a law handed out as plain doubles.
constexpr std::int64_t kLawRange = 1000;
// Largest exponent range (bits) inside one block of the blocked convolution: products of two
// blocks' entries are >= 2^-(2 * 450 + 2) of the pair's largest (normal, with margin).
constexpr std::int64_t kBlockRange = 450;

struct Geometry {
  std::size_t k, T, span, R;
  std::vector<std::size_t> dv;  // values - min value
  std::size_t lf(std::size_t t) const { return (t + 1) * span + 1; }      // forward slice t
  std::size_t lb(std::size_t t) const { return (T - 1 - t) * span + 1; }  // backward slice t
};

// ------------------------------------------------------------------ extended-range passes
// Backward slices B_t[x][s] = P(sum of v(X_{t+1..T-1}) = s + ... | X_t = x) (slice t has lb(t)
// entries per state). Checkpointed (Griewank): only the slices t = j C, j >= 1, are kept for the
// whole call (C = checkpoint_stride(T) ~ sqrt(T / 2)); the slices of the segment [j C, j C + C)
// are recomputed from checkpoint j + 1 when a worker reaches it. Memory ~ 12 k span (T^2 / (2 C)
// + C T) instead of 12 k span T^2 / 2; one more backward pass (k^2 T^2 span / 2 multiply-adds,
// against the convolutions' k T^3 span^2 / 6).
struct Slices {
  std::vector<double> m;
  std::vector<std::int32_t> e;
  std::vector<std::size_t> off;  // start of each stored slice
};
struct Checkpoints {
  std::size_t C = 1;
  Slices s;  // slice j C at off[j] (off[0] = off[1]: slice 0 is not kept)
};
struct Segment {
  std::size_t j = static_cast<std::size_t>(-1), t0 = 0;
  Slices s;  // slice t0 + r at off[r]
  const double* bm(const Geometry& g, std::size_t t, std::size_t x) const {
    return s.m.data() + s.off[t - t0] + x * g.lb(t);
  }
  const std::int32_t* be(const Geometry& g, std::size_t t, std::size_t x) const {
    return s.e.data() + s.off[t - t0] + x * g.lb(t);
  }
};

struct Coef {
  double pm;
  std::int32_t pe;
};

// The split matrices of one prior, one per phase: the step X_t -> X_{t+1} uses at(t)
// (MarkovChainSpec::step; period 1 for a time-homogeneous chain).
struct StepCoefs {
  std::vector<Coef> c;
  std::size_t k = 0, period = 1;
  const Coef* at(std::size_t t) const { return c.data() + (t % period) * k * k; }
};

StepCoefs split_matrices(const double* P, std::size_t k, std::size_t period) {
  StepCoefs s{std::vector<Coef>(period * k * k, Coef{0.0, ext::kNoExp}), k, period};
  for (std::size_t j = 0; j < period * k * k; ++j)
    if (P[j] > 0.0) ext::split(P[j], s.c[j].pm, s.c[j].pe);
  return s;
}

// Forward/convolution scratch of one worker.
struct Scratch {
  std::vector<double> fm[2], acc, J, Fd, Bp, tmp, Bz;
  std::vector<std::int32_t> fe[2], JE;
  struct Block {
    std::size_t lo, hi, at;  // slice indices [lo, hi], values stored from `at`
    std::int64_t top;        // exponent of the block's scale
  };
  std::vector<Block> bf, bb;
  std::vector<ext::Src> src;
  std::vector<Law> laws;
  std::vector<double> marg, next;
  Segment seg;
  void size(const Geometry& g) {
    for (int q = 0; q < 2; ++q) {
      fm[q].assign(g.k * g.R, 0.0);
      fe[q].assign(g.k * g.R, ext::kNoExp);
    }
    acc.assign(g.R, 0.0);
    J.assign(g.k * (g.R + 8), 0.0);
    JE.assign(g.k * (g.R + 8), 0);
    Fd.assign(g.R + 8, 0.0);
    Bp.assign(g.R + 8, 0.0);
    tmp.assign(2 * g.R + 16, 0.0);
    Bz.assign(g.R + 80, 0.0);
    src.reserve(g.k);
    laws.assign(g.k, Law{});
  }
};

// Slice t (dst) from slice t + 1 (src).
void backward_step(const Geometry& g, const StepCoefs& SC, const double* sm, const std::int32_t* se, double* dm,
                   std::int32_t* de, std::size_t t, std::vector<double>& acc, std::vector<ext::Src>& src) {
  const std::size_t k = g.k, ns = g.lb(t + 1), nd = g.lb(t);
  const Coef* C = SC.at(t);  // the step X_t -> X_{t+1}
  for (std::size_t x = 0; x < k; ++x) {
    src.clear();
    for (std::size_t y = 0; y < k; ++y)
      if (C[x * k + y].pm > 0.0) src.push_back({sm + y * ns, se + y * ns, ns, C[x * k + y].pm, C[x * k + y].pe, g.dv[y]});
    ext::gather(dm + x * nd, de + x * nd, nd, src.data(), src.size(), acc.data());
  }
}

void terminal_slice(const Geometry& g, double* m, std::int32_t* e) {  // B_{T-1}[x] = delta_0
  for (std::size_t x = 0; x < g.k; ++x) {
    m[x * g.lb(g.T - 1)] = 1.0;
    e[x * g.lb(g.T - 1)] = 0;
  }
}

std::size_t n_checkpoints(std::size_t T, std::size_t C) { return (T + C - 1) / C; }

// One backward pass keeping the slices t = j C, j >= 1.
void backward_checkpoints(const Geometry& g, const StepCoefs& C, Checkpoints& ck, std::vector<double>& acc,
                          const JobControl* ctl) {
  const std::size_t k = g.k, T = g.T, st = checkpoint_stride(T), n_ck = n_checkpoints(T, st);
  ck.C = st;
  ck.s.off.assign(n_ck + 1, 0);
  for (std::size_t j = 0; j < n_ck; ++j) ck.s.off[j + 1] = ck.s.off[j] + (j == 0 ? 0 : k * g.lb(j * st));
  ck.s.m.assign(ck.s.off[n_ck], 0.0);
  ck.s.e.assign(ck.s.off[n_ck], ext::kNoExp);
  if (n_ck < 2) return;
  const std::size_t n0 = k * g.lb(st);  // the largest slice kept
  std::vector<double> m[2] = {std::vector<double>(n0, 0.0), std::vector<double>(n0, 0.0)};
  std::vector<std::int32_t> e[2] = {std::vector<std::int32_t>(n0, ext::kNoExp), std::vector<std::int32_t>(n0, ext::kNoExp)};
  std::vector<ext::Src> src;
  terminal_slice(g, m[0].data(), e[0].data());
  int q = 0;
  for (std::size_t t = T - 1;; --t) {  // buffer q holds slice t
    if (t % st == 0) {
      std::copy(m[q].begin(), m[q].begin() + static_cast<std::ptrdiff_t>(k * g.lb(t)),
                ck.s.m.begin() + static_cast<std::ptrdiff_t>(ck.s.off[t / st]));
      std::copy(e[q].begin(), e[q].begin() + static_cast<std::ptrdiff_t>(k * g.lb(t)),
                ck.s.e.begin() + static_cast<std::ptrdiff_t>(ck.s.off[t / st]));
    }
    if (t == st) break;
    if ((t & 63) == 0) poll(ctl);
    backward_step(g, C, m[q].data(), e[q].data(), m[1 - q].data(), e[1 - q].data(), t - 1, acc, src);
    q = 1 - q;
  }
}

// The slices of segment j = [j C, min(j C + C, T)) from checkpoint j + 1 (or the terminal slice).
void load_segment(const Geometry& g, const StepCoefs& C, const Checkpoints& ck, Segment& seg, std::size_t j,
                  std::vector<double>& acc) {
  const std::size_t k = g.k, T = g.T, t0 = j * ck.C, t1 = std::min(T, t0 + ck.C);
  seg.s.off.assign(t1 - t0 + 1, 0);
  for (std::size_t t = t0; t < t1; ++t) seg.s.off[t - t0 + 1] = seg.s.off[t - t0] + k * g.lb(t);
  // capacity of the largest segment (j = 0) from the first load on: no reallocation, so a
  // worker never holds two segments (peak_bytes counts one)
  std::size_t nmax = 0;
  for (std::size_t t = 0; t < std::min(ck.C, T); ++t) nmax += k * g.lb(t);
  seg.s.m.reserve(nmax);
  seg.s.e.reserve(nmax);
  seg.s.m.resize(seg.s.off.back());
  seg.s.e.resize(seg.s.off.back());
  std::vector<ext::Src> src;
  double* lm = seg.s.m.data() + seg.s.off[t1 - 1 - t0];
  std::int32_t* le = seg.s.e.data() + seg.s.off[t1 - 1 - t0];
  if (t1 == T) {
    std::fill(lm, lm + k * g.lb(T - 1), 0.0);
    std::fill(le, le + k * g.lb(T - 1), ext::kNoExp);
    terminal_slice(g, lm, le);
  } else {
    backward_step(g, C, ck.s.m.data() + ck.s.off[j + 1], ck.s.e.data() + ck.s.off[j + 1], lm, le, t1 - 1, acc, src);
  }
  for (std::size_t t = t1 - 1; t-- > t0;)
    backward_step(g, C, seg.s.m.data() + seg.s.off[t + 1 - t0], seg.s.e.data() + seg.s.off[t + 1 - t0],
                  seg.s.m.data() + seg.s.off[t - t0], seg.s.e.data() + seg.s.off[t - t0], t, acc, src);
  seg.j = j;
  seg.t0 = t0;
}

// Forward slice 0 into buffer q.
void forward_init(const Geometry& g, const double* init, Scratch& S, int q) {
  std::fill(S.fm[q].begin(), S.fm[q].end(), 0.0);
  std::fill(S.fe[q].begin(), S.fe[q].end(), ext::kNoExp);
  for (std::size_t x = 0; x < g.k; ++x)
    if (init[x] > 0.0) ext::split(init[x], S.fm[q][x * g.R + g.dv[x]], S.fe[q][x * g.R + g.dv[x]]);
}

// Forward slice t + 1 (buffer 1 - q) from slice t (buffer q).
void forward_step(const Geometry& g, const StepCoefs& SC, Scratch& S, std::size_t t, int q) {
  const std::size_t k = g.k, R = g.R;
  const Coef* C = SC.at(t);  // the step X_t -> X_{t+1}
  for (std::size_t y = 0; y < k; ++y) {
    S.src.clear();
    for (std::size_t x = 0; x < k; ++x)
      if (C[x * k + y].pm > 0.0)
        S.src.push_back({S.fm[q].data() + x * R, S.fe[q].data() + x * R, g.lf(t), C[x * k + y].pm, C[x * k + y].pe, g.dv[y]});
    ext::gather(S.fm[1 - q].data() + y * R, S.fe[1 - q].data() + y * R, g.lf(t + 1), S.src.data(), S.src.size(),
                S.acc.data());
  }
}

struct Range {
  std::size_t lo = 0, hi = 0;
  bool empty = true;
};

Range reachable_range(const double* m, std::size_t n) {
  Range r;
  for (std::size_t s = 0; s < n; ++s)
    if (m[s] != 0.0) {
      if (r.empty) r.lo = s;
      r.hi = s;
      r.empty = false;
    }
  return r;
}

// max - min over reachable s in [lo, hi] of e[s] + c s (mantissas in [1, 2) add < 1 bit).
void tilted_extent(const double* m, const std::int32_t* e, Range r, std::int64_t c, std::int64_t& mx,
                   std::int64_t& mn) {
  mx = std::numeric_limits<std::int64_t>::min();
  mn = std::numeric_limits<std::int64_t>::max();
  for (std::size_t s = r.lo; s <= r.hi; ++s)
    if (m[s] != 0.0) {
      const std::int64_t v = e[s] + c * static_cast<std::int64_t>(s);
      mx = std::max(mx, v);
      mn = std::min(mn, v);
    }
}

std::int64_t tilted_cost(const double* fm, const std::int32_t* fe, Range rf, const double* bm, const std::int32_t* be,
                         Range rb, std::int64_t c) {
  std::int64_t a, b, x, y;
  tilted_extent(fm, fe, rf, c, a, b);
  tilted_extent(bm, be, rb, c, x, y);
  return (a - b) + (x - y) + 2;  // + 2: mantissas in [1, 2)
}

// Scales the reachable entries of an extended slice to plain doubles m 2^(e + c s - top), all
// >= 2^-961 by the range check; zeros stay zeros.
void to_plain(const double* m, const std::int32_t* e, Range r, std::int64_t c, std::int64_t top, double* out) {
  for (std::size_t s = r.lo; s <= r.hi; ++s)
    out[s - r.lo] = m[s] != 0.0 ? m[s] * ext::pow2i(e[s] + c * static_cast<std::int64_t>(s) - top) : 0.0;
}

// Splits the reachable range of an extended slice into consecutive blocks whose tilted
// exponents e[s] + c s span <= kBlockRange bits, and writes each block as plain doubles scaled
// by its largest exponent (>= 2^-kBlockRange-1 where reachable) to out (pad zeros between
// blocks when pad > 0, for convolve_plain's padded B operand).
void make_blocks(const double* m, const std::int32_t* e, Range r, std::int64_t c, std::size_t pad,
                 std::vector<Scratch::Block>& blocks, double* out) {
  blocks.clear();
  std::size_t s = r.lo, at = 0;
  for (std::size_t q = 0; q < pad; ++q) out[q] = 0.0;
  while (s <= r.hi) {
    std::int64_t mx = std::numeric_limits<std::int64_t>::min(), mn = std::numeric_limits<std::int64_t>::max();
    std::size_t t = s;
    for (; t <= r.hi; ++t) {
      if (m[t] == 0.0) continue;
      const std::int64_t v = e[t] + c * static_cast<std::int64_t>(t);
      const std::int64_t nmx = std::max(mx, v), nmn = std::min(mn, v);
      if (nmx - nmn > kBlockRange) break;
      mx = nmx;
      mn = nmn;
    }
    // block [s, t - 1] (t > s: a single entry always fits)
    at += pad;
    blocks.push_back({s, t - 1, at, mx});
    for (std::size_t u = s; u < t; ++u)
      out[at + u - s] = m[u] != 0.0 ? m[u] * ext::pow2i(e[u] + c * static_cast<std::int64_t>(u) - mx) : 0.0;
    at += t - s;
    for (std::size_t q = 0; q < pad; ++q) out[at + q] = 0.0;
    s = t;
    while (s <= r.hi && m[s] == 0.0) ++s;
  }
}

// J[s] 2^E[s] = sum F[s1] B[s - s1] (tilted by 2^(c s)) by plain-double convolutions of block
// pairs, each merged into the extended output. Outputs are indexed from rf.lo + rb.lo.
void convolve_blocks(const double* fm, const std::int32_t* fe, Range rf, const double* bm, const std::int32_t* be,
                     Range rb, std::int64_t c, Scratch& S, double* J, std::int32_t* E) {
  const std::size_t n = (rf.hi - rf.lo) + (rb.hi - rb.lo) + 1;
  std::fill(J, J + n, 0.0);
  std::fill(E, E + n, ext::kNoExp);
  if (S.Fd.size() < 2 * (rf.hi - rf.lo + 8)) S.Fd.resize(2 * (rf.hi - rf.lo + 8));
  if (S.Bp.size() < 4 * (rb.hi - rb.lo + 8)) S.Bp.resize(4 * (rb.hi - rb.lo + 8));
  make_blocks(fm, fe, rf, c, 0, S.bf, S.Fd.data());
  make_blocks(bm, be, rb, c, 3, S.bb, S.Bp.data());
  const double n1 = static_cast<double>(rf.hi - rf.lo + 1), n2 = static_cast<double>(rb.hi - rb.lo + 1);
  const double nbf = static_cast<double>(S.bf.size()), nbb = static_cast<double>(S.bb.size());
  if (n1 * n2 + 16.0 * (nbb * n1 + nbf * n2 + 8.0 * nbf * nbb) > 6.0 * n1 * n2) {
    // many tiny blocks (exponents jumping by hundreds of bits between neighbours): the
    // integer-exponent convolution is cheaper
    ext::convolve_ext(J, E, fm + rf.lo, fe + rf.lo, rf.hi - rf.lo + 1, bm + rb.lo, be + rb.lo, rb.hi - rb.lo + 1);
    for (std::size_t j = 0; j < n; ++j)
      if (J[j] > 0.0) E[j] = static_cast<std::int32_t>(E[j] + c * static_cast<std::int64_t>(rf.lo + rb.lo + j));
    return;
  }
  for (const auto& I : S.bf)
    for (const auto& K : S.bb) {
      const std::size_t ni = I.hi - I.lo, nk = K.hi - K.lo;
      std::fill(S.tmp.begin(), S.tmp.begin() + static_cast<std::ptrdiff_t>(ni + nk + 8), 0.0);
      ext::convolve_plain(S.tmp.data(), S.Fd.data() + I.at, 0, ni, S.Bp.data() + K.at - 3, nk, S.Bz.data());
      const std::size_t o = (I.lo - rf.lo) + (K.lo - rb.lo);
      ext::merge_scaled(J + o, E + o, S.tmp.data(), ni + nk + 1, I.top + K.top);
    }
}

// Law (i, a) from F_i[a] and B_i[a] into row J / JE; returns whether the extended form was kept.
bool law_from(const Geometry& g, const double* fm, const std::int32_t* fe, const double* bm, const std::int32_t* be,
              std::size_t nb, Scratch& S, std::size_t a, const std::vector<double>& grid, Law& law) {
  const std::size_t RJ = g.R + 8;
  double* Jrow = S.J.data() + a * RJ;
  std::int32_t* Erow = S.JE.data() + a * RJ;
  const Range rf = reachable_range(fm, g.R);
  if (rf.empty) return false;  // P(X_i = a) = 0: the secret is impossible (empty law)
  const Range rb = reachable_range(bm, nb);
  const std::size_t lo = rf.lo + rb.lo, hi = rf.hi + rb.hi;
  law.atoms = grid.data() + lo;
  law.n = hi - lo + 1;
  law.mass = Jrow + lo;
  std::int64_t c = 0;
  std::int64_t cost = tilted_cost(fm, fe, rf, bm, be, rb, 0);
  if (cost > kPlainRange) {
    // Exact exponential tilt 2^(c s) with c the least-squares slope of -e[s] over the reachable
    // entries of both factors (any integer c is exact; the range check below decides).
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    auto acc = [&](const double* m, const std::int32_t* e, Range r) {
      for (std::size_t s = r.lo; s <= r.hi; ++s)
        if (m[s] != 0.0) {
          const double x = static_cast<double>(s), y = static_cast<double>(e[s]);
          n += 1;
          sx += x;
          sy += y;
          sxx += x * x;
          sxy += x * y;
        }
    };
    acc(fm, fe, rf);
    acc(bm, be, rb);
    const double den = n * sxx - sx * sx;
    const double slope = den > 0 ? (n * sxy - sx * sy) / den : 0.0;
    // |c| R <= 2^27: tilted exponents e + c s stay far inside the 32-bit exponent fields
    const double cmax = std::ldexp(1.0, 27) / static_cast<double>(g.R + 1);
    const std::int64_t cl = static_cast<std::int64_t>(std::llround(std::clamp(-slope, -cmax, cmax)));
    const std::int64_t v = tilted_cost(fm, fe, rf, bm, be, rb, cl);
    if (v < cost) {
      cost = v;
      c = cl;
    }
  }
  std::int64_t top;  // exponent offset of the output: true mass = J[s] 2^(top - c s)
  if (cost <= kPlainRange) {
    std::int64_t tf, tb, dummy;
    tilted_extent(fm, fe, rf, c, tf, dummy);
    tilted_extent(bm, be, rb, c, tb, dummy);
    to_plain(fm, fe, rf, c, tf, S.Fd.data());
    std::fill(S.Bp.begin(), S.Bp.end(), 0.0);
    to_plain(bm, be, rb, c, tb, S.Bp.data() + 3);
    const std::size_t nbr = rb.hi - rb.lo, nfr = rf.hi - rf.lo;
    std::fill(Jrow + lo, Jrow + std::min(RJ, lo + nfr + nbr + 8), 0.0);
    ext::convolve_plain(Jrow + lo, S.Fd.data(), 0, nfr, S.Bp.data(), nbr, S.Bz.data());
    if (c == 0) return false;  // plain law: one scale for every atom
    top = tf + tb;
    for (std::size_t s = lo; s <= hi; ++s) Erow[s] = static_cast<std::int32_t>(top - c * static_cast<std::int64_t>(s));
  } else {
    convolve_blocks(fm, fe, rf, bm, be, rb, c, S, Jrow + lo, Erow + lo);
    for (std::size_t s = lo; s <= hi; ++s)
      if (Jrow[s] > 0.0) Erow[s] = static_cast<std::int32_t>(Erow[s] - c * static_cast<std::int64_t>(s));
  }
  // Hand the law out as plain doubles when one double scale holds every atom (a-posteriori).
  std::int64_t mx = std::numeric_limits<std::int64_t>::min(), mn = std::numeric_limits<std::int64_t>::max();
  for (std::size_t s = lo; s <= hi; ++s)
    if (Jrow[s] > 0.0) {
      const std::int64_t v = static_cast<std::int64_t>(ext::exponent_of(Jrow[s])) + Erow[s];
      mx = std::max(mx, v);
      mn = std::min(mn, v);
    }
  if (mx - mn <= kLawRange) {
    for (std::size_t s = lo; s <= hi; ++s)
      if (Jrow[s] > 0.0) Jrow[s] = std::ldexp(Jrow[s], static_cast<int>(Erow[s] - mx));
    return false;
  }
  law.exp2 = Erow + lo;
  return true;
}

// Positions [i0, i1) of one prior: forward pass streamed from position 0, laws emitted in order.
// Returns whether some law kept the extended form.
bool run_positions(const Geometry& g, std::size_t th, const double* P, const double* init, const StepCoefs& C,
                   const Checkpoints& ck, Scratch& S, std::size_t i0, std::size_t i1, const std::vector<double>& grid,
                   const PositionFn& emit, JobControl* ctl, const std::uint8_t* mask) {
  const std::size_t k = g.k;
  bool used_ext = false;
  int q = 0;
  forward_init(g, init, S, q);
  S.marg.assign(init, init + k);
  S.next.assign(k, 0.0);
  S.seg.j = static_cast<std::size_t>(-1);  // segments of another prior are stale
  for (std::size_t i = 0; i < i1; ++i) {
    if (i > 0) {
      forward_step(g, C, S, i - 1, q);
      q = 1 - q;
      std::fill(S.next.begin(), S.next.end(), 0.0);
      const double* Pi = P + ((i - 1) % C.period) * k * k;  // the step X_{i-1} -> X_i
      for (std::size_t x = 0; x < k; ++x)
        for (std::size_t y = 0; y < k; ++y) S.next[y] += S.marg[x] * Pi[x * k + y];
      S.marg.swap(S.next);
    }
    if (i < i0) continue;
    poll(ctl);
    if (mask != nullptr && mask[i] == 0) {
      advance(ctl);
      continue;
    }
    if (S.seg.j != i / ck.C) load_segment(g, C, ck, S.seg, i / ck.C, S.acc);
    for (std::size_t a = 0; a < k; ++a) {
      Law& law = S.laws[a];
      law = Law{};
      law.secret_prob = S.marg[a];
      used_ext |= law_from(g, S.fm[q].data() + a * g.R, S.fe[q].data() + a * g.R, S.seg.bm(g, i, a), S.seg.be(g, i, a), g.lb(i),
                           S, a, grid, law);
    }
    emit(th, i, S.laws);
    advance(ctl);
  }
  return used_ext;
}

// ------------------------------------------------------------------ log-space reference
struct LogWork {
  std::size_t T, k, R;
  std::vector<double> F, B;
  double& f(std::size_t t, std::size_t x, std::size_t s) { return F[(t * k + x) * R + s]; }
  double& b(std::size_t t, std::size_t x, std::size_t s) { return B[(t * k + x) * R + s]; }
};

inline double lse(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  return a > b ? a + std::log1p(std::exp(b - a)) : b + std::log1p(std::exp(a - b));
}

// P: the prior's `period` matrices; the step t -> t + 1 uses matrix t mod period.
void forward_backward_log(LogWork& w, const double* P, std::size_t period, const double* init,
                          const std::vector<std::size_t>& dv) {
  const std::size_t T = w.T, k = w.k, R = w.R;
  w.F.assign(T * k * R, kNegInf);
  w.B.assign(T * k * R, kNegInf);
  for (std::size_t x = 0; x < k; ++x)
    if (init[x] > 0.0) w.f(0, x, dv[x]) = std::log(init[x]);
  for (std::size_t t = 0; t + 1 < T; ++t)
    for (std::size_t y = 0; y < k; ++y)
      for (std::size_t x = 0; x < k; ++x) {
        const double p = P[(t % period) * k * k + x * k + y];
        if (p == 0.0) continue;
        const double lp = std::log(p);
        for (std::size_t s = 0; s + dv[y] < R; ++s) {
          const double v = w.f(t, x, s);
          if (v != kNegInf) w.f(t + 1, y, s + dv[y]) = lse(w.f(t + 1, y, s + dv[y]), v + lp);
        }
      }
  for (std::size_t x = 0; x < k; ++x) w.b(T - 1, x, 0) = 0.0;
  for (std::size_t t = T - 1; t-- > 0;)
    for (std::size_t x = 0; x < k; ++x)
      for (std::size_t y = 0; y < k; ++y) {
        const double p = P[(t % period) * k * k + x * k + y];
        if (p == 0.0) continue;
        const double lp = std::log(p);
        for (std::size_t s = 0; s + dv[y] < R; ++s) {
          const double v = w.b(t + 1, y, s);
          if (v != kNegInf) w.b(t, x, s + dv[y]) = lse(w.b(t, x, s + dv[y]), v + lp);
        }
      }
}

void run_log_reference(const Geometry& g, std::size_t th, const double* P, std::size_t period, const double* init,
                       const std::vector<double>& grid, const PositionFn& emit, JobControl* ctl,
                       const std::uint8_t* mask) {
  const std::size_t k = g.k, T = g.T, R = g.R, RJ = R + 8;
  LogWork w{T, k, R, {}, {}};
  forward_backward_log(w, P, period, init, g.dv);
  std::vector<Law> laws(k);
  std::vector<double> J(k * RJ, kNegInf);
  std::vector<double> marg(init, init + k), next(k);
  for (std::size_t i = 0; i < T; ++i) {
    poll(ctl);
    if (i > 0) {
      std::fill(next.begin(), next.end(), 0.0);
      const double* Pi = P + ((i - 1) % period) * k * k;
      for (std::size_t x = 0; x < k; ++x)
        for (std::size_t y = 0; y < k; ++y) next[y] += marg[x] * Pi[x * k + y];
      marg.swap(next);
    }
    if (mask != nullptr && mask[i] == 0) {
      advance(ctl);
      continue;
    }
    for (std::size_t a = 0; a < k; ++a) {
      Law& law = laws[a];
      law = Law{};
      law.secret_prob = marg[a];
      const double* Fa = &w.f(i, a, 0);
      const double* Ba = &w.b(i, a, 0);
      std::size_t f_lo = R, f_hi = 0, b_hi = 0;
      for (std::size_t s = 0; s < R; ++s) {
        if (Fa[s] != kNegInf) { f_lo = std::min(f_lo, s); f_hi = s; }
        if (Ba[s] != kNegInf) b_hi = s;
      }
      if (f_lo == R) continue;
      const std::size_t hi = std::min(R - 1, f_hi + b_hi);
      double* Ja = J.data() + a * RJ;
      for (std::size_t s = f_lo; s <= hi; ++s) Ja[s] = kNegInf;
      for (std::size_t s1 = f_lo; s1 <= f_hi; ++s1) {
        const double fv = Fa[s1];
        if (fv == kNegInf) continue;
        for (std::size_t s2 = 0; s2 <= b_hi && s1 + s2 < R; ++s2)
          if (Ba[s2] != kNegInf) Ja[s1 + s2] = lse(Ja[s1 + s2], fv + Ba[s2]);
      }
      double mx = kNegInf;
      for (std::size_t s = f_lo; s <= hi; ++s) mx = std::max(mx, Ja[s]);
      for (std::size_t s = f_lo; s <= hi; ++s)
        if (Ja[s] != kNegInf) Ja[s] -= mx;
      law.log_space = true;
      law.atoms = grid.data() + f_lo;
      law.mass = Ja + f_lo;
      law.n = hi - f_lo + 1;
    }
    emit(th, i, laws);
    advance(ctl);
  }
}

Geometry geometry(const MarkovChainSpec& spec) {
  Geometry g;
  g.k = spec.k;
  g.T = spec.T;
  std::int64_t vmin = spec.values[0], vmax = spec.values[0];
  for (std::size_t x = 0; x < g.k; ++x) {
    vmin = std::min(vmin, spec.values[x]);
    vmax = std::max(vmax, spec.values[x]);
  }
  g.dv.resize(g.k);
  for (std::size_t x = 0; x < g.k; ++x) g.dv[x] = static_cast<std::size_t>(spec.values[x] - vmin);
  g.span = static_cast<std::size_t>(vmax - vmin);
  g.R = g.T * g.span + 1;
  return g;
}

// Worker-owned buffers, handed out to tasks and freed when the call returns.
template <class W>
class Pool {
 public:
  std::unique_ptr<W> take() {
    std::lock_guard<std::mutex> lk(mu_);
    if (free_.empty()) return std::make_unique<W>();
    auto w = std::move(free_.back());
    free_.pop_back();
    return w;
  }
  void give(std::unique_ptr<W> w) {
    std::lock_guard<std::mutex> lk(mu_);
    free_.push_back(std::move(w));
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<W>> free_;
};

}  // namespace

void validate(const MarkovChainSpec& spec, double tol) {
  require(spec.k >= 1 && spec.k <= 64, "k", spec.k, "1 to 64 states");
  require(spec.T >= 1 && spec.T <= 100000, "T", spec.T, "a chain length in [1, 100000]");
  require(spec.n_theta >= 1, "n_theta", spec.n_theta, "at least one prior");
  require(spec.period >= 1, "period", spec.period, "at least one transition matrix per prior");
  std::int64_t vmin = spec.values[0], vmax = spec.values[0];
  for (std::size_t x = 0; x < spec.k; ++x) {
    vmin = std::min(vmin, spec.values[x]);
    vmax = std::max(vmax, spec.values[x]);
  }
  require(vmax - vmin <= 1000000, "values", vmax - vmin, "a value span <= 1e6");
  require(static_cast<double>(spec.T) * static_cast<double>(vmax - vmin) <= 5e7, "T * value span",
          static_cast<double>(spec.T) * static_cast<double>(vmax - vmin), "a sum range <= 5e7");
  for (std::size_t th = 0; th < spec.n_theta; ++th) {
    const double* pi = spec.init + th * spec.k;
    double s0 = 0.0;
    for (std::size_t x = 0; x < spec.k; ++x) {
      require(std::isfinite(pi[x]) && pi[x] >= 0.0, "init", pi[x], "finite probabilities >= 0");
      s0 += pi[x];
    }
    require(std::fabs(s0 - 1.0) <= tol, "init sum", s0, "an initial law summing to 1");
    for (std::size_t ph = 0; ph < spec.period; ++ph) {
      const double* P = spec.prior(th) + ph * spec.k * spec.k;
      for (std::size_t x = 0; x < spec.k; ++x) {
        double s = 0.0;
        for (std::size_t y = 0; y < spec.k; ++y) {
          const double p = P[x * spec.k + y];
          require(std::isfinite(p) && p >= 0.0, "transition", p, "finite probabilities >= 0");
          s += p;
        }
        require(std::fabs(s - 1.0) <= tol, "transition row sum", s, "rows summing to 1");
      }
    }
  }
}

namespace {
// Bytes of the backward checkpoints of one prior (kept for the whole prior, shared by the
// workers of its positions) and of one worker's segment + forward/convolution/level buffers.
double checkpoint_bytes(std::size_t k, std::size_t T, std::size_t span) {
  const std::size_t C = checkpoint_stride(T);
  double b = 0.0;
  for (std::size_t t = C; t < T; t += C) b += static_cast<double>((T - 1 - t) * span + 1);
  const double lbC = C < T ? static_cast<double>((T - 1 - C) * span + 1) : 0.0;
  return 12.0 * static_cast<double>(k) * (b + 2.0 * lbC);  // + the two pass buffers
}
double worker_bytes(std::size_t k, std::size_t T, std::size_t span) {
  const std::size_t C = std::min(checkpoint_stride(T), T);
  double seg = 0.0;
  for (std::size_t t = 0; t < C; ++t) seg += static_cast<double>((T - 1 - t) * span + 1);
  const double K = static_cast<double>(k), R = static_cast<double>(T * span + 1) + 80.0;
  // forward slices 24 k R, law rows 12 k R, convolution scratch 80 R, levels of the walk 48 k R
  // + 16 R (w_inf_all_pairs)
  return 12.0 * K * seg + (84.0 * K + 96.0) * R;
}
}  // namespace

double workspace_bytes(std::size_t k, std::size_t T, std::size_t span, Arithmetic arithmetic, std::size_t period) {
  const double K = static_cast<double>(k), TT = static_cast<double>(T), S = static_cast<double>(span);
  const double R = TT * S + 1.0;
  if (arithmetic == Arithmetic::kLogReference) return 16.0 * TT * K * R + 8.0 * K * (R + 8);
  // + the exact images (ModChain and a ModSegment), built only for a prior whose levels need a
  // tie certified, + the prior's split matrices (16 bytes an entry)
  return checkpoint_bytes(k, T, span) + worker_bytes(k, T, span) + ModChain::bytes(k, T, span, period) +
         ModSegment::bytes(k, T, span) + 16.0 * static_cast<double>(period) * K * K;
}

double peak_bytes(std::size_t k, std::size_t T, std::size_t span, std::size_t n_theta, unsigned threads,
                  Arithmetic arithmetic, std::size_t period) {
  const unsigned hw = threads == 0 ? std::min(hardware_threads(), kMaxThreads) : threads;
  if (arithmetic == Arithmetic::kLogReference)
    return static_cast<double>(std::min<std::size_t>(hw, n_theta)) * workspace_bytes(k, T, span, arithmetic, period);
  // per prior in flight: checkpoints, exact images and the split matrices (16 bytes an entry)
  const double per_prior = checkpoint_bytes(k, T, span) + ModChain::bytes(k, T, span, period) +
                           16.0 * static_cast<double>(period * k * k);
  const double per_worker = worker_bytes(k, T, span) + ModSegment::bytes(k, T, span);
  if (n_theta < hw && T > 1)  // sum_laws: one prior at a time, its positions split between the threads
    return per_prior + static_cast<double>(std::min<std::size_t>(hw, T)) * per_worker;
  return static_cast<double>(std::min<std::size_t>(hw, n_theta)) * (per_prior + per_worker);
}

double prior_operations(std::size_t k, std::size_t T, std::size_t span) {
  double conv = 0.0;
  for (std::size_t i = 0; i < T; ++i)
    conv += static_cast<double>((i + 1) * span + 1) * static_cast<double>((T - 1 - i) * span + 1);
  const double R = static_cast<double>(T * span + 1);
  return static_cast<double>(k) * conv + 2.0 * static_cast<double>(T) * static_cast<double>(k * k) * R;
}

std::vector<std::uint8_t> sum_laws(const MarkovChainSpec& spec, unsigned threads, const PositionFn& emit,
                                   const SumLawsOptions& options) {
  const Geometry g = geometry(spec);
  const std::size_t k = g.k, T = g.T, R = g.R;
  const double base = static_cast<double>(T) * static_cast<double>(spec.values[0] - static_cast<std::int64_t>(g.dv[0]));
  std::vector<double> grid(R);
  for (std::size_t s = 0; s < R; ++s) grid[s] = base + static_cast<double>(s);
  std::vector<std::uint8_t> used(spec.n_theta, 0);
  JobControl* ctl = options.control;

  if (options.arithmetic == Arithmetic::kLogReference) {
    parallel_for(spec.n_theta, threads, [&](std::size_t th) {
      run_log_reference(g, th, spec.prior(th), spec.period, spec.init + th * k, grid, emit, ctl, options.positions);
      used[th] = 1;
    });
    return used;
  }

  const unsigned hw = threads == 0 ? std::min(hardware_threads(), kMaxThreads) : threads;
  if (options.concurrent_positions && spec.n_theta < hw && T > 1) {
    // Few priors: one backward store per prior, positions split into chunks of equal
    // convolution cost; each chunk streams its own forward pass from position 0.
    const std::size_t n_chunks = std::min<std::size_t>(T, 4 * static_cast<std::size_t>(hw));
    std::vector<double> cum(T + 1, 0.0);
    for (std::size_t i = 0; i < T; ++i)
      cum[i + 1] = cum[i] + static_cast<double>(g.lf(i)) * static_cast<double>(g.lb(i)) + static_cast<double>(R);
    std::vector<std::size_t> cut(n_chunks + 1, T);
    cut[0] = 0;
    for (std::size_t c = 1; c < n_chunks; ++c)
      cut[c] = static_cast<std::size_t>(std::lower_bound(cum.begin(), cum.end(), cum[T] * c / n_chunks) - cum.begin());
    for (std::size_t c = 1; c <= n_chunks; ++c) cut[c] = std::max(cut[c], cut[c - 1]);
    Pool<Scratch> scratch;
    for (std::size_t th = 0; th < spec.n_theta; ++th) {
      const double* P = spec.prior(th);
      const double* init = spec.init + th * k;
      const StepCoefs C = split_matrices(P, k, spec.period);
      Checkpoints B;
      {
        std::vector<double> acc(R);
        backward_checkpoints(g, C, B, acc, ctl);
      }
      std::mutex mu;
      parallel_for(n_chunks, threads, [&](std::size_t c) {
        if (cut[c] == cut[c + 1]) return;
        auto S = scratch.take();
        S->size(g);
        const bool u = run_positions(g, th, P, init, C, B, *S, cut[c], cut[c + 1], grid, emit, ctl, options.positions);
        scratch.give(std::move(S));
        if (u) {
          std::lock_guard<std::mutex> lk(mu);
          used[th] = 1;
        }
      });
    }
    return used;
  }

  struct Worker {
    Checkpoints B;
    Scratch S;
  };
  Pool<Worker> workers;
  parallel_for(spec.n_theta, threads, [&](std::size_t th) {
    auto w = workers.take();
    const double* P = spec.prior(th);
    const double* init = spec.init + th * k;
    const StepCoefs C = split_matrices(P, k, spec.period);
    w->S.size(g);
    backward_checkpoints(g, C, w->B, w->S.acc, ctl);
    used[th] = run_positions(g, th, P, init, C, w->B, w->S, 0, T, grid, emit, ctl, options.positions) ? 1 : 0;
    workers.give(std::move(w));
  });
  return used;
}

namespace {

// Extended-range value m 2^e (m in [1, 2) or 0) for the cumulative levels of the laws.
struct XVal {
  double m = 0.0;
  std::int64_t e = 0;
};

inline void xadd(XVal& a, double m, std::int64_t e) {  // a += m 2^e, m > 0 normal
  const std::int32_t q0 = ext::exponent_of(m);
  m *= ext::pow2i(-q0);
  e += q0;
  if (a.m == 0.0) {
    a.m = m;
    a.e = e;
    return;
  }
  const std::int64_t d = e - a.e;
  if (d <= 0) {
    if (d >= -ext::kDrop) a.m += m * ext::pow2i(d);
  } else {
    a.m = d <= ext::kDrop ? a.m * ext::pow2i(-d) + m : m;
    a.e = e;
  }
  const std::int32_t q = ext::exponent_of(a.m);
  a.m *= ext::pow2i(-q);
  a.e += q;
}

// Cumulative levels of one law for the certified W_inf walk (reachable atoms only): F_u / total
// and S_u / total (mass strictly above atom u) as m 2^e with m in [1, 2) (sm = 0 at the top atom),
// each with relative error <= err; g is the atom's index on the sum grid.
struct Levels {
  std::vector<double> x, fm, sm;
  std::vector<std::int64_t> fe, se;
  std::vector<std::size_t> g;
  double err = 0.0;
  bool f_half(std::size_t u) const { return fe[u] < -1 || (fe[u] == -1 && fm[u] == 1.0); }  // F <= 1/2
};

inline void xdiv(const XVal& a, const XVal& b, double& m, std::int64_t& e) {  // a / b, a, b > 0
  m = a.m / b.m;  // in (1/2, 2)
  e = a.e - b.e;
  if (m < 1.0) {
    m *= 2.0;
    --e;
  }
}

// err: relative error bound of a computed mass (markov.hpp: sums of products of positive terms,
// ~(T (k + 1) + R) ulps; taken with a 2x margin) plus the n-term level sum and the division.
void make_levels(const Law& law, double base, std::size_t T, std::size_t k, std::size_t R, Levels& L) {
  L.x.clear();
  L.g.clear();
  std::vector<double> lm;
  std::vector<std::int64_t> le;
  double log_extent = 0.0;
  if (law.log_space) {
    double mx = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < law.n; ++j) mx = std::max(mx, law.mass[j]);
    for (std::size_t j = 0; j < law.n; ++j)
      if (law.reachable(j)) {
        // m 2^e = exp(l - mx): split the exponent so that no value underflows
        const double l2 = (law.mass[j] - mx) / 0.69314718055994530942;
        const double fl = std::floor(l2);
        L.x.push_back(law.atoms[j]);
        lm.push_back(std::exp2(l2 - fl));
        le.push_back(static_cast<std::int64_t>(fl));
        log_extent = std::max(log_extent, std::fabs(law.mass[j]) + std::fabs(mx));
      }
  } else {
    for (std::size_t j = 0; j < law.n; ++j)
      if (law.reachable(j)) {
        L.x.push_back(law.atoms[j]);
        lm.push_back(law.mass[j]);
        le.push_back(law.exp2 == nullptr ? 0 : law.exp2[j]);
      }
  }
  const std::size_t n = L.x.size();
  for (std::size_t u = 0; u < n; ++u) L.g.push_back(static_cast<std::size_t>(L.x[u] - base));
  const double TT = static_cast<double>(T), K = static_cast<double>(k), RR = static_cast<double>(R);
  L.err = (4.0 * TT * (K + 2.0) + 4.0 * RR + 64.0) * 0x1p-53;
  // the log-space reference path: log-sum-exp rounding grows with the magnitude of the logs
  if (law.log_space) L.err += 8.0 * (TT * K + RR) * (1.0 + log_extent) * 0x1p-53;
  L.fm.resize(n);
  L.fe.resize(n);
  L.sm.resize(n);
  L.se.resize(n);
  XVal F, S, tot;
  for (std::size_t u = 0; u < n; ++u) xadd(tot, lm[u], le[u]);
  for (std::size_t u = 0; u < n; ++u) {
    xadd(F, lm[u], le[u]);
    xdiv(F, tot, L.fm[u], L.fe[u]);
  }
  L.sm[n - 1] = 0.0;
  L.se[n - 1] = 0;
  for (std::size_t u = n - 1; u-- > 0;) {
    xadd(S, lm[u + 1], le[u + 1]);
    xdiv(S, tot, L.sm[u], L.se[u]);
  }
}

// a versus b (positive, m in [1, 2)) with relative tolerance band: -1, +1, or 0 (too close).
inline int rel_cmp(double am, std::int64_t ae, double bm, std::int64_t be, double band) {
  const std::int64_t d = ae - be;
  if (d >= 2) return 1;
  if (d <= -2) return -1;
  const double a = am * ext::pow2i(d);
  const double diff = a - bm, mx = a > bm ? a : bm;
  if (std::fabs(diff) <= band * mx) return 0;
  return diff < 0.0 ? -1 : 1;
}

enum class Mode { kUpper, kLower, kCertified };

// Exact equality of the levels F_u (law a) and G_v (law b) modulo both primes, by
// cross-multiplication with the totals.
inline bool mod_equal(const ModChain& mc, const std::vector<std::uint64_t>* ca, const std::vector<std::uint64_t>* cb,
                      std::size_t ga, std::size_t gb) {
  const std::size_t top = mc.grid_size() - 1;
  for (int q = 0; q < kModPrimes; ++q) {
    const std::uint64_t p = mc.prime(q);
    if (modp::mul(ca[q][ga], cb[q][top], p) != modp::mul(cb[q][gb], ca[q][top], p)) return false;
  }
  return true;
}

// The three-valued comparison F_u (law P) versus G_v (law Q) of the certified walk.
struct PairCmp {
  const Levels& P;
  const Levels& Q;
  double band;
  Mode mode = Mode::kUpper;
  bool close = false;
  const ModChain* mc = nullptr;
  const std::vector<std::uint64_t>*ca = nullptr, *cb = nullptr;

  PairCmp(const Levels& p, const Levels& q) : P(p), Q(q), band(p.err + q.err + 4.0 * 0x1p-53) {}

  transport::LevelCmp operator()(std::size_t u, std::size_t v) {
    using transport::LevelCmp;
    int r;
    if (P.f_half(u) || Q.f_half(v)) {
      r = rel_cmp(P.fm[u], P.fe[u], Q.fm[v], Q.fe[v], band);
    } else if (P.sm[u] == 0.0 || Q.sm[v] == 0.0) {  // a top atom: its level is exactly 1
      r = P.sm[u] == Q.sm[v] ? 2 : (P.sm[u] == 0.0 ? 1 : -1);
    } else {
      r = -rel_cmp(P.sm[u], P.se[u], Q.sm[v], Q.se[v], band);
    }
    if (r == 2) return LevelCmp::kEqual;
    if (r < 0) return LevelCmp::kLess;
    if (r > 0) return LevelCmp::kGreater;
    close = true;
    if (mode == Mode::kUpper) return LevelCmp::kUnknown;
    if (mode == Mode::kLower) return LevelCmp::kEqual;
    return mod_equal(*mc, ca, cb, P.g[u], Q.g[v]) ? LevelCmp::kEqual : LevelCmp::kUnknown;
  }

  // An upper bound (> 0) on the exact overlap of the level intervals of atoms u and v: the two
  // algebraically equal forms min(F_u, G_v) - max(F_{u-1}, G_{v-1}) and
  // min(S_{u-1}, T_{v-1}) - max(S_u, T_v) (S, T: mass above), each from the levels with their
  // relative error bounds and the absolute error of a subnormal.
  double overlap_ub(std::size_t u, std::size_t v) const {
    const double e = P.err + Q.err + 8.0 * 0x1p-53, tiny = 0x1p-1070;
    auto val = [](double m, std::int64_t ex) {
      return ex < -1100 ? 0.0 : std::ldexp(m, static_cast<int>(std::min<std::int64_t>(ex, 1100)));
    };
    auto F = [&](const Levels& L, std::size_t j) { return val(L.fm[j], L.fe[j]); };
    auto S = [&](const Levels& L, std::size_t j) { return L.sm[j] == 0.0 ? 0.0 : val(L.sm[j], L.se[j]); };
    const double f_hi = std::min(F(P, u), F(Q, v));
    const double f_lo = std::max(u > 0 ? F(P, u - 1) : 0.0, v > 0 ? F(Q, v - 1) : 0.0);
    const double s_hi = std::min(u > 0 ? S(P, u - 1) : 1.0, v > 0 ? S(Q, v - 1) : 1.0);
    const double s_lo = std::max(S(P, u), S(Q, v));
    const double ub_f = f_hi * (1.0 + e) - f_lo * (1.0 - e) + tiny;
    const double ub_s = s_hi * (1.0 + e) - s_lo * (1.0 - e) + tiny;
    return std::max(std::min({ub_f, ub_s, 1.0}), std::numeric_limits<double>::denorm_min());
  }
};

}  // namespace

std::vector<std::uint8_t> w_inf_all_pairs(const MarkovChainSpec& spec, unsigned threads, double* out,
                                          const SumLawsOptions& options) {
  using transport::LevelCmp;
  const std::size_t k = spec.k, T = spec.T, n_pairs = k * (k - 1) / 2, n_theta = spec.n_theta;
  const Geometry g = geometry(spec);
  const double base = static_cast<double>(T) * static_cast<double>(spec.values[0] - static_cast<std::int64_t>(g.dv[0]));
  SumLawsOptions opt = options;
  opt.concurrent_positions = true;  // every (theta, i) writes its own entries of out

  // Exact images of a prior's laws, built when one of its positions first needs a tie
  // certified and released after its last position.
  std::uint64_t primes[kModPrimes];
  {
    std::random_device rd;
    std::mt19937_64 rng((static_cast<std::uint64_t>(rd()) << 32) ^ rd());
    for (int q = 0; q < kModPrimes;) {
      primes[q] = modp::random_prime(rng);
      if (std::find(primes, primes + q, primes[q]) == primes + q) ++q;  // distinct primes
    }
  }
  std::size_t per_prior = T;
  if (options.positions != nullptr) {
    per_prior = 0;
    for (std::size_t i = 0; i < T; ++i) per_prior += options.positions[i] != 0;
  }
  std::vector<std::shared_ptr<const ModChain>> chains(n_theta);
  std::unique_ptr<std::mutex[]> chain_mu(new std::mutex[n_theta]);
  std::unique_ptr<std::atomic<std::size_t>[]> remaining(new std::atomic<std::size_t>[n_theta]);
  for (std::size_t th = 0; th < n_theta; ++th) remaining[th] = per_prior;
  auto chain_of = [&](std::size_t th) {
    std::lock_guard<std::mutex> lk(chain_mu[th]);
    if (!chains[th])
      chains[th] = std::make_shared<const ModChain>(k, T, g.span, g.dv.data(), spec.prior(th), spec.period,
                                                    spec.init + th * k, primes, options.control);
    return chains[th];
  };

  // Recomputed segments of the exact images (one per worker in use; a worker takes the one
  // holding its position's segment when there is one).
  std::mutex seg_mu;
  std::vector<std::unique_ptr<ModSegment>> segs;
  auto take_segment = [&](const ModChain& mc, std::size_t i) {
    std::lock_guard<std::mutex> lk(seg_mu);
    if (segs.empty()) return std::make_unique<ModSegment>();
    std::size_t pick = segs.size() - 1;
    for (std::size_t q = 0; q < segs.size(); ++q)
      if (segs[q]->holds(mc, i)) pick = q;
    auto s = std::move(segs[pick]);
    segs.erase(segs.begin() + static_cast<std::ptrdiff_t>(pick));
    return s;
  };
  auto give_segment = [&](std::unique_ptr<ModSegment> s) {
    std::lock_guard<std::mutex> lk(seg_mu);
    segs.push_back(std::move(s));
  };

  auto used = sum_laws(spec, threads, [&](std::size_t th, std::size_t i, const std::vector<Law>& laws) {
    double* o = out + (th * T + i) * n_pairs;
    std::vector<Levels> L(k);
    for (std::size_t a = 0; a < k; ++a)
      if (laws[a].n != 0) make_levels(laws[a], base, T, k, g.R, L[a]);
    std::shared_ptr<const ModChain> mc;
    std::unique_ptr<ModSegment> seg;
    struct Return {  // the segment goes back to the pool however emit ends (Cancelled included)
      std::unique_ptr<ModSegment>& s;
      decltype(give_segment)& give;
      ~Return() {
        if (s) give(std::move(s));
      }
    } ret{seg, give_segment};
    std::vector<std::vector<std::uint64_t>> cum(kModPrimes * k);
    auto cum_of = [&](std::size_t a) {
      if (!mc) mc = chain_of(th);
      if (!seg) seg = take_segment(*mc, i);
      if (cum[kModPrimes * a].empty()) seg->cumulative(*mc, i, a, &cum[kModPrimes * a]);
      return &cum[kModPrimes * a];
    };
    for (std::size_t a = 0; a < k; ++a)
      for (std::size_t b = a + 1; b < k; ++b, ++o) {
        if (laws[a].n == 0 || laws[b].n == 0) {
          *o = -1.0;
          continue;
        }
        const Levels &P = L[a], &Q = L[b];
        PairCmp cmp(P, Q);
        const double upper = transport::w_inf_ranges(P.x.data(), P.x.size(), Q.x.data(), Q.x.size(), cmp);
        if (!cmp.close) {  // every comparison was decided by the float levels
          *o = upper;
          continue;
        }
        cmp.mode = Mode::kLower;
        if (transport::w_inf_ranges(P.x.data(), P.x.size(), Q.x.data(), Q.x.size(), cmp) == upper) {
          *o = upper;
          continue;
        }
        cmp.mode = Mode::kCertified;
        cmp.ca = cum_of(a);
        cmp.cb = cum_of(b);
        cmp.mc = mc.get();
        *o = transport::w_inf_ranges(P.x.data(), P.x.size(), Q.x.data(), Q.x.size(), cmp);
      }
    if (--remaining[th] == 0) {
      mc.reset();
      std::lock_guard<std::mutex> lk(chain_mu[th]);
      chains[th].reset();
    }
  }, opt);
  return used;
}

// ------------------------------------------------------------------ LevelCertifier
struct LevelCertifier::Impl {
  const MarkovChainSpec& spec;
  Geometry g;
  double base;
  const JobControl* control;
  std::uint64_t primes[kModPrimes];
  std::vector<std::shared_ptr<const ModChain>> chains;
  std::unique_ptr<std::mutex[]> chain_mu;
  std::unique_ptr<std::atomic<std::size_t>[]> remaining;

  Impl(const MarkovChainSpec& s, std::size_t per_prior, const JobControl* ctl)
      : spec(s), g(geometry(s)), control(ctl), chains(s.n_theta), chain_mu(new std::mutex[s.n_theta]),
        remaining(new std::atomic<std::size_t>[s.n_theta]) {
    base = static_cast<double>(g.T) * static_cast<double>(s.values[0] - static_cast<std::int64_t>(g.dv[0]));
    std::random_device rd;
    std::mt19937_64 rng((static_cast<std::uint64_t>(rd()) << 32) ^ rd());
    for (int q = 0; q < kModPrimes;) {
      primes[q] = modp::random_prime(rng);
      if (std::find(primes, primes + q, primes[q]) == primes + q) ++q;  // distinct primes
    }
    for (std::size_t th = 0; th < s.n_theta; ++th) remaining[th] = per_prior;
  }
  std::shared_ptr<const ModChain> chain_of(std::size_t th) {
    std::lock_guard<std::mutex> lk(chain_mu[th]);
    if (!chains[th])
      chains[th] = std::make_shared<const ModChain>(g.k, g.T, g.span, g.dv.data(), spec.prior(th), spec.period,
                                                    spec.init + th * g.k, primes, control);
    return chains[th];
  }
};

struct LevelCertifier::Position::Impl {
  LevelCertifier::Impl* owner;
  std::size_t th, i;
  std::vector<Levels> L;
  std::shared_ptr<const ModChain> mc;
  std::vector<std::vector<std::uint64_t>> cum;
  // the position's segment of the exact images, recomputed from the chain's checkpoints when a
  // pair first needs certifying (rare: only for an entry the float plan lacks)
  std::unique_ptr<ModSegment> seg;
  const std::vector<std::uint64_t>* cum_of(std::size_t a) {
    if (!mc) mc = owner->chain_of(th);
    if (cum[kModPrimes * a].empty()) {
      if (!seg) seg = std::make_unique<ModSegment>();
      seg->cumulative(*mc, i, a, &cum[kModPrimes * a]);
    }
    return &cum[kModPrimes * a];
  }
};

LevelCertifier::LevelCertifier(const MarkovChainSpec& spec, std::size_t positions_per_prior,
                               const JobControl* control)
    : impl_(new Impl(spec, positions_per_prior, control)) {}
LevelCertifier::~LevelCertifier() = default;
LevelCertifier::Position::Position(std::unique_ptr<Impl> p) : impl_(std::move(p)) {}
LevelCertifier::Position::Position(Position&&) noexcept = default;
LevelCertifier::Position::~Position() = default;

LevelCertifier::Position LevelCertifier::at(std::size_t th, std::size_t i, const std::vector<Law>& laws) {
  std::unique_ptr<Position::Impl> p(new Position::Impl{impl_.get(), th, i, {}, nullptr, {}, nullptr});
  const std::size_t k = impl_->g.k;
  p->L.resize(k);
  p->cum.resize(kModPrimes * k);
  for (std::size_t a = 0; a < k; ++a)
    if (laws[a].n != 0) make_levels(laws[a], impl_->base, impl_->g.T, k, impl_->g.R, p->L[a]);
  return Position(std::move(p));
}

void LevelCertifier::done(std::size_t th) {
  if (--impl_->remaining[th] == 0) {
    std::lock_guard<std::mutex> lk(impl_->chain_mu[th]);
    impl_->chains[th].reset();
  }
}

void LevelCertifier::Position::entries(std::size_t a, std::size_t b, bool certify, std::vector<CouplingEntry>& out) {
  out.clear();
  const Levels &P = impl_->L[a], &Q = impl_->L[b];
  if (P.x.empty() || Q.x.empty()) return;
  PairCmp cmp(P, Q);
  if (certify) {
    cmp.mode = Mode::kCertified;
    cmp.ca = impl_->cum_of(a);
    cmp.cb = impl_->cum_of(b);
    cmp.mc = impl_->mc.get();
  }
  transport::coupled_ranges(P.x.size(), Q.x.size(), cmp, [&](std::size_t u, std::size_t lo, std::size_t hi) {
    for (std::size_t v = lo; v <= hi; ++v) out.push_back(CouplingEntry{P.x[u], Q.x[v], cmp.overlap_ub(u, v)});
  });
}

}  // namespace puffer::models
