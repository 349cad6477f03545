#include "models/markov_modp.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "common/modp.hpp"

namespace puffer::models {

using modp::u128;
using modp::u64;

std::size_t checkpoint_stride(std::size_t T) {
  // memory ~ T^2 / (2 C) (checkpoints) + C T (one segment per worker): least near sqrt(T / 2)
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(std::sqrt(static_cast<double>(T) / 2.0))));
}

namespace {
// sum over the checkpoints j C (j >= j0) of the slice length `len(t)`
template <class L>
double ck_sum(std::size_t T, std::size_t C, std::size_t j0, L len) {
  double s = 0.0;
  for (std::size_t t = j0 * C; t < T; t += C) s += static_cast<double>(len(t));
  return s;
}
}  // namespace

double ModChain::bytes(std::size_t k, std::size_t T, std::size_t span, std::size_t period) {
  const std::size_t C = checkpoint_stride(T);
  const double f = ck_sum(T, C, 0, [&](std::size_t t) { return (t + 1) * span + 1; });
  const double b = ck_sum(T, C, 1, [&](std::size_t t) { return (T - 1 - t) * span + 1; });
  // + two pass buffers of k lb(0) residues and their 128-bit accumulator (construction only)
  const double R = static_cast<double>(T * span + 1);
  // + the matrices' residues
  return kModPrimes * 8.0 * static_cast<double>(k) * (f + b) + 16.0 * static_cast<double>(k) * R + 16.0 * R +
         kModPrimes * 8.0 * static_cast<double>(period * k * k);
}

double ModSegment::bytes(std::size_t k, std::size_t T, std::size_t span) {
  const std::size_t C = std::min(checkpoint_stride(T), T);
  double s = 0.0;
  for (std::size_t t = 0; t < C; ++t) s += static_cast<double>((t + 1) * span + 1 + (T - 1 - t) * span + 1);
  // + the convolution accumulator and the k cumulative outputs of a position
  const double R = static_cast<double>(T * span + 1);
  return kModPrimes * 8.0 * static_cast<double>(k) * s + 16.0 * R + kModPrimes * 8.0 * static_cast<double>(k) * R;
}

void ModChain::forward_step(int q, std::size_t t, const u64* src, u64* dst) const {
  // f_{t+1}(y, s + dv[y]) = sum_x f_t(x, s) P[x][y]
  const u64 p = p_[q];
  const std::size_t k = k_, ns = lf(t), nd = lf(t + 1);
  const u64* P = Pm(q, t);
  std::vector<u128> acc(ns);
  std::fill(dst, dst + k * nd, u64{0});
  for (std::size_t y = 0; y < k; ++y) {
    std::fill(acc.begin(), acc.end(), u128{0});
    for (std::size_t x = 0; x < k; ++x) {
      const u64 c = P[x * k + y];
      if (c == 0) continue;
      const u64* fx = src + x * ns;
      for (std::size_t s = 0; s < ns; ++s) acc[s] += static_cast<u128>(fx[s]) * c;
    }
    u64* dy = dst + y * nd;
    for (std::size_t s = 0; s < ns; ++s) dy[s + dv_[y]] = static_cast<u64>(acc[s] % p);
  }
}

void ModChain::backward_step(int q, std::size_t t, const u64* src, u64* dst) const {
  // b_t(x, s + dv[y]) = sum_y P[x][y] b_{t+1}(y, s)
  const u64 p = p_[q];
  const std::size_t k = k_, ns = lb(t + 1), nd = lb(t);
  const u64* P = Pm(q, t);
  std::vector<u128> acc(nd);
  for (std::size_t x = 0; x < k; ++x) {
    std::fill(acc.begin(), acc.end(), u128{0});
    for (std::size_t y = 0; y < k; ++y) {
      const u64 c = P[x * k + y];
      if (c == 0) continue;
      const u64* by = src + y * ns;
      u128* ax = acc.data() + dv_[y];
      for (std::size_t s = 0; s < ns; ++s) ax[s] += static_cast<u128>(by[s]) * c;
    }
    u64* dx = dst + x * nd;
    for (std::size_t s = 0; s < nd; ++s) dx[s] = static_cast<u64>(acc[s] % p);
  }
}

// Residues are < 2^50, products < 2^100: every sum below (k <= 64 terms in the passes, at most
// R <= 5e7 < 2^28 in a convolution) fits a 128-bit accumulator unreduced.
ModChain::ModChain(std::size_t k, std::size_t T, std::size_t span, const std::size_t* dv, const double* P,
                   std::size_t period, const double* init, const std::uint64_t primes[kModPrimes], const JobControl* ctl)
    : k_(k), T_(T), span_(span), R_(T * span + 1), C_(checkpoint_stride(T)), period_(period), dv_(dv, dv + k) {
  static std::atomic<std::uint64_t> next_id{1};
  id_ = next_id.fetch_add(1);
  const std::size_t n_ck = (T + C_ - 1) / C_;  // checkpoints j = 0 .. n_ck - 1 at t = j C < T
  fck_off_.assign(n_ck + 1, 0);
  bck_off_.assign(n_ck + 1, 0);
  for (std::size_t j = 0; j < n_ck; ++j) {
    fck_off_[j + 1] = fck_off_[j] + k * lf(j * C_);
    bck_off_[j + 1] = bck_off_[j] + (j == 0 ? 0 : k * lb(j * C_));
  }
  std::vector<u64> cur(k * R_), nxt(k * R_);
  for (int q = 0; q < kModPrimes; ++q) {
    p_[q] = primes[q];
    const modp::Field fld(p_[q]);
    Pm_[q].resize(period * k * k);
    for (std::size_t j = 0; j < period * k * k; ++j) Pm_[q][j] = fld.of(P[j]);
    fck_[q].assign(fck_off_[n_ck], 0);
    bck_[q].assign(bck_off_[n_ck], 0);
    // forward: f_0(x, dv[x]) = init[x]
    std::fill(cur.begin(), cur.begin() + static_cast<std::ptrdiff_t>(k * lf(0)), u64{0});
    for (std::size_t x = 0; x < k; ++x) cur[x * lf(0) + dv[x]] = fld.of(init[x]);
    for (std::size_t t = 0;; ++t) {
      if (t % C_ == 0) std::copy(cur.begin(), cur.begin() + static_cast<std::ptrdiff_t>(k * lf(t)),
                                 fck_[q].begin() + static_cast<std::ptrdiff_t>(fck_off_[t / C_]));
      if (t + 1 >= T || t + 1 >= (n_ck - 1) * C_ + 1) break;  // no checkpoint beyond the last
      if ((t & 15) == 0) poll(ctl);
      forward_step(q, t, cur.data(), nxt.data());
      cur.swap(nxt);
    }
    // backward: b_{T-1}(x, 0) = 1
    std::fill(cur.begin(), cur.begin() + static_cast<std::ptrdiff_t>(k * lb(T - 1)), u64{0});
    for (std::size_t x = 0; x < k; ++x) cur[x * lb(T - 1)] = 1;
    for (std::size_t t = T - 1; t >= C_; --t) {
      if (t % C_ == 0)
        std::copy(cur.begin(), cur.begin() + static_cast<std::ptrdiff_t>(k * lb(t)),
                  bck_[q].begin() + static_cast<std::ptrdiff_t>(bck_off_[t / C_]));
      if (t == C_) break;
      if ((t & 15) == 0) poll(ctl);
      backward_step(q, t - 1, cur.data(), nxt.data());
      cur.swap(nxt);
    }
  }
}

void ModSegment::load(const ModChain& mc, std::size_t j) {
  const std::size_t k = mc.k_, T = mc.T_, C = mc.C_;
  const std::size_t t0 = j * C, t1 = std::min(T, t0 + C);
  foff_.assign(t1 - t0 + 1, 0);
  boff_.assign(t1 - t0 + 1, 0);
  for (std::size_t t = t0; t < t1; ++t) {
    foff_[t - t0 + 1] = foff_[t - t0] + k * mc.lf(t);
    boff_[t - t0 + 1] = boff_[t - t0] + k * mc.lb(t);
  }
  // capacity of the largest segment (j = 0) from the first load on: no reallocation (a
  // reallocation would hold two segments at once and break ModSegment::bytes as an upper bound)
  std::size_t fmax = 0, bmax = 0;
  for (std::size_t t = 0; t < std::min(C, T); ++t) {
    fmax += k * mc.lf(t);
    bmax += k * mc.lb(t);
  }
  for (int q = 0; q < kModPrimes; ++q) {
    f_[q].reserve(fmax);
    b_[q].reserve(bmax);
    f_[q].resize(foff_.back());
    b_[q].resize(boff_.back());
    const u64* ck = mc.fck_[q].data() + mc.fck_off_[j];
    std::copy(ck, ck + k * mc.lf(t0), f_[q].begin());
    for (std::size_t t = t0; t + 1 < t1; ++t)
      mc.forward_step(q, t, f_[q].data() + foff_[t - t0], f_[q].data() + foff_[t + 1 - t0]);
    u64* last = b_[q].data() + boff_[t1 - 1 - t0];
    if (t1 == T) {
      std::fill(last, last + k * mc.lb(T - 1), u64{0});
      for (std::size_t x = 0; x < k; ++x) last[x * mc.lb(T - 1)] = 1;
    } else {
      mc.backward_step(q, t1 - 1, mc.bck_[q].data() + mc.bck_off_[j + 1], last);
    }
    for (std::size_t t = t1 - 1; t-- > t0;)
      mc.backward_step(q, t, b_[q].data() + boff_[t + 1 - t0], b_[q].data() + boff_[t - t0]);
  }
  chain_ = mc.id_;
  j_ = j;
}

void ModSegment::cumulative(const ModChain& mc, std::size_t i, std::size_t a, std::vector<std::uint64_t> out[kModPrimes]) {
  const std::size_t j = i / mc.C_;
  if (!holds(mc, i)) {
    chain_ = 0;  // a cancelled load leaves no half-built segment behind
    load(mc, j);
  }
  const std::size_t r = i - j * mc.C_, nf = mc.lf(i), nb = mc.lb(i), R = mc.R_;
  std::vector<u128> acc(R);
  for (int q = 0; q < kModPrimes; ++q) {
    const u64 p = mc.p_[q];
    const u64* F = f_[q].data() + foff_[r] + a * nf;
    const u64* B = b_[q].data() + boff_[r] + a * nb;
    std::fill(acc.begin(), acc.end(), u128{0});
    for (std::size_t s1 = 0; s1 < nf; ++s1) {
      const u64 c = F[s1];
      if (c == 0) continue;
      u128* as = acc.data() + s1;
      for (std::size_t s2 = 0; s2 < nb; ++s2) as[s2] += static_cast<u128>(B[s2]) * c;
    }
    out[q].resize(R);
    u64 run = 0;
    for (std::size_t s = 0; s < R; ++s) {
      run = modp::add(run, static_cast<u64>(acc[s] % p), p);
      out[q][s] = run;
    }
  }
}

}  // namespace puffer::models
