#include "models/markov_modp.hpp"

#include <algorithm>

#include "common/modp.hpp"

namespace puffer::models {

using modp::u128;
using modp::u64;

double ModChain::bytes(std::size_t k, std::size_t T, std::size_t span) {
  // sum_t k (lf(t) + lb(t)) = k T (T span + 2) residues per prime, plus the accumulators
  const double K = static_cast<double>(k), TT = static_cast<double>(T), S = static_cast<double>(span);
  return kModPrimes * 8.0 * K * TT * (TT * S + 2.0) + 2.0 * 16.0 * (TT * S + 1.0);
}

// Residues are < 2^50, products < 2^100: every sum below (k <= 64 terms in the passes, at most
// R <= 5e7 < 2^28 in a convolution) fits a 128-bit accumulator unreduced.
ModChain::ModChain(std::size_t k, std::size_t T, std::size_t span, const std::size_t* dv, const double* P,
                   const double* init, const std::uint64_t primes[kModPrimes], const JobControl* ctl)
    : k_(k), T_(T), span_(span), R_(T * span + 1) {
  foff_.assign(T + 1, 0);
  boff_.assign(T + 1, 0);
  for (std::size_t t = 0; t < T; ++t) {
    foff_[t + 1] = foff_[t] + k * lf(t);
    boff_[t + 1] = boff_[t] + k * lb(t);
  }
  std::vector<u128> acc(R_);
  for (int q = 0; q < kModPrimes; ++q) {
    p_[q] = primes[q];
    const modp::Field fld(p_[q]);
    const u64 p = p_[q];
    std::vector<u64> Pm(k * k);
    for (std::size_t j = 0; j < k * k; ++j) Pm[j] = fld.of(P[j]);
    f_[q].assign(foff_[T], 0);
    b_[q].assign(boff_[T], 0);
    // forward: f_0(x, dv[x]) = init[x]; f_{t+1}(y, s + dv[y]) = sum_x f_t(x, s) P[x][y]
    for (std::size_t x = 0; x < k; ++x) f_[q][x * lf(0) + dv[x]] = fld.of(init[x]);
    for (std::size_t t = 0; t + 1 < T; ++t) {
      if ((t & 15) == 0) poll(ctl);
      const u64* src = f_[q].data() + foff_[t];
      u64* dst = f_[q].data() + foff_[t + 1];
      const std::size_t ns = lf(t), nd = lf(t + 1);
      for (std::size_t y = 0; y < k; ++y) {
        std::fill(acc.begin(), acc.begin() + static_cast<std::ptrdiff_t>(ns), u128{0});
        for (std::size_t x = 0; x < k; ++x) {
          const u64 c = Pm[x * k + y];
          if (c == 0) continue;
          const u64* fx = src + x * ns;
          for (std::size_t s = 0; s < ns; ++s) acc[s] += static_cast<u128>(fx[s]) * c;
        }
        u64* dy = dst + y * nd;
        for (std::size_t s = 0; s < ns; ++s) dy[s + dv[y]] = static_cast<u64>(acc[s] % p);
      }
    }
    // backward: b_{T-1}(x, 0) = 1; b_t(x, s + dv[y]) = sum_y P[x][y] b_{t+1}(y, s)
    for (std::size_t x = 0; x < k; ++x) b_[q][boff_[T - 1] + x * lb(T - 1)] = 1;
    for (std::size_t t = T - 1; t-- > 0;) {
      if ((t & 15) == 0) poll(ctl);
      const u64* src = b_[q].data() + boff_[t + 1];
      u64* dst = b_[q].data() + boff_[t];
      const std::size_t ns = lb(t + 1), nd = lb(t);
      for (std::size_t x = 0; x < k; ++x) {
        std::fill(acc.begin(), acc.begin() + static_cast<std::ptrdiff_t>(nd), u128{0});
        for (std::size_t y = 0; y < k; ++y) {
          const u64 c = Pm[x * k + y];
          if (c == 0) continue;
          const u64* by = src + y * ns;
          u128* ax = acc.data() + dv[y];
          for (std::size_t s = 0; s < ns; ++s) ax[s] += static_cast<u128>(by[s]) * c;
        }
        u64* dx = dst + x * nd;
        for (std::size_t s = 0; s < nd; ++s) dx[s] = static_cast<u64>(acc[s] % p);
      }
    }
  }
}

void ModChain::cumulative(std::size_t i, std::size_t a, std::vector<std::uint64_t> out[kModPrimes]) const {
  const std::size_t nf = lf(i), nb = lb(i);
  std::vector<u128> acc(R_);
  for (int q = 0; q < kModPrimes; ++q) {
    const u64 p = p_[q];
    const u64* F = f_[q].data() + foff_[i] + a * nf;
    const u64* B = b_[q].data() + boff_[i] + a * nb;
    std::fill(acc.begin(), acc.end(), u128{0});
    for (std::size_t s1 = 0; s1 < nf; ++s1) {
      const u64 c = F[s1];
      if (c == 0) continue;
      u128* as = acc.data() + s1;
      for (std::size_t s2 = 0; s2 < nb; ++s2) as[s2] += static_cast<u128>(B[s2]) * c;
    }
    out[q].resize(R_);
    u64 run = 0;
    for (std::size_t s = 0; s < R_; ++s) {
      run = modp::add(run, static_cast<u64>(acc[s] % p), p);
      out[q][s] = run;
    }
  }
}

}  // namespace puffer::models
