// (z, delta)-nearness radius in 1-D (Pierquin et al. 2024): the smallest z in
// {0} U {|x_i - y_j|} such that some coupling puts mass >= 1 - delta on {|X - Y| <= z}.
// For fixed z the best coupled mass is a max-flow on an interval bipartite graph (atom x_i may
// send to the y_j in [x_i - z, x_i + z]; both window ends increase with i), and the greedy
// "process x in increasing order, fill the leftmost y with remaining capacity in the window"
// is optimal for it. The quantile coupling is NOT optimal here (Pierquin et al. 2024 counterexample).
#include <algorithm>
#include <cmath>
#include <vector>

#include "common/errors.hpp"
#include "transport/common_1d.hpp"
#include "transport/transport.hpp"

namespace puffer::transport {
namespace {

// Largest mass coupled within distance z (greedy). T is double or i128. Subtractions take the
// exact minimum of two capacities, so one of them becomes exactly 0 (no float leftovers).
template <class T>
T near_mass(const double* x, const std::vector<T>& p, std::size_t n, const double* y, const std::vector<T>& q,
            std::size_t m, double z, std::vector<T>& cap) {
  cap.assign(q.begin(), q.end());
  T total = 0;
  std::size_t lo = 0;  // first y not left of the current window
  for (std::size_t i = 0; i < n; ++i) {
    T need = p[i];
    if (!(need > T(0))) continue;
    while (lo < m && (y[lo] < x[i] - z || !(cap[lo] > T(0)))) ++lo;
    std::size_t k = lo;
    while (need > T(0) && k < m && y[k] <= x[i] + z) {
      if (cap[k] > T(0)) {
        T t = need < cap[k] ? need : cap[k];
        cap[k] -= t;
        need -= t;
        total += t;
      }
      if (!(cap[k] > T(0))) ++k;
    }
  }
  return total;
}

std::vector<double> candidates(const double* x, std::size_t n, const double* y, std::size_t m) {
  std::vector<double> c;
  c.reserve(n * m + 1);
  c.push_back(0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < m; ++j) c.push_back(std::fabs(x[i] - y[j]));
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}

template <class T, class Ok>
double search(const double* x, const std::vector<T>& P, std::size_t n, const double* y, const std::vector<T>& Q,
              std::size_t m, Ok ok) {
  std::vector<double> c = candidates(x, n, y, m);
  std::vector<T> cap;
  std::size_t lo = 0, hi = c.size() - 1;  // the largest distance couples everything
  while (lo < hi) {
    std::size_t mid = lo + (hi - lo) / 2;
    if (ok(near_mass<T>(x, P, n, y, Q, m, c[mid], cap))) hi = mid;
    else lo = mid + 1;
  }
  return c[lo];
}

void check_delta(double delta) {
  if (!(delta >= 0.0 && delta < 1.0)) throw InvalidArgument("delta", to_str(delta), "a probability in [0, 1)");
}

}  // namespace

double near_radius_1d(const double* x, const double* p, std::size_t n, const double* y, const double* q,
                      std::size_t m, double delta, double rtol, double sum_tol) {
  detail::check_rtol(rtol);
  check_delta(delta);
  if (delta == 0.0) return w_inf_1d(x, p, n, y, q, m, rtol, sum_tol);  // stranded tiny atoms count
  const double TP = detail::checked_total(x, p, n, sum_tol, "P.atoms", "P.probs");
  const double TQ = detail::checked_total(y, q, m, sum_tol, "Q.atoms", "Q.probs");
  std::vector<double> P(n), Q(m);
  for (std::size_t k = 0; k < n; ++k) P[k] = p[k] / TP;
  for (std::size_t k = 0; k < m; ++k) Q[k] = q[k] / TQ;
  const double need = (1.0 - delta) * (1.0 - rtol * static_cast<double>(n + m));
  return search<double>(x, P, n, y, Q, m, [&](double mass) { return mass >= need; });
}

double near_radius_1d_exact(const double* x, const std::int64_t* a, std::size_t n, std::int64_t den_p,
                            const double* y, const std::int64_t* b, std::size_t m, std::int64_t den_q,
                            i128 need) {
  const std::int64_t kMaxDen = std::int64_t(1) << 62;
  require(den_p >= 1 && den_p <= kMaxDen, "P.denominator", den_p, "an integer in [1, 2^62]");
  require(den_q >= 1 && den_q <= kMaxDen, "Q.denominator", den_q, "an integer in [1, 2^62]");
  if (n == 0 || m == 0) throw InvalidArgument("law", "an empty law", "at least one atom");
  std::vector<i128> P(n), Q(m);
  i128 sp = 0, sq = 0;
  for (std::size_t k = 0; k < n; ++k) {
    if (a[k] < 0) throw InvalidArgument("P.numerators", to_str(a[k]), "non-negative numerators");
    if (!std::isfinite(x[k]) || (k && !(x[k] >= x[k - 1])))
      throw InvalidArgument("P.atoms", "unsorted or non-finite", "finite atoms sorted ascending");
    P[k] = static_cast<i128>(a[k]) * den_q;
    sp += a[k];
  }
  for (std::size_t k = 0; k < m; ++k) {
    if (b[k] < 0) throw InvalidArgument("Q.numerators", to_str(b[k]), "non-negative numerators");
    if (!std::isfinite(y[k]) || (k && !(y[k] >= y[k - 1])))
      throw InvalidArgument("Q.atoms", "unsorted or non-finite", "finite atoms sorted ascending");
    Q[k] = static_cast<i128>(b[k]) * den_p;
    sq += b[k];
  }
  if (sp != den_p || sq != den_q)
    throw InvalidArgument("numerators", "not summing to the denominator", "exact masses summing to 1");
  return search<i128>(x, P, n, y, Q, m, [&](i128 mass) { return mass >= need; });
}

}  // namespace puffer::transport
