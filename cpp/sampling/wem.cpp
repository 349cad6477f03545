// Samplers of the Wasserstein exponential mechanism (Seeman, Reimherr & Slavkovic, Thm 9) and of
// the baseline noise of their §4 case study: categorical draws from log-weights (finite supports),
// the 1-D truncated Laplace (Example 1 / Eq. 13), the discrete Laplace, and a Metropolis-Hastings
// chain on the constrained lattice of the case study (approximate: only its limit law is the WEM).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/errors.hpp"
#include "common/parallel.hpp"
#include "sampling/partial.hpp"
#include "sampling/philox_stream.hpp"

namespace puffer::sampling {

void categorical_fill(const double* logw, std::size_t K, StreamKey key, std::uint64_t start, std::size_t n,
                      std::int64_t* out, unsigned threads) {
  require(K >= 1, "support", K, "a non-empty support");
  require(threads <= 1024, "threads", threads, "0 (all cores) to 1024");
  double mx = -std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < K; ++k) {
    require(!std::isnan(logw[k]) && logw[k] != std::numeric_limits<double>::infinity(), "log_weights", logw[k],
            "finite log-weights or -inf");
    mx = std::max(mx, logw[k]);
  }
  require(std::isfinite(mx), "log_weights", "all -inf", "at least one finite log-weight");
  // Cumulative weights in long double, then normalised: cum[k] = P(index <= k).
  std::vector<double> cum(K);
  long double acc = 0.0L;
  for (std::size_t k = 0; k < K; ++k) {
    acc += std::exp((long double)(logw[k] - mx));
    cum[k] = double(acc);
  }
  const double total = cum[K - 1];
  for (std::size_t k = 0; k < K; ++k) cum[k] /= total;
  cum[K - 1] = 1.0;
  // Zero-weight atoms have cum[k] == cum[k-1], so the search never lands on them.
  // Guide table (Chen & Asau 1974): guide[b] = first k with cum[k] > b/K, so the inverse CDF of u
  // starts at guide[floor(u K)] and walks a few steps: the same index as a binary search, O(1) on
  // average.
  std::vector<std::uint32_t> guide(K);
  {
    std::size_t k = 0;
    for (std::size_t b = 0; b < K; ++b) {
      const double level = double(b) / double(K);
      while (k + 1 < K && cum[k] <= level) ++k;
      guide[b] = std::uint32_t(k);
    }
  }
  require(K < (std::size_t(1) << 32), "support", K, "fewer than 2^32 points");
  const std::size_t task = std::size_t(1) << 14;
  parallel_for((n + task - 1) / task, threads, [&](std::size_t t) {
    const std::size_t lo = t * task, hi = std::min(n, lo + task);
    const double* c = cum.data();
    for (std::size_t i = lo; i < hi; ++i) {
      ValueStream st(key, start + i);
      const double u = st.u53();
      std::size_t b = std::size_t(u * double(K));
      if (b >= K) b = K - 1;
      std::size_t k = guide[b];
      while (k > 0 && c[k - 1] > u) --k;  // floor(u K) may round up past u: step back
      while (c[k] <= u) ++k;              // cum[K-1] = 1 > u stops it
      out[i] = std::int64_t(k);
    }
  });
}

namespace {

// Standard Laplace (density exp(-|t|)/2) truncated to [A, E], A < E, from two uniforms.
double std_trunc_laplace(double A, double E, ValueStream& st) {
  if (A >= 0.0) return -std_trunc_laplace(-E, -A, st);  // reflect into the left tail
  const double u = st.u53();
  if (E <= 0.0) {
    // density ∝ e^t on [A, E]: t = E + log(r + u (1 - r)), r = e^{A-E}
    const double r = std::exp(A - E);
    return std::min(E, std::max(A, E + std::log(r + u * (1.0 - r))));
  }
  // A < 0 < E: left mass 1 - e^A, right mass 1 - e^{-E}
  const double mL = -std::expm1(A), mR = -std::expm1(-E);
  const double v = st.u53();
  if (u * (mL + mR) < mL) {
    // t = -Exp(1) truncated to [0, -A]: t = log(1 - v (1 - e^A))
    return std::max(A, std::log1p(-v * mL));
  }
  return std::min(E, -std::log1p(-v * mR));
}

}  // namespace

void trunc_laplace_fill(const double* c, double c0, double b, double lo, double hi, StreamKey key,
                        std::uint64_t start, std::size_t n, double* out, unsigned threads) {
  require(std::isfinite(b) && b > 0.0, "b", b, "a finite scale > 0");
  require(std::isfinite(lo) && std::isfinite(hi) && lo < hi, "interval", hi - lo, "finite lo < hi");
  require(threads <= 1024, "threads", threads, "0 (all cores) to 1024");
  const std::size_t task = std::size_t(1) << 14;
  parallel_for((n + task - 1) / task, threads, [&](std::size_t t) {
    const std::size_t l = t * task, h = std::min(n, l + task);
    for (std::size_t i = l; i < h; ++i) {
      ValueStream st(key, start + i);
      const double ci = c ? c[i] : c0;
      const double y = ci + b * std_trunc_laplace((lo - ci) / b, (hi - ci) / b, st);
      out[i] = std::min(hi, std::max(lo, y));
    }
  });
}

void discrete_laplace_fill(double t, StreamKey key, std::uint64_t start, std::size_t n, const std::int64_t* in,
                           std::int64_t* out, unsigned threads) {
  require(std::isfinite(t) && t > 0.0 && t < 1e15, "scale", t, "a finite scale in (0, 1e15)");
  require(threads <= 1024, "threads", threads, "0 (all cores) to 1024");
  const std::size_t task = std::size_t(1) << 14;
  parallel_for((n + task - 1) / task, threads, [&](std::size_t q) {
    const std::size_t l = q * task, h = std::min(n, l + task);
    for (std::size_t i = l; i < h; ++i) {
      ValueStream st(key, start + i);
      // Geometric on {0,1,...} with P(G >= k) = e^{-k/t}: G = floor(t E).
      const double g1 = std::floor(t * st.expo()), g2 = std::floor(t * st.expo());
      const std::int64_t k = std::int64_t(g1) - std::int64_t(g2);
      out[i] = (in ? in[i] : 0) + k;
    }
  });
}

void wem_lattice_mh(int mode, std::size_t J, std::size_t m, const std::int64_t* x, const std::int64_t* s,
                    const double* a, const std::int64_t* y0, double kappa, const std::int64_t* max_step,
                    std::uint64_t steps, StreamKey key, std::uint64_t start, std::int64_t* out,
                    std::int64_t* accepted, unsigned threads) {
  require(mode >= 0 && mode <= 2, "mode", mode, "0 (naive), 1 (congenial) or 2 (prior congenial)");
  require(J >= 1, "J", J, "at least one county");
  require(std::isfinite(kappa) && kappa > 0.0, "kappa", kappa, "a finite rate > 0");
  require(steps < (std::uint64_t(1) << 32), "steps", steps, "fewer than 2^32 steps per chain");
  require(threads <= 1024, "threads", threads, "0 (all cores) to 1024");
  const std::size_t D = 2 * J;
  for (std::size_t r = 0; r < m; ++r) {
    require(max_step[r] >= 1, "max_step", max_step[r], "a step size >= 1");
    const std::int64_t* y = y0 + r * D;
    if (mode >= 1) {
      std::int64_t tot = 0;
      for (std::size_t j = 0; j < J; ++j) {
        require(y[j] >= y[J + j] && y[J + j] >= 0, "start", y[j], "a start with cases >= deaths >= 0");
        tot += y[j];
      }
      require(tot == s[r], "start", tot, "a start whose cases sum to the public total");
    }
    if (mode == 2)
      for (std::size_t j = 0; j < J; ++j)
        require(a[r * J + j] > 0.0 && std::isfinite(a[r * J + j]), "concentration", a[r * J + j],
                "Dirichlet concentrations > 0 (add a pseudo-count for empty counties)");
  }
  parallel_for(m, threads, [&](std::size_t r) {
    ValueStream st(key, start + r);
    const std::int64_t* xr = x + r * D;
    const double* ar = (mode == 2) ? a + r * J : nullptr;
    std::int64_t* y = out + r * D;
    std::copy(y0 + r * D, y0 + (r + 1) * D, y);
    // ||y - x||^2 is an integer: kept exactly, so the chain never drifts.
    std::int64_t ss = 0;
    for (std::size_t i = 0; i < D; ++i) ss += (y[i] - xr[i]) * (y[i] - xr[i]);
    const std::uint64_t M = std::uint64_t(max_step[r]);
    std::int64_t acc = 0;
    auto lprior = [&](std::size_t j, std::int64_t c) { return std::lgamma(double(c) + ar[j]) - std::lgamma(double(c) + 1.0); };
    for (std::uint64_t it = 0; it < steps; ++it) {
      const std::uint64_t w = st.next();
      const std::uint64_t w2 = st.next();
      const std::int64_t step = std::int64_t(1 + (w2 >> 32) % M);
      const double u = (double(w2 & 0xFFFFFFFFu) + 0.5) * 0x1p-32;
      if (mode == 0) {
        const std::size_t i = std::size_t((w >> 1) % D);
        const std::int64_t delta = (w & 1u) ? step : -step;
        const std::int64_t e = y[i] - xr[i];
        const std::int64_t ss2 = ss + 2 * e * delta + delta * delta;
        const double lr = -kappa * (std::sqrt(double(ss2)) - std::sqrt(double(ss)));
        if (lr >= 0.0 || std::log(u) < lr) {
          y[i] += delta;
          ss = ss2;
          ++acc;
        }
        continue;
      }
      if ((w & 1u) == 0 && J >= 2) {
        // move `step` cases from county l to county j (j != l)
        const std::size_t j = std::size_t((w >> 1) % J);
        std::size_t l = std::size_t((w >> 33) % (J - 1));
        if (l >= j) ++l;
        if (y[l] - step < y[J + l]) continue;  // would break c_l >= d_l: rejected
        const std::int64_t ej = y[j] - xr[j], el = y[l] - xr[l];
        const std::int64_t ss2 = ss + 2 * step * (ej - el) + 2 * step * step;
        double lr = -kappa * (std::sqrt(double(ss2)) - std::sqrt(double(ss)));
        if (mode == 2) lr += lprior(j, y[j] + step) - lprior(j, y[j]) + lprior(l, y[l] - step) - lprior(l, y[l]);
        if (lr >= 0.0 || std::log(u) < lr) {
          y[j] += step;
          y[l] -= step;
          ss = ss2;
          ++acc;
        }
      } else {
        const std::size_t j = std::size_t((w >> 2) % J);
        const std::int64_t delta = (w & 2u) ? step : -step;
        const std::int64_t dn = y[J + j] + delta;
        if (dn < 0 || dn > y[j]) continue;
        const std::int64_t e = y[J + j] - xr[J + j];
        const std::int64_t ss2 = ss + 2 * e * delta + delta * delta;
        const double lr = -kappa * (std::sqrt(double(ss2)) - std::sqrt(double(ss)));
        if (lr >= 0.0 || std::log(u) < lr) {
          y[J + j] = dn;
          ss = ss2;
          ++acc;
        }
      }
    }
    accepted[r] = acc;
  });
}

}  // namespace puffer::sampling
