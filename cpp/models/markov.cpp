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
#include "models/markov_internal.hpp"
#include "models/markov_modp.hpp"
#include "transport/w_inf_ranges.hpp"

namespace puffer::models {

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
bool law_from(const Geometry& g, const double* fm, const std::int32_t* fe, std::size_t nf, const double* bm,
              const std::int32_t* be, std::size_t nb, Scratch& S, std::size_t a, const std::vector<double>& grid, Law& law) {
  const std::size_t RJ = g.R + 8;
  double* Jrow = S.J.data() + a * RJ;
  std::int32_t* Erow = S.JE.data() + a * RJ;
  const Range rf = reachable_range(fm, nf);
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
                   const PositionFn& emit, JobControl* ctl, const std::uint8_t* mask, bool advance_skipped) {
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
      if (advance_skipped) advance(ctl);
      continue;
    }
    if (S.seg.j != i / ck.C) load_segment(g, C, ck, S.seg, i / ck.C, S.acc);
    for (std::size_t a = 0; a < k; ++a) {
      Law& law = S.laws[a];
      law = Law{};
      law.secret_prob = S.marg[a];
      used_ext |= law_from(g, S.fm[q].data() + a * g.R, S.fe[q].data() + a * g.R, g.lf(i), S.seg.bm(g, i, a), S.seg.be(g, i, a), g.lb(i),
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
  double direct;
  if (n_theta < hw && T > 1)  // sum_laws: one prior at a time, its positions split between the threads
    direct = per_prior + static_cast<double>(std::min<std::size_t>(hw, T)) * per_worker;
  else
    direct = static_cast<double>(std::min<std::size_t>(hw, n_theta)) * (per_prior + per_worker);
  // The skipping of w_inf_all_pairs (markov_skip.hpp) runs first and frees its buffers before the
  // direct computation of the positions it leaves: per prior in flight, its two streams (the
  // end slices of the largest window, m <= T / sqrt(2 C), and the slices of at most
  // T / (2 C + 1) + 64 representatives), the window polynomials, and the exact images a
  // certified representative may build.
  const std::size_t C = checkpoint_stride(T);
  const std::size_t m_max = static_cast<std::size_t>(static_cast<double>(T) / std::sqrt(2.0 * static_cast<double>(C)));
  const std::size_t p_max = T / (2 * C + 1) + 64;
  const double windows = 48.0 * static_cast<double>(k * k) * static_cast<double>((m_max + p_max) * span + 1) * 4.0;
  // (the streams of a prior run one after the other when priors run in parallel, side by side
  // when there are fewer priors than threads; the representatives' slices, F_r and B_r, add up
  // to about one row of R per state)
  const double streams = (n_theta < hw ? 2.0 : 1.0) * stream_bytes(k, T, span, m_max, 0) +
                         12.0 * static_cast<double>(k) * static_cast<double>(T * span + 1) * static_cast<double>(p_max);
  const double skip_prior = streams + windows + ModChain::bytes(k, T, span, period) + ModSegment::bytes(k, T, span);
  const double skip = static_cast<double>(std::min<std::size_t>(hw, n_theta)) * skip_prior;
  return std::max(direct, skip);
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
  auto mask_of = [&](std::size_t th) {
    return options.prior_positions != nullptr ? options.prior_positions + th * T : options.positions;
  };

  if (options.arithmetic == Arithmetic::kLogReference) {
    parallel_for(spec.n_theta, threads, [&](std::size_t th) {
      run_log_reference(g, th, spec.prior(th), spec.period, spec.init + th * k, grid, emit, ctl, mask_of(th));
      used[th] = 1;
    });
    return used;
  }

  const unsigned hw = threads == 0 ? std::min(hardware_threads(), kMaxThreads) : threads;
  // one past the last position of prior th to emit (0: none; its passes are not run)
  auto end_of = [&](std::size_t th) {
    const std::uint8_t* m = mask_of(th);
    if (m == nullptr) return T;
    std::size_t e = 0;
    for (std::size_t i = 0; i < T; ++i)
      if (m[i] != 0) e = i + 1;
    if (e == 0 && options.advance_skipped) advance(ctl, T);
    return e;
  };
  if (options.concurrent_positions && spec.n_theta < hw && T > 1) {
    // Few priors: one backward store per prior, positions split into chunks of equal
    // convolution cost; each chunk streams its own forward pass from position 0.
    const std::size_t n_chunks = std::min<std::size_t>(T, 4 * static_cast<std::size_t>(hw));
    Pool<Scratch> scratch;
    for (std::size_t th = 0; th < spec.n_theta; ++th) {
      const std::uint8_t* mask = mask_of(th);
      const std::size_t end = end_of(th);
      if (end == 0) continue;
      std::vector<double> cum(T + 1, 0.0);
      for (std::size_t i = 0; i < T; ++i)
        cum[i + 1] = cum[i] + (mask == nullptr || mask[i] != 0
                                   ? static_cast<double>(g.lf(i)) * static_cast<double>(g.lb(i)) + static_cast<double>(R)
                                   : 0.0);
      std::vector<std::size_t> cut(n_chunks + 1, T);
      cut[0] = 0;
      for (std::size_t c = 1; c < n_chunks; ++c)
        cut[c] = static_cast<std::size_t>(std::lower_bound(cum.begin(), cum.end(), cum[T] * c / n_chunks) - cum.begin());
      for (std::size_t c = 1; c <= n_chunks; ++c) cut[c] = std::max(cut[c], cut[c - 1]);
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
        const std::size_t i1 = std::min(cut[c + 1], end);
        if (cut[c] >= i1) {  // nothing to emit in this chunk
          if (options.advance_skipped && cut[c + 1] > cut[c]) advance(ctl, cut[c + 1] - cut[c]);
          return;
        }
        auto S = scratch.take();
        S->size(g);
        const bool u = run_positions(g, th, P, init, C, B, *S, cut[c], i1, grid, emit, ctl, mask, options.advance_skipped);
        scratch.give(std::move(S));
        if (options.advance_skipped && cut[c + 1] > i1) advance(ctl, cut[c + 1] - i1);
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
    const std::size_t end = end_of(th);
    if (end == 0) return;
    auto w = workers.take();
    const double* P = spec.prior(th);
    const double* init = spec.init + th * k;
    const StepCoefs C = split_matrices(P, k, spec.period);
    w->S.size(g);
    backward_checkpoints(g, C, w->B, w->S.acc, ctl);
    used[th] = run_positions(g, th, P, init, C, w->B, w->S, 0, end, grid, emit, ctl, mask_of(th),
                             options.advance_skipped) ? 1 : 0;
    if (options.advance_skipped && end < T) advance(ctl, T - end);
    workers.give(std::move(w));
  });
  return used;
}

}  // namespace puffer::models

// ------------------------------------------------------------------ streams (skipping)
namespace puffer::models {
namespace {

std::vector<double> sum_grid(const MarkovChainSpec& spec, const Geometry& g) {
  const double base = static_cast<double>(g.T) * static_cast<double>(spec.values[0] - static_cast<std::int64_t>(g.dv[0]));
  std::vector<double> grid(g.R);
  for (std::size_t s = 0; s < g.R; ++s) grid[s] = base + static_cast<double>(s);
  return grid;
}

// P(X_t = x) for t = 0 .. t_end (row t at t k).
std::vector<double> marginals(const MarkovChainSpec& spec, std::size_t th, std::size_t t_end) {
  const std::size_t k = spec.k;
  std::vector<double> m((t_end + 1) * k, 0.0);
  std::copy(spec.init + th * k, spec.init + th * k + k, m.begin());
  for (std::size_t t = 1; t <= t_end; ++t) {
    const double* P = spec.step(th, t - 1);
    for (std::size_t x = 0; x < k; ++x)
      for (std::size_t y = 0; y < k; ++y) m[t * k + y] += m[(t - 1) * k + x] * P[x * k + y];
  }
  return m;
}

// The laws of position i from forward rows fm/fe (row a at a * nf) and backward rows (a * nb).
bool laws_at(const Geometry& g, Scratch& S, const std::vector<double>& grid, const double* marg, const double* fm,
             const std::int32_t* fe, std::size_t nf, const double* bm, const std::int32_t* be, std::size_t nb) {
  bool used = false;
  for (std::size_t a = 0; a < g.k; ++a) {
    Law& law = S.laws[a];
    law = Law{};
    law.secret_prob = marg[a];
    used |= law_from(g, fm + a * nf, fe + a * nf, nf, bm + a * nb, be + a * nb, nb, S, a, grid, law);
  }
  return used;
}

}  // namespace

bool stream_laws(const MarkovChainSpec& spec, std::size_t th, int which, const std::vector<std::size_t>& positions,
                 KeptSlices& keep, const PositionFn& emit, JobControl* ctl) {
  const Geometry g = geometry(spec);
  const std::size_t k = g.k, T = g.T, R = g.R;
  const std::vector<double> grid = sum_grid(spec, g);
  const StepCoefs C = split_matrices(spec.prior(th), k, spec.period);
  Scratch S;
  S.size(g);
  bool used = false;
  if (which == 0) {
    keep.fm.assign(keep.at.size(), {});
    keep.fe.assign(keep.at.size(), {});
    // backward slices of the positions near the right end, from the terminal slice
    const std::size_t t_lo = positions.empty() ? T - 1 : positions.front();
    std::vector<std::size_t> off(T - t_lo + 1, 0);
    for (std::size_t t = t_lo; t < T; ++t) off[t - t_lo + 1] = off[t - t_lo] + k * g.lb(t);
    std::vector<double> bm(off.back(), 0.0);
    std::vector<std::int32_t> be(off.back(), ext::kNoExp);
    if (!positions.empty()) {
      terminal_slice(g, bm.data() + off[T - 1 - t_lo], be.data() + off[T - 1 - t_lo]);
      for (std::size_t t = T - 1; t-- > t_lo;) {
        if ((t & 63) == 0) poll(ctl);
        backward_step(g, C, bm.data() + off[t + 1 - t_lo], be.data() + off[t + 1 - t_lo], bm.data() + off[t - t_lo],
                      be.data() + off[t - t_lo], t, S.acc, S.src);
      }
    }
    const std::size_t last = std::max(positions.empty() ? 0 : positions.back(), keep.at.empty() ? 0 : keep.at.back());
    if (positions.empty() && keep.at.empty()) return false;
    const std::vector<double> marg = marginals(spec, th, last);
    int q = 0;
    forward_init(g, spec.init + th * k, S, q);
    std::size_t pi = 0, ki = 0;
    for (std::size_t i = 0; i <= last; ++i) {
      if (i > 0) {
        forward_step(g, C, S, i - 1, q);
        q = 1 - q;
      }
      if ((i & 63) == 0) poll(ctl);
      if (ki < keep.at.size() && keep.at[ki] == i) {
        const std::size_t nf = g.lf(i);
        keep.fm[ki].resize(k * nf);
        keep.fe[ki].resize(k * nf);
        for (std::size_t a = 0; a < k; ++a) {
          std::copy(S.fm[q].begin() + static_cast<std::ptrdiff_t>(a * R),
                    S.fm[q].begin() + static_cast<std::ptrdiff_t>(a * R + nf), keep.fm[ki].begin() + static_cast<std::ptrdiff_t>(a * nf));
          std::copy(S.fe[q].begin() + static_cast<std::ptrdiff_t>(a * R),
                    S.fe[q].begin() + static_cast<std::ptrdiff_t>(a * R + nf), keep.fe[ki].begin() + static_cast<std::ptrdiff_t>(a * nf));
        }
        ++ki;
      }
      if (pi < positions.size() && positions[pi] == i) {
        poll(ctl);
        // laws_at reads row a of the forward slice at a R (rows of the scratch buffer)
        for (std::size_t a = 0; a < k; ++a) {
          Law& law = S.laws[a];
          law = Law{};
          law.secret_prob = marg[i * k + a];
          used |= law_from(g, S.fm[q].data() + a * R, S.fe[q].data() + a * R, g.lf(i), bm.data() + off[i - t_lo] + a * g.lb(i),
                           be.data() + off[i - t_lo] + a * g.lb(i), g.lb(i), S, a, grid, law);
        }
        emit(th, i, S.laws);
        ++pi;
      }
    }
    return used;
  }
  keep.bm.assign(keep.at.size(), {});
  keep.be.assign(keep.at.size(), {});
  // forward slices of the positions near the left end
  const std::size_t t_hi = positions.empty() ? 0 : positions.back();
  std::vector<std::size_t> off(t_hi + 2, 0);
  for (std::size_t t = 0; t <= t_hi; ++t) off[t + 1] = off[t] + k * g.lf(t);
  std::vector<double> fm(positions.empty() ? 0 : off.back(), 0.0);
  std::vector<std::int32_t> fe(positions.empty() ? 0 : off.back(), ext::kNoExp);
  std::vector<double> marg;
  if (!positions.empty()) {
    int q = 0;
    forward_init(g, spec.init + th * k, S, q);
    for (std::size_t t = 0;; ++t) {
      for (std::size_t a = 0; a < k; ++a) {
        std::copy(S.fm[q].begin() + static_cast<std::ptrdiff_t>(a * R),
                  S.fm[q].begin() + static_cast<std::ptrdiff_t>(a * R + g.lf(t)), fm.begin() + static_cast<std::ptrdiff_t>(off[t] + a * g.lf(t)));
        std::copy(S.fe[q].begin() + static_cast<std::ptrdiff_t>(a * R),
                  S.fe[q].begin() + static_cast<std::ptrdiff_t>(a * R + g.lf(t)), fe.begin() + static_cast<std::ptrdiff_t>(off[t] + a * g.lf(t)));
      }
      if (t == t_hi) break;
      if ((t & 63) == 0) poll(ctl);
      forward_step(g, C, S, t, q);
      q = 1 - q;
    }
    marg = marginals(spec, th, t_hi);
  }
  if (positions.empty() && keep.at.empty()) return false;
  const std::size_t first = std::min(positions.empty() ? T - 1 : positions.front(), keep.at.empty() ? T - 1 : keep.at.front());
  std::vector<double> bm[2] = {std::vector<double>(k * R, 0.0), std::vector<double>(k * R, 0.0)};
  std::vector<std::int32_t> be[2] = {std::vector<std::int32_t>(k * R, ext::kNoExp),
                                     std::vector<std::int32_t>(k * R, ext::kNoExp)};
  terminal_slice(g, bm[0].data(), be[0].data());
  int q = 0;  // bm[q]: slice t
  std::size_t pi = positions.size(), ki = keep.at.size();
  for (std::size_t t = T - 1;; --t) {
    if (t < T - 1) {
      backward_step(g, C, bm[q].data(), be[q].data(), bm[1 - q].data(), be[1 - q].data(), t, S.acc, S.src);
      q = 1 - q;
    }
    if ((t & 63) == 0) poll(ctl);
    const std::size_t nb = g.lb(t);
    if (ki > 0 && keep.at[ki - 1] == t) {
      --ki;
      keep.bm[ki].assign(bm[q].begin(), bm[q].begin() + static_cast<std::ptrdiff_t>(k * nb));
      keep.be[ki].assign(be[q].begin(), be[q].begin() + static_cast<std::ptrdiff_t>(k * nb));
    }
    if (pi > 0 && positions[pi - 1] == t) {
      --pi;
      poll(ctl);
      used |= laws_at(g, S, grid, marg.data() + t * k, fm.data() + off[t], fe.data() + off[t], g.lf(t), bm[q].data(),
                      be[q].data(), nb);
      emit(th, t, S.laws);
    }
    if (t == first) break;
  }
  return used;
}

bool kept_laws(const MarkovChainSpec& spec, std::size_t th, const KeptSlices& keep, std::size_t j, const PositionFn& emit) {
  const Geometry g = geometry(spec);
  const std::size_t r = keep.at[j];
  const std::vector<double> grid = sum_grid(spec, g);
  const std::vector<double> marg = marginals(spec, th, r);
  Scratch S;
  S.size(g);
  const bool used = laws_at(g, S, grid, marg.data() + r * g.k, keep.fm[j].data(), keep.fe[j].data(), g.lf(r),
                            keep.bm[j].data(), keep.be[j].data(), g.lb(r));
  emit(th, r, S.laws);
  return used;
}

double stream_bytes(std::size_t k, std::size_t T, std::size_t span, std::size_t m, std::size_t n_kept) {
  const double K = static_cast<double>(k), R = static_cast<double>(T * span + 1) + 80.0;
  const double ends = 12.0 * K * (static_cast<double>(m) + 1.0) * (static_cast<double>(m * span) + 2.0);
  // scratch (forward slices 24 k R, law rows 12 k R, convolution buffers 80 R), the backward
  // stream's two slices (24 k R), the end slices, the kept slices (12 k R per position)
  return (60.0 * K + 96.0) * R + ends + 12.0 * K * R * static_cast<double>(n_kept);
}

}  // namespace puffer::models
