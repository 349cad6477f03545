// 1-D quantile coupling (north-west corner rule on sorted supports, Ding 2022) and W_inf
// as the largest distance over its entries (Pierquin et al. 2024: the monotone coupling attains
// W_inf in 1-D). Float inputs follow the level rule of transport.hpp; exact inputs compare
// integer levels in 128-bit arithmetic.
#include <algorithm>
#include <cmath>
#include <vector>

#include "common/errors.hpp"
#include "transport/common_1d.hpp"
#include "transport/transport.hpp"

namespace puffer::transport {
namespace {


inline std::size_t next_pos(const double* p, std::size_t i, std::size_t n) {
  ++i;
  while (i < n && p[i] == 0.0) ++i;
  return i;
}

// Levels of one law: the canonical block definition of common_1d.hpp.
void levels(const double* p, std::size_t n, double T, const std::vector<double>& L, const std::vector<double>& R,
            std::vector<double>& F, std::vector<double>& S) {
  F.resize(n);
  S.resize(n);
  const double inv = 1.0 / T;
  for (std::size_t b = 0; b < L.size(); ++b) {
    const std::size_t s0 = b * detail::kBlock, e = std::min(n, s0 + detail::kBlock);
    double a = 0.0;
    for (std::size_t i = s0; i < e; ++i) {
      a += p[i];
      F[i] = (L[b] + a) * inv;
    }
    double c = 0.0;
    for (std::size_t i = e; i-- > s0;) {
      S[i] = (R[b] + c) * inv;
      c += p[i];
    }
  }
}

constexpr double kU = 0x1p-53;

// The level rule: compare end levels of atom i of P (n atoms) and j of Q (m atoms) in the
// representation where they are small. Tie iff |a - b| <= max(a, b) * (rtol + band u), band =
// kLevelErrU per law (small laws: the number of summed terms + 4), a rigorous bound on the
// rounding of both computed levels.
inline int cmp_levels(const std::vector<double>& FP, const std::vector<double>& SP, std::size_t i, std::size_t n,
                      const std::vector<double>& FQ, const std::vector<double>& SQ, std::size_t j, std::size_t m,
                      double rtol, std::int64_t& nt) {
  double a, b, ka, kb;
  if (std::min(FP[i], FQ[j]) <= 0.5) {
    a = FP[i];
    b = FQ[j];
    ka = std::min(double(i + 1) + 4.0, detail::kLevelErrU);
    kb = std::min(double(j + 1) + 4.0, detail::kLevelErrU);
  } else {  // upper tail: the larger survival ends first
    a = SQ[j];
    b = SP[i];
    ka = std::min(double(m - 1 - j) + 4.0, detail::kLevelErrU);
    kb = std::min(double(n - 1 - i) + 4.0, detail::kLevelErrU);
  }
  if (a == b) return 0;
  double mx = a > b ? a : b;
  if (std::fabs(a - b) <= mx * (rtol + (ka + kb) * kU)) {
    ++nt;
    return 0;
  }
  return a < b ? -1 : 1;
}

struct Laws {
  const double *x, *p, *y, *q;
  std::size_t n, m;
  double TP, TQ;
  std::vector<double> FP, SP, FQ, SQ;
};

Laws prepare(const double* x, const double* p, std::size_t n, const double* y, const double* q, std::size_t m,
             double rtol, double sum_tol) {
  detail::check_rtol(rtol);
  Laws L{x, p, y, q, n, m, 0, 0, {}, {}, {}, {}};
  detail::check_atoms(x, n, "P.atoms");
  detail::check_atoms(y, m, "Q.atoms");
  std::vector<double> bl, br;
  L.TP = detail::setup_law(p, n, sum_tol, "P.probs", bl, br).T;
  levels(p, n, L.TP, bl, br, L.FP, L.SP);
  L.TQ = detail::setup_law(q, m, sum_tol, "Q.probs", bl, br).T;
  levels(q, m, L.TQ, bl, br, L.FQ, L.SQ);
  return L;
}

// The staircase walk. emit(i, j, mass) is called for every entry of positive mass.
template <class Emit>
std::int64_t walk(const Laws& L, double rtol, Emit&& emit) {
  const double *p = L.p, *q = L.q;
  const std::size_t n = L.n, m = L.m;
  std::int64_t nt = 0;
  std::size_t i = next_pos(p, static_cast<std::size_t>(-1), n);
  std::size_t j = next_pos(q, static_cast<std::size_t>(-1), m);
  std::size_t last_i = i, last_j = j;
  double sFp = 0.0, sSp = 1.0, sFq = 0.0, sSq = 1.0;  // start levels of the current atoms
  while (i < n && j < m) {
    // Entry mass: overlap of the two level intervals, in the representation where it is small.
    double mass;
    if (std::min(L.FP[i], L.FQ[j]) <= 0.5)
      mass = std::min(L.FP[i], L.FQ[j]) - std::max(sFp, sFq);
    else
      mass = std::min(sSp, sSq) - std::max(L.SP[i], L.SQ[j]);
    if (!(mass > 0.0)) mass = std::min(p[i] / L.TP, q[j] / L.TQ);  // collapsed interval: tiny atom
    emit(i, j, mass);
    last_i = i;
    last_j = j;
    int c = cmp_levels(L.FP, L.SP, i, n, L.FQ, L.SQ, j, m, rtol, nt);
    if (c <= 0) {
      sFp = L.FP[i];
      sSp = L.SP[i];
      i = next_pos(p, i, n);
    }
    if (c >= 0) {
      sFq = L.FQ[j];
      sSq = L.SQ[j];
      j = next_pos(q, j, m);
    }
  }
  // Both laws end at level 1 together; a remainder can only come from a tie at the very top
  // and is paired with the other law's last atom (never dropped).
  for (; i < n; i = next_pos(p, i, n)) emit(i, last_j, p[i] / L.TP);
  for (; j < m; j = next_pos(q, j, m)) emit(last_i, j, q[j] / L.TQ);
  return nt;
}

}  // namespace

Plan coupling_1d(const double* x, const double* p, std::size_t n, const double* y, const double* q,
                 std::size_t m, double rtol, double sum_tol) {
  Laws L = prepare(x, p, n, y, q, m, rtol, sum_tol);
  Plan plan;
  plan.src.reserve(n + m);
  plan.dst.reserve(n + m);
  plan.mass.reserve(n + m);
  plan.near_ties = walk(L, rtol, [&](std::size_t a, std::size_t b, double mass) {
    plan.src.push_back(static_cast<std::int64_t>(a));
    plan.dst.push_back(static_cast<std::int64_t>(b));
    plan.mass.push_back(mass);
  });
  return plan;
}

double detail::w_inf_1d_careful(const double* x, const double* p, std::size_t n, const double* y,
                                const double* q, std::size_t m, double rtol, double sum_tol) {
  Laws L = prepare(x, p, n, y, q, m, rtol, sum_tol);
  double w = 0.0;
  walk(L, rtol, [&](std::size_t a, std::size_t b, double) {
    double d = std::fabs(x[a] - y[b]);
    w = d > w ? d : w;
  });
  return w;
}

Plan coupling_1d_exact(const double* x, const std::int64_t* a, std::size_t n, std::int64_t den_p,
                       const double* y, const std::int64_t* b, std::size_t m, std::int64_t den_q) {
  const std::int64_t kMaxDen = std::int64_t(1) << 62;
  require(den_p >= 1 && den_p <= kMaxDen, "P.denominator", den_p, "an integer in [1, 2^62]");
  require(den_q >= 1 && den_q <= kMaxDen, "Q.denominator", den_q, "an integer in [1, 2^62]");
  auto check = [](const double* xs, const std::int64_t* num, std::size_t len, std::int64_t den, const char* xn,
                  const char* pn) {
    if (len == 0) throw InvalidArgument(xn, "an empty law", "at least one atom");
    i128 s = 0;
    for (std::size_t k = 0; k < len; ++k) {
      if (!std::isfinite(xs[k])) throw InvalidArgument(xn, "a non-finite atom", "finite atoms");
      if (k && !(xs[k] >= xs[k - 1]))
        throw InvalidArgument(xn, "unsorted at index " + std::to_string(k), "atoms sorted ascending");
      if (num[k] < 0) throw InvalidArgument(pn, to_str(num[k]), "non-negative numerators");
      s += num[k];
    }
    if (s != static_cast<i128>(den)) throw InvalidArgument(pn, "numerators not summing to the denominator",
                                                          "exact masses summing to 1");
  };
  check(x, a, n, den_p, "P.atoms", "P.numerators");
  check(y, b, m, den_q, "Q.atoms", "Q.numerators");
  // Levels in units 1 / (den_p * den_q): P's F_i * den_q, Q's G_j * den_p.
  Plan plan;
  auto nxt = [](const std::int64_t* num, std::size_t k, std::size_t len) {
    ++k;
    while (k < len && num[k] == 0) ++k;
    return k;
  };
  std::size_t i = nxt(a, static_cast<std::size_t>(-1), n), j = nxt(b, static_cast<std::size_t>(-1), m);
  i128 Fi = static_cast<i128>(a[i]) * den_q, Gj = static_cast<i128>(b[j]) * den_p, prev = 0;
  while (i < n && j < m) {
    i128 end = Fi < Gj ? Fi : Gj;
    i128 mass = end - prev;
    plan.src.push_back(static_cast<std::int64_t>(i));
    plan.dst.push_back(static_cast<std::int64_t>(j));
    plan.mass.push_back(static_cast<double>(mass) / (static_cast<double>(den_p) * static_cast<double>(den_q)));
    plan.mass_hi.push_back(static_cast<std::int64_t>(mass >> 64));
    plan.mass_lo.push_back(static_cast<std::uint64_t>(mass));
    prev = end;
    bool ai = Fi <= Gj, aj = Gj <= Fi;
    if (ai) {
      i = nxt(a, i, n);
      if (i < n) Fi += static_cast<i128>(a[i]) * den_q;
    }
    if (aj) {
      j = nxt(b, j, m);
      if (j < m) Gj += static_cast<i128>(b[j]) * den_p;
    }
  }
  return plan;
}

double w_inf_keys(const double* x, const double* kp, std::size_t n, const double* y, const double* kq,
                  std::size_t m, double tol) {
  if (n == 0 || m == 0) throw InvalidArgument("law", "an empty law", "at least one atom");
  std::size_t i = 0, j = 0;
  double w = 0.0;
  while (i < n && j < m) {
    double d = std::fabs(x[i] - y[j]);
    w = d > w ? d : w;
    double a = kp[i], b = kq[j];
    int c;
    if (a == b) c = 0;
    else {
      double scale = std::max(1.0, std::max(std::fabs(a), std::fabs(b)));
      if (std::isfinite(a) && std::isfinite(b) && std::fabs(a - b) <= tol * scale) c = 0;
      else c = a < b ? -1 : 1;
    }
    if (c <= 0) ++i;
    if (c >= 0) ++j;
  }
  for (; i < n; ++i) w = std::max(w, std::fabs(x[i] - y[m - 1]));
  for (; j < m; ++j) w = std::max(w, std::fabs(x[n - 1] - y[j]));
  return w;
}

}  // namespace puffer::transport
