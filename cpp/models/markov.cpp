#include "models/markov.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/errors.hpp"
#include "common/parallel.hpp"
#include "transport/transport.hpp"

namespace puffer::models {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Per-theta workspace: forward F[t][x][s] and backward B[t][x][s], s in [0, R).
struct Work {
  std::size_t T, k, R;
  std::vector<double> F, B, J;
  double& f(std::size_t t, std::size_t x, std::size_t s) { return F[(t * k + x) * R + s]; }
  double& b(std::size_t t, std::size_t x, std::size_t s) { return B[(t * k + x) * R + s]; }
};

// Linear-space pass (valid when nothing can underflow, see linear_is_safe): plain probabilities,
// all in [1e-300, 1] where reachable, so no rescaling is needed.
void forward_backward_linear(Work& w, const double* P, const double* init, const std::vector<std::size_t>& dv) {
  const std::size_t T = w.T, k = w.k, R = w.R;
  std::fill(w.F.begin(), w.F.end(), 0.0);
  std::fill(w.B.begin(), w.B.end(), 0.0);
  for (std::size_t x = 0; x < k; ++x) w.f(0, x, dv[x]) = init[x];
  for (std::size_t t = 0; t + 1 < T; ++t) {
    const std::size_t hi = (t + 1) * (R - 1) / T + 1;  // reachable sums after t+1 steps
    for (std::size_t y = 0; y < k; ++y) {
      double* __restrict dst = &w.f(t + 1, y, 0) + dv[y];
      const std::size_t n = std::min(hi, R - dv[y]);
      for (std::size_t x = 0; x < k; ++x) {
        const double p = P[x * k + y];
        if (p == 0.0) continue;
        const double* __restrict src = &w.f(t, x, 0);
        for (std::size_t s = 0; s < n; ++s) dst[s] += p * src[s];
      }
    }
  }
  for (std::size_t x = 0; x < k; ++x) w.b(T - 1, x, 0) = 1.0;
  for (std::size_t t = T - 1; t-- > 0;) {
    const std::size_t hi = (T - 1 - t) * (R - 1) / T + 1;  // reachable sums of the remaining steps
    for (std::size_t x = 0; x < k; ++x) {
      for (std::size_t y = 0; y < k; ++y) {
        const double p = P[x * k + y];
        if (p == 0.0) continue;
        double* __restrict dst = &w.b(t, x, 0) + dv[y];
        const double* __restrict src = &w.b(t + 1, y, 0);
        const std::size_t n = std::min(hi, R - dv[y]);
        for (std::size_t s = 0; s < n; ++s) dst[s] += p * src[s];
      }
    }
  }
}

// J[s1 + s2] += F[s1] * B[s2] over s1 in [f_lo, f_hi], s2 in [0, b_hi]. Register-blocked by
// four values of s1 so each J element is loaded and stored once per four FMAs (a one-element
// shift per step would stall store-to-load forwarding). Bp is B with three zeros on each side
// (Bp[j + 3] = B[j]); J must have room for index f_hi + b_hi + 6. An AVX2+FMA clone is
// picked at load time where the CPU has it.
__attribute__((target_clones("avx2,fma", "default")))
void convolve_into(double* __restrict J, const double* __restrict F, std::size_t f_lo, std::size_t f_hi,
                   const double* __restrict Bp, std::size_t b_hi) {
  const std::size_t nt = b_hi + 4;
  for (std::size_t s1 = f_lo; s1 <= f_hi; s1 += 4) {
    const double f0 = F[s1];
    const double f1 = s1 + 1 <= f_hi ? F[s1 + 1] : 0.0;
    const double f2 = s1 + 2 <= f_hi ? F[s1 + 2] : 0.0;
    const double f3 = s1 + 3 <= f_hi ? F[s1 + 3] : 0.0;
    double* __restrict dst = J + s1;
    for (std::size_t t = 0; t < nt; ++t) dst[t] += f0 * Bp[t + 3] + f1 * Bp[t + 2] + f2 * Bp[t + 1] + f3 * Bp[t];
  }
}

inline double lse(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  return a > b ? a + std::log1p(std::exp(b - a)) : b + std::log1p(std::exp(a - b));
}

// Log-space pass: F and B hold log-probabilities (no rescaling needed).
void forward_backward_log(Work& w, const double* P, const double* init, const std::vector<std::size_t>& dv) {
  const std::size_t T = w.T, k = w.k, R = w.R;
  std::fill(w.F.begin(), w.F.end(), kNegInf);
  std::fill(w.B.begin(), w.B.end(), kNegInf);
  for (std::size_t x = 0; x < k; ++x)
    if (init[x] > 0.0) w.f(0, x, dv[x]) = std::log(init[x]);
  for (std::size_t t = 0; t + 1 < T; ++t)
    for (std::size_t y = 0; y < k; ++y)
      for (std::size_t x = 0; x < k; ++x) {
        const double p = P[x * k + y];
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
        const double p = P[x * k + y];
        if (p == 0.0) continue;
        const double lp = std::log(p);
        for (std::size_t s = 0; s + dv[y] < R; ++s) {
          const double v = w.b(t + 1, y, s);
          if (v != kNegInf) w.b(t, x, s + dv[y]) = lse(w.b(t, x, s + dv[y]), v + lp);
        }
      }
}

// True when every reachable entry of every rescaled slice and of every product F*B stays
// above 1e-300 (relative to the slice maxima): each reachable entry is at least the
// probability of one path, >= min_init * min_p^(T-1), and slice maxima are <= 1.
bool linear_is_safe(const double* P, const double* init, std::size_t k, std::size_t T) {
  double min_p = 1.0, min_init = 1.0;
  for (std::size_t j = 0; j < k * k; ++j)
    if (P[j] > 0.0) min_p = std::min(min_p, P[j]);
  for (std::size_t x = 0; x < k; ++x)
    if (init[x] > 0.0) min_init = std::min(min_init, init[x]);
  const double log_floor = std::log(min_init) + 2.0 * static_cast<double>(T) * std::log(min_p);
  return log_floor > std::log(1e-300);
}

}  // namespace

void validate(const MarkovChainSpec& spec, double tol) {
  require(spec.k >= 1 && spec.k <= 64, "k", spec.k, "1 to 64 states");
  require(spec.T >= 1 && spec.T <= 100000, "T", spec.T, "a chain length in [1, 100000]");
  require(spec.n_theta >= 1, "n_theta", spec.n_theta, "at least one prior");
  std::int64_t vmin = spec.values[0], vmax = spec.values[0];
  for (std::size_t x = 0; x < spec.k; ++x) {
    vmin = std::min(vmin, spec.values[x]);
    vmax = std::max(vmax, spec.values[x]);
  }
  require(vmax - vmin <= 1000000, "values", vmax - vmin, "a value span <= 1e6");
  require(static_cast<double>(spec.T) * static_cast<double>(vmax - vmin) <= 5e7, "T * value span",
          static_cast<double>(spec.T) * static_cast<double>(vmax - vmin), "a sum range <= 5e7");
  for (std::size_t th = 0; th < spec.n_theta; ++th) {
    const double* P = spec.trans + th * spec.k * spec.k;
    const double* pi = spec.init + th * spec.k;
    double s0 = 0.0;
    for (std::size_t x = 0; x < spec.k; ++x) {
      require(std::isfinite(pi[x]) && pi[x] >= 0.0, "init", pi[x], "finite probabilities >= 0");
      s0 += pi[x];
      double s = 0.0;
      for (std::size_t y = 0; y < spec.k; ++y) {
        const double p = P[x * spec.k + y];
        require(std::isfinite(p) && p >= 0.0, "transition", p, "finite probabilities >= 0");
        s += p;
      }
      require(std::fabs(s - 1.0) <= tol, "transition row sum", s, "rows summing to 1");
    }
    require(std::fabs(s0 - 1.0) <= tol, "init sum", s0, "an initial law summing to 1");
  }
}

std::vector<std::uint8_t> sum_laws(const MarkovChainSpec& spec, unsigned threads, const PositionFn& emit) {
  const std::size_t k = spec.k, T = spec.T;
  std::int64_t vmin = spec.values[0], vmax = spec.values[0];
  for (std::size_t x = 0; x < k; ++x) {
    vmin = std::min(vmin, spec.values[x]);
    vmax = std::max(vmax, spec.values[x]);
  }
  std::vector<std::size_t> dv(k);
  for (std::size_t x = 0; x < k; ++x) dv[x] = static_cast<std::size_t>(spec.values[x] - vmin);
  const std::size_t span = static_cast<std::size_t>(vmax - vmin);
  const std::size_t R = T * span + 1;
  const double base = static_cast<double>(T) * static_cast<double>(vmin);
  std::vector<std::uint8_t> used_log(spec.n_theta, 0);
  std::vector<double> grid(R);
  for (std::size_t s = 0; s < R; ++s) grid[s] = base + static_cast<double>(s);

  parallel_for(spec.n_theta, threads, [&](std::size_t th) {
    thread_local Work w;
    w.T = T; w.k = k; w.R = R;
    w.F.resize(T * k * R);  // filled by the forward/backward pass
    w.B.resize(T * k * R);
    const double* P = spec.trans + th * k * k;
    const double* init = spec.init + th * k;
    const bool lin = linear_is_safe(P, init, k, T);
    used_log[th] = lin ? 0 : 1;
    if (lin) forward_backward_linear(w, P, init, dv);
    else forward_backward_log(w, P, init, dv);
    thread_local std::vector<Law> laws;
    thread_local std::vector<double> J;  // k rows of R (+ 8 padding) masses: row a = law given X_i = a
    thread_local std::vector<double> Bp;  // backward row with 3 zeros on each side
    const std::size_t RJ = R + 8;
    laws.assign(k, Law{});
    J.assign(k * RJ, 0.0);
    Bp.assign(R + 6, 0.0);
    std::vector<double> marg(init, init + k), next(k);  // P(X_i = .), by m_{i+1} = m_i P
    for (std::size_t i = 0; i < T; ++i) {
      if (i > 0) {
        std::fill(next.begin(), next.end(), 0.0);
        for (std::size_t x = 0; x < k; ++x)
          for (std::size_t y = 0; y < k; ++y) next[y] += marg[x] * P[x * k + y];
        marg.swap(next);
      }
      for (std::size_t a = 0; a < k; ++a) {
        Law& law = laws[a];
        law = Law{};
        // J[s] = sum_{s1} F_i[a][s1] * B_i[a][s - s1]   (proportional to P(S = s | X_i = a))
        const double* Fa = &w.f(i, a, 0);
        const double* Ba = &w.b(i, a, 0);
        std::size_t f_lo = R, f_hi = 0, b_hi = 0;
        for (std::size_t s = 0; s < R; ++s) {
          const bool fz = lin ? Fa[s] != 0.0 : Fa[s] != kNegInf;
          const bool bz = lin ? Ba[s] != 0.0 : Ba[s] != kNegInf;
          if (fz) { f_lo = std::min(f_lo, s); f_hi = s; }
          if (bz) b_hi = s;
        }
        if (f_lo == R) continue;  // P(X_i = a) = 0: the secret is impossible (empty law)
        const std::size_t hi = std::min(R - 1, f_hi + b_hi);
        double* Ja = J.data() + a * RJ;
        if (lin) {
          std::fill(Ja + f_lo, Ja + std::min(RJ, f_hi + b_hi + 7), 0.0);
          std::copy(Ba, Ba + b_hi + 1, Bp.begin() + 3);
          std::fill(Bp.begin() + 4 + b_hi, Bp.begin() + 7 + b_hi, 0.0);
          convolve_into(Ja, Fa, f_lo, f_hi, Bp.data(), b_hi);
        } else {
          double mx = kNegInf;
          for (std::size_t s = f_lo; s <= hi; ++s) Ja[s] = kNegInf;
          for (std::size_t s1 = f_lo; s1 <= f_hi; ++s1) {
            const double fv = Fa[s1];
            if (fv == kNegInf) continue;
            for (std::size_t s2 = 0; s2 <= b_hi && s1 + s2 < R; ++s2)
              if (Ba[s2] != kNegInf) Ja[s1 + s2] = lse(Ja[s1 + s2], fv + Ba[s2]);
          }
          // Kept in log space (shifted by the maximum): converting to doubles would underflow
          // tail masses, and any floor for them scrambles the order of cumulative levels.
          for (std::size_t s = f_lo; s <= hi; ++s) mx = std::max(mx, Ja[s]);
          for (std::size_t s = f_lo; s <= hi; ++s)
            if (Ja[s] != kNegInf) Ja[s] -= mx;
        }
        law.log_space = !lin;
        law.atoms = grid.data() + f_lo;
        law.mass = Ja + f_lo;
        law.n = hi - f_lo + 1;
        law.secret_prob = marg[a];
      }
      emit(th, i, laws);
    }
  });
  return used_log;
}

static void log_level_keys(const Law& law, std::vector<double>& x, std::vector<double>& key) {
  // Reachable atoms only; key = log F where F <= 1/2, else -log S (monotone in the level);
  // +inf for the top atom. Sums of logs by log-sum-exp from the nearer end.
  x.clear();
  key.clear();
  std::vector<double> lp;
  for (std::size_t j = 0; j < law.n; ++j)
    if (law.mass[j] != kNegInf) {
      x.push_back(law.atoms[j]);
      lp.push_back(law.mass[j]);
    }
  const std::size_t n = lp.size();
  std::vector<double> lf(n), ls(n);
  double acc = kNegInf;
  for (std::size_t j = 0; j < n; ++j) lf[j] = acc = lse(acc, lp[j]);
  const double tot = acc;
  acc = kNegInf;
  for (std::size_t j = n; j-- > 0;) {
    ls[j] = acc;  // mass strictly above atom j
    acc = lse(acc, lp[j]);
  }
  const double half = std::log(0.5);
  key.resize(n);
  for (std::size_t j = 0; j < n; ++j) {
    const double f = lf[j] - tot, s = ls[j] - tot;
    key[j] = j + 1 == n ? std::numeric_limits<double>::infinity() : (f <= half ? f : -s);
  }
}

std::vector<std::uint8_t> w_inf_all_pairs(const MarkovChainSpec& spec, unsigned threads, double* out) {
  const std::size_t k = spec.k, T = spec.T, n_pairs = k * (k - 1) / 2;
  return sum_laws(spec, threads, [&](std::size_t th, std::size_t i, const std::vector<Law>& laws) {
    double* o = out + (th * T + i) * n_pairs;
    thread_local std::vector<double> xp, kp, xq, kq;
    for (std::size_t a = 0; a < k; ++a)
      for (std::size_t b = a + 1; b < k; ++b, ++o) {
        const Law &P = laws[a], &Q = laws[b];
        if (P.n != 0 && Q.n != 0 && P.log_space) {
          log_level_keys(P, xp, kp);
          log_level_keys(Q, xq, kq);
          // tie band as puffer.transport's log-space path: (n + m + 16) ulps, relative
          const double tol = static_cast<double>(xp.size() + xq.size() + 16) * 0x1p-53;
          *o = transport::w_inf_keys(xp.data(), kp.data(), xp.size(), xq.data(), kq.data(), xq.size(), tol);
          continue;
        }
        // masses are unnormalised: sum_tol < 0 lets the kernel divide by each law's total
        *o = (P.n == 0 || Q.n == 0) ? -1.0
                                    : transport::w_inf_1d(P.atoms, P.mass, P.n, Q.atoms, Q.mass, Q.n,
                                                          transport::kDefaultRtol, -1.0);
      }
  });
}

}  // namespace puffer::models
