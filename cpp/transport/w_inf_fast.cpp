// Fast 1-D W_inf on presorted float arrays (the hot path of calibration, w_inf_sorted and the
// batches).
//
// It returns exactly the value of the careful staircase walk (coupling_1d.cpp; the level rule
// of transport.hpp on the canonical block levels of common_1d.hpp) without walking:
//   1. one pass over the masses per law (block totals, bases, total, checks: setup_law);
//   2. a monotone int64 key per atom (bits of F while F <= 1/2, 2 bits(1/2) - bits(S) above),
//      so key order is the order the careful walk compares. The canonical levels are prefix
//      sums, i.e. chains of dependent additions; the chains of all blocks of both laws are
//      run up to four at a time, interleaved, so their latencies overlap. Each atom costs one
//      chain step, except the atoms above 1/2 in the (usually single) block holding level 1/2;
//   3. ranks instead of a merge: P atom i overlaps the Q atoms lo(i) .. hi(i) with
//      lo(i) = #{Q keys <= key_{i-1}} and hi(i) = #{Q keys < key_i}; since y is sorted, the
//      largest |x_i - y_j| over that range is max(x_i - y_lo, y_hi - x_i). One pass over P
//      advances the Q rank through windows of four keys; sentinels around the Q keys remove
//      every bounds test from that loop. Sortedness of x and y is checked outside it (SSE2).
// With exact comparisons the staircase of the careful walk is exactly these ranges. Whenever a
// key lies within the (loose) band D of a key of the other law or of level 1/2 (checked on the
// blocks that can hold 1/2, the others being >= 1e-12 away), an atom's range is empty, or a
// law has a zero mass, the whole problem goes to the careful walk, so near-tie semantics live
// in one place only. Two exactly tied Q keys put a key at distance 0 <= D: careful walk too.
#include <algorithm>
#include <array>
#include <utility>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/errors.hpp"
#include "common/parallel.hpp"
#include "transport/common_1d.hpp"
#include "transport/transport.hpp"

namespace puffer::transport {
namespace {

constexpr double kU = 0x1p-53;
using detail::kBlock;
using detail::kLevelErrU;


enum class Status { ok, fallback, unsorted };

// a[0] <= a[1] <= ... <= a[n-1], false on NaN. Two lanes at a time with SSE2 (x86-64
// baseline): ~1 instruction per atom instead of ~3 inside the rank loop.
inline bool is_sorted_nan_free(const double* a, std::size_t n) {
  std::size_t i = 1;
#if defined(__SSE2__)
  __m128d ok = _mm_castsi128_pd(_mm_set1_epi32(-1));
  for (; i + 2 <= n; i += 2)  // a[i], a[i+1] >= a[i-1], a[i]; ordered compare: false on NaN
    ok = _mm_and_pd(ok, _mm_cmpge_pd(_mm_loadu_pd(a + i), _mm_loadu_pd(a + i - 1)));
  bool sorted = _mm_movemask_pd(ok) == 3;
#else
  bool sorted = true;
#endif
  for (; i < n; ++i) sorted &= a[i] >= a[i - 1];
  return sorted;
}

inline std::int64_t bits(double v) {
  std::int64_t k;
  std::memcpy(&k, &v, sizeof k);
  return k;
}
inline double from_bits(std::int64_t k) {
  double v;
  std::memcpy(&v, &k, sizeof v);
  return v;
}
const std::int64_t kHalf = bits(0.5);
const std::int64_t kTop = 2 * bits(0.5);  // key of S = 0 (the top atom)

// One prefix-sum chain of the canonical levels (common_1d.hpp): a run of atoms of one block,
// walked forward (F keys: acc = p_{b0} + ... + p_i, key = bits(fl(fl(B + acc) * inv))) or
// backward from the block end (S keys: acc = p_{i+1} + ... + p_{b_end}, key = kTop -
// bits(fl(fl(B + acc) * inv))). The additions are the canonical ones in the canonical order, so
// the keys are bitwise those of levels() in coupling_1d.cpp.
struct Chain {
  const double* p;
  std::int64_t* k;
  std::ptrdiff_t idx;  // next atom
  std::size_t len;     // atoms left
  double acc, B, inv;
  bool fwd;            // F chain (forward) or S chain (backward)
};

// Advance L independent chains by `steps` atoms each; bit l of Fwd says whether lane l is an F
// (forward) or an S (backward) chain. The chains are interleaved so the latency of one chain's
// additions is hidden by the others (a chain is a sequence of dependent adds, ~4 cycles each;
// L of them run in about the time of one).
template <int L, unsigned Fwd>
void step_chains(Chain* const* c, std::size_t steps) {
  // one offset t for all lanes (lane l touches atom idx_l + t or idx_l - t): two pointers per
  // lane and no per-lane index, so four lanes fit in the registers
  const double* p[L];
  std::int64_t* k[L];
  double acc[L], B[L], inv[L];
  for (int l = 0; l < L; ++l) p[l] = c[l]->p + c[l]->idx, k[l] = c[l]->k + c[l]->idx, acc[l] = c[l]->acc, B[l] = c[l]->B, inv[l] = c[l]->inv;
  const std::ptrdiff_t T = static_cast<std::ptrdiff_t>(steps);
  for (std::ptrdiff_t t = 0; t < T; ++t) {
    for (int l = 0; l < L; ++l) {
      if ((Fwd >> l) & 1u) {
        acc[l] += p[l][t];
        k[l][t] = bits((B[l] + acc[l]) * inv[l]);
      } else {
        k[l][-t] = kTop - bits((B[l] + acc[l]) * inv[l]);
        acc[l] += p[l][-t];
      }
    }
  }
  for (int l = 0; l < L; ++l) {
    c[l]->acc = acc[l], c[l]->len -= steps;
    c[l]->idx += ((Fwd >> l) & 1u) ? T : -T;
  }
}

using StepFn = void (*)(Chain* const*, std::size_t);
template <int L, std::size_t... M>
constexpr std::array<StepFn, sizeof...(M)> step_table(std::index_sequence<M...>) {
  return {{&step_chains<L, static_cast<unsigned>(M)>...}};
}
constexpr auto kStep1 = step_table<1>(std::make_index_sequence<2>{});
constexpr auto kStep2 = step_table<2>(std::make_index_sequence<4>{});
constexpr auto kStep3 = step_table<3>(std::make_index_sequence<8>{});
constexpr auto kStep4 = step_table<4>(std::make_index_sequence<16>{});

// Run a queue of chains (either direction), up to four at a time: the active lanes advance
// together by the shortest remaining length, finished lanes are refilled from the queue.
void run_chains(Chain* q, std::size_t nq) {
  Chain* lane[4];  // the chains stay in the queue; lanes point at them
  std::size_t nl = 0, next = 0;
  for (;;) {
    while (nl < 4 && next < nq) {
      if (q[next].len) lane[nl++] = &q[next];
      ++next;
    }
    if (nl == 0) return;
    std::size_t s = lane[0]->len;
    unsigned mask = 0;
    for (std::size_t l = 0; l < nl; ++l) s = std::min(s, lane[l]->len), mask |= unsigned(lane[l]->fwd) << l;
    switch (nl) {
      case 4: kStep4[mask](lane, s); break;
      case 3: kStep3[mask](lane, s); break;
      case 2: kStep2[mask](lane, s); break;
      default: kStep1[mask](lane, s); break;
    }
    std::size_t w = 0;
    for (std::size_t l = 0; l < nl; ++l)
      if (lane[l]->len) lane[w++] = lane[l];
    nl = w;
  }
}

// Per-law inputs of the key pass.
struct LawIn {
  const double* p;
  std::size_t n;
  double T;
  const std::vector<double>* L;
  const std::vector<double>* R;
  std::int64_t* k;
};

struct ChainScratch {
  std::vector<Chain> fwd, bwd;
  std::vector<std::size_t> mixed;  // (law, block) of blocks holding level 1/2, as law * 2^32 + b
};

// Monotone int64 keys of both laws: bits(F_i) while F_i <= 1/2, else kTop - bits(S_i), with F,
// S the canonical levels (identical arithmetic to levels() in coupling_1d.cpp), so key order is
// the order the careful walk uses. Phase 1 walks every block below level 1/2 and every block
// holding it forward (F), and every block above it backward (S); phase 2 walks the upper part
// of the blocks holding level 1/2 (found from the phase-1 keys) backward (S). The chains of
// both laws and both directions are interleaved. Returns false if a key lies within D (key
// units) of level 1/2, where the F and S representations meet (the careful walk then decides).
bool keys_both(LawIn* law, std::int64_t D, ChainScratch& S) {
  // at most one chain per block plus one per mixed block; sized once per thread (no
  // per-call allocation once warm)
  const std::size_t cap = law[0].L->size() + law[1].L->size();
  if (S.fwd.size() < cap) S.fwd.resize(cap), S.bwd.resize(2 * cap), S.mixed.resize(cap);
  std::size_t nf = 0, nbk = 0, nm = 0;
  for (std::size_t w = 0; w < 2; ++w) {
    LawIn& a = law[w];
    const std::vector<double>& L = *a.L;
    const std::vector<double>& R = *a.R;
    const std::size_t nb = L.size();
    const double inv = 1.0 / a.T;
    for (std::size_t b = 0; b < nb; ++b) {
      const std::size_t s0 = b * kBlock, e = std::min(a.n, s0 + kBlock);
      // 0: every F in the block <= 1/2; 2: every F > 1/2; 1: the block may hold level 1/2
      // (margins of 1e-12 dwarf the rounding of the block bases, ~1e-14).
      const double lo_end = (b + 1 < nb ? L[b + 1] : a.T) * inv;
      if (lo_end < 0.5 * (1 - 1e-12)) {
        S.fwd[nf++] = {a.p, a.k, static_cast<std::ptrdiff_t>(s0), e - s0, 0.0, L[b], inv, true};
      } else if (L[b] * inv > 0.5 * (1 + 1e-12)) {
        S.fwd[nf++] = {a.p, a.k, static_cast<std::ptrdiff_t>(e) - 1, e - s0, 0.0, R[b], inv, false};
      } else {
        S.fwd[nf++] = {a.p, a.k, static_cast<std::ptrdiff_t>(s0), e - s0, 0.0, L[b], inv, true};
        S.mixed[nm++] = (w << 32) | b;
      }
    }
  }
  run_chains(S.fwd.data(), nf);
  for (std::size_t t = 0; t < nm; ++t) {
    std::size_t& mb = S.mixed[t];
    LawIn& a = law[mb >> 32];
    const std::size_t b = mb & 0xffffffffu;
    const std::size_t s0 = b * kBlock, e = std::min(a.n, s0 + kBlock);
    // F is non-decreasing inside a block (a running sum of masses >= 0, rounded monotonically),
    // so the atoms with F > 1/2 are a suffix of it.
    std::size_t s = s0, cnt = e - s0;  // s = first key > kHalf, by binary search
    while (cnt > 0) {
      const std::size_t h = cnt / 2;
      const bool below = a.k[s + h] <= kHalf;
      s = below ? s + h + 1 : s;
      cnt = below ? cnt - h - 1 : h;
    }
    // The F keys s0..s-1 of this block are non-decreasing and <= kHalf, so the one nearest
    // level 1/2 is k[s-1]. Blocks of mode 0 / 2 are >= 1e-12 (relative) away from it.
    if (s > s0 && kHalf - a.k[s - 1] <= D) return false;
    if (s < e) {
      S.bwd[nbk++] = {a.p, a.k, static_cast<std::ptrdiff_t>(e) - 1, e - s, 0.0, (*a.R)[b], 1.0 / a.T, false};
      mb = (mb & ~std::size_t(0xffffffffu)) | s;  // now: where this block's S keys start
    } else {
      mb = ~std::size_t(0);
    }
  }
  run_chains(S.bwd.data(), nbk);
  // The S keys s..e-1 of a mixed block are non-decreasing (S is non-increasing), so the one
  // nearest level 1/2 is k[s].
  for (std::size_t t = 0; t < nm; ++t) {
    const std::size_t mb = S.mixed[t];
    if (mb == ~std::size_t(0)) continue;
    const std::int64_t k = law[mb >> 32].k[mb & 0xffffffffu];
    if (std::llabs(k - kHalf) <= D) return false;
  }
  return true;
}

// Reusable buffers of the fast path, leased once per call (or once per chunk of a batch) from a
// process-wide free list. Not thread_local: TLS destructors run at thread exit, after the
// thread's last synchronisation, and freeing buffers there raced (ThreadSanitizer) with the
// allocator state other threads saw; a leased buffer is handed over under a mutex, so every
// use is ordered, and the free list is never destroyed (no teardown at exit at all).
struct Scratch {
  std::vector<double> LP, RP, LQ, RQ;  // block bases of the two laws
  std::vector<std::int64_t> kp, kq;    // level keys
  ChainScratch chains;
};

class ScratchLease {
 public:
  ScratchLease() {
    std::lock_guard<std::mutex> lk(mu());
    auto& fl = free_list();
    if (!fl.empty()) {
      s_ = fl.back();
      fl.pop_back();
    }
    if (s_ == nullptr) s_ = new Scratch();  // returned to the free list, never freed
  }
  ~ScratchLease() {
    std::lock_guard<std::mutex> lk(mu());
    free_list().push_back(s_);
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  Scratch& get() { return *s_; }

 private:
  static std::mutex& mu() {
    static std::mutex* m = new std::mutex();
    return *m;
  }
  static std::vector<Scratch*>& free_list() {
    static std::vector<Scratch*>* v = new std::vector<Scratch*>();
    return *v;
  }
  Scratch* s_ = nullptr;
};

// W_inf by ranks instead of a walk. The staircase pairs P atom i with the Q atoms lo(i) ..
// hi(i), lo(i) = #{Q keys <= key_{i-1}} (0 for i = 0), hi(i) = #{Q keys < key_i}; as y is
// sorted, the largest |x_i - y_j| of that range is at an end. Any key within the loose tie band of a key of the other law, or of
// level 1/2, or an empty range (collapsed atom) returns fallback.
Status ranked(const double* x, const double* p, std::size_t n, const double* y, const double* q, std::size_t m,
              double TP, double TQ, const std::vector<double>& LP, const std::vector<double>& RP,
              const std::vector<double>& LQ, const std::vector<double>& RQ, double rtol, double& w_out,
              Scratch& S) {
  constexpr std::size_t kPad = 8;
  if (S.kp.size() < n) S.kp.resize(n);
  if (S.kq.size() < m + kPad + 1) S.kq.resize(m + kPad + 1);
  std::int64_t* kp = S.kp.data();
  std::int64_t* kq = S.kq.data() + 1;  // kq[-1] is a sentinel
  // Loose band in key units: a relative gap r spans at most r 2^54 ulps (normal numbers).
  const double loose = rtol + 2.0 * kLevelErrU * kU;
  const std::int64_t D = static_cast<std::int64_t>(loose * 0x1p54) + 64;
  // Sentinels: below every key (keys are >= 0) by more than D, and above every key; the
  // near-tie and window tests below then need no bounds checks.
  kq[-1] = -(D + 1);
  for (std::size_t t = 0; t < kPad; ++t) kq[m + t] = std::numeric_limits<std::int64_t>::max();
  LawIn laws[2] = {{p, n, TP, &LP, &RP, kp}, {q, m, TQ, &LQ, &RQ, kq}};
  if (!keys_both(laws, D, S.chains)) return Status::fallback;
  const bool sorted = is_sorted_nan_free(x, n) && is_sorted_nan_free(y, m);
  double w = 0.0;
  // Failures are accumulated as minima (a compare and a conditional move each, no flag
  // arithmetic): gmin = smallest gap between a P key and its nearest Q keys, rmin = smallest
  // hi - lo. Keys are in [0, kTop], sentinels -(D+1) and INT64_MAX: no difference overflows.
  std::int64_t gmin = std::numeric_limits<std::int64_t>::max(), rmin = 0;
  std::int64_t prev_u = 0, j = 0;
  const std::int64_t M1 = static_cast<std::int64_t>(m) - 1;
  for (std::size_t i = 0; i < n; ++i) {
    // P keys need not be checked for order: a key below its predecessor leaves l unchanged
    // (the walk would also pair it with Q atom l), and if a Q key lies between or at the two,
    // the near-tie or the lo > hi test below fires.
    const std::int64_t k = kp[i];
    // l = #{Q keys < k}: advance j through a window of four keys at a time (kq is sorted and
    // padded with INT64_MAX, so the keys below k form a prefix of the window); kq[t] < k iff
    // the sign bit of kq[t] - k is set
    while (true) {
      const std::uint64_t c = (static_cast<std::uint64_t>(kq[j] - k) >> 63) +
                              (static_cast<std::uint64_t>(kq[j + 1] - k) >> 63) +
                              (static_cast<std::uint64_t>(kq[j + 2] - k) >> 63) +
                              (static_cast<std::uint64_t>(kq[j + 3] - k) >> 63);
      j += static_cast<std::int64_t>(c);
      if (c < 4) break;
    }
    const std::int64_t l = j;
    // one Q key equal to k (exact tie) is followed here; a second one is within D of k and
    // fails the near-tie test below
    const std::int64_t u = l + (kq[l] == k);
    // nearest Q keys below and above k must be farther than D (near ties -> careful walk)
    const std::int64_t g1 = k - kq[l - 1], g2 = kq[u] - k;
    const std::int64_t g = g1 < g2 ? g1 : g2;
    gmin = g < gmin ? g : gmin;
    const std::int64_t lo = prev_u, hi = l < M1 ? l : M1;
    const std::int64_t r = hi - lo;
    rmin = r < rmin ? r : rmin;
    const double xi = x[i];
    // y is sorted, so the largest |x_i - y_j| over j in [lo, hi] is max(x_i - y_lo, y_hi - x_i)
    const double d1 = xi - y[lo < hi ? lo : hi], d2 = y[hi] - xi;
    const double d = d1 > d2 ? d1 : d2;
    w = d > w ? d : w;
    prev_u = u;
  }
  if (gmin <= D || rmin < 0) return Status::fallback;
  if (!sorted) return Status::unsorted;
  w_out = w;
  return Status::ok;
}

// The fast path with explicit scratch (see w_inf_1d).
double w_inf_1d_with(Scratch& S, const double* x, const double* p, std::size_t n, const double* y,
                     const double* q, std::size_t m, double rtol, double sum_tol) {
  if (n == 0) throw InvalidArgument("P.atoms", "an empty law", "at least one atom");
  if (m == 0) throw InvalidArgument("Q.atoms", "an empty law", "at least one atom");
  if (!std::isfinite(x[0]) || !std::isfinite(x[n - 1])) detail::check_atoms(x, n, "P.atoms");
  if (!std::isfinite(y[0]) || !std::isfinite(y[m - 1])) detail::check_atoms(y, m, "Q.atoms");
  const detail::LawSetup sp = detail::setup_law(p, n, sum_tol, "P.probs", S.LP, S.RP);
  const detail::LawSetup sq = detail::setup_law(q, m, sum_tol, "Q.probs", S.LQ, S.RQ);
  if (sp.min_mass > 0.0 && sq.min_mass > 0.0) {
    double w = 0.0;
    const Status st = ranked(x, p, n, y, q, m, sp.T, sq.T, S.LP, S.RP, S.LQ, S.RQ, rtol, w, S);
    if (st == Status::ok) return w;
    if (st == Status::unsorted) {
      detail::check_atoms(x, n, "P.atoms");
      detail::check_atoms(y, m, "Q.atoms");
    }
  }
  return detail::w_inf_1d_careful(x, p, n, y, q, m, rtol, sum_tol);
}

}  // namespace

double w_inf_1d(const double* x, const double* p, std::size_t n, const double* y, const double* q,
                std::size_t m, double rtol, double sum_tol) {
  detail::check_rtol(rtol);
  ScratchLease lease;
  return w_inf_1d_with(lease.get(), x, p, n, y, q, m, rtol, sum_tol);
}

void w_inf_1d_batch(const double* x, const double* p, const std::int64_t* offp, std::size_t n_total_p,
                    const double* y, const double* q, const std::int64_t* offq, std::size_t n_total_q,
                    std::size_t K, double* out, unsigned threads, double rtol, double sum_tol) {
  detail::check_rtol(rtol);
  auto check_off = [](const std::int64_t* off, std::size_t K, std::size_t total, const char* name) {
    if (off[0] != 0) throw InvalidArgument(name, "offsets[0] = " + to_str(off[0]), "offsets starting at 0");
    for (std::size_t k = 0; k < K; ++k)
      if (!(off[k + 1] > off[k]))
        throw InvalidArgument(name, "offsets not strictly increasing at " + std::to_string(k),
                              "strictly increasing offsets (every law non-empty)");
    if (static_cast<std::size_t>(off[K]) != total)
      throw InvalidArgument(name, "offsets[-1] = " + to_str(off[K]),
                            "the last offset equal to the number of atoms (" + std::to_string(total) + ")");
  };
  check_off(offp, K, n_total_p, "offsets_p");
  check_off(offq, K, n_total_q, "offsets_q");
  // Chunks of pairs, not single pairs: a task must outweigh the pool's wake-up (~40 us), and the
  // thread's scratch is fetched once per chunk.
  const std::size_t chunk = 64;
  const std::size_t n_tasks = (K + chunk - 1) / chunk;
  parallel_for(n_tasks, threads, [&](std::size_t t) {
    ScratchLease lease;
    Scratch& S = lease.get();
    const std::size_t lo = t * chunk, hi = std::min(K, lo + chunk);
    for (std::size_t k = lo; k < hi; ++k) {
      try {
        out[k] = w_inf_1d_with(S, x + offp[k], p + offp[k], static_cast<std::size_t>(offp[k + 1] - offp[k]),
                               y + offq[k], q + offq[k], static_cast<std::size_t>(offq[k + 1] - offq[k]), rtol,
                               sum_tol);
      } catch (const InvalidArgument& e) {
        throw InvalidArgument(e.param() + "[law " + std::to_string(k) + "]", e.value(), e.expected());
      }
    }
  });
}

}  // namespace puffer::transport
