// Bottleneck transport in R^d (Pierquin et al. 2024, Seeman et al. 2024): W_inf is the
// smallest candidate distance z = ||x_i - y_j|| for which a coupling supported on the pairs at
// distance <= z exists; by Strassen / Hall this holds iff the max-flow
//   source -(p_i)-> i -(inf, if ||x_i - y_j|| <= z)-> j -(q_j)-> sink
// saturates the total mass. Binary search over the sorted candidates, Dinic max-flow.
#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <vector>

#include "common/errors.hpp"
#include "transport/common_1d.hpp"
#include "transport/transport.hpp"

namespace puffer::transport {

double distance(const double* u, const double* v, std::size_t d, int norm) {
  double acc = 0.0;
  if (norm == 1) {
    for (std::size_t k = 0; k < d; ++k) acc += std::fabs(u[k] - v[k]);
    return acc;
  }
  if (norm == 2) {
    if (d == 1) return std::fabs(u[0] - v[0]);
    for (std::size_t k = 0; k < d; ++k) acc += (u[k] - v[k]) * (u[k] - v[k]);
    return std::sqrt(acc);
  }
  for (std::size_t k = 0; k < d; ++k) acc = std::max(acc, std::fabs(u[k] - v[k]));
  return acc;
}

namespace {

template <class T>
class Dinic {
 public:
  struct Edge {
    int to;
    T cap;
  };
  explicit Dinic(int nv) : g_(nv), level_(nv), it_(nv) {}
  int add(int u, int v, T c) {
    g_[u].push_back(static_cast<int>(e_.size()));
    e_.push_back({v, c});
    g_[v].push_back(static_cast<int>(e_.size()));
    e_.push_back({u, T(0)});
    return static_cast<int>(e_.size()) - 2;
  }
  T maxflow(int s, int t) {
    T f = 0;
    while (bfs(s, t)) {
      std::fill(it_.begin(), it_.end(), 0);
      while (true) {
        T pushed = dfs(s, t, inf());
        if (!(pushed > T(0))) break;
        f += pushed;
      }
    }
    return f;
  }
  const Edge& edge(int id) const { return e_[id]; }
  static T inf() {
    if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
    else return (T(1) << 126);
  }

 private:
  bool bfs(int s, int t) {
    std::fill(level_.begin(), level_.end(), -1);
    std::queue<int> qu;
    level_[s] = 0;
    qu.push(s);
    while (!qu.empty()) {
      int u = qu.front();
      qu.pop();
      for (int id : g_[u]) {
        const Edge& ed = e_[id];
        if (ed.cap > T(0) && level_[ed.to] < 0) {
          level_[ed.to] = level_[u] + 1;
          qu.push(ed.to);
        }
      }
    }
    return level_[t] >= 0;
  }
  T dfs(int u, int t, T f) {
    if (u == t) return f;
    for (int& k = it_[u]; k < static_cast<int>(g_[u].size()); ++k) {
      int id = g_[u][k];
      Edge& ed = e_[id];
      if (ed.cap > T(0) && level_[ed.to] == level_[u] + 1) {
        T d = dfs(ed.to, t, f < ed.cap ? f : ed.cap);
        if (d > T(0)) {
          ed.cap -= d;
          e_[id ^ 1].cap += d;
          return d;
        }
      }
    }
    return T(0);
  }
  std::vector<Edge> e_;
  std::vector<std::vector<int>> g_;
  std::vector<int> level_, it_;
};

struct Geometry {
  std::vector<double> D;      // n x m distances
  std::vector<double> cand;   // sorted unique candidates
  double lower = 0.0;         // every atom needs a partner: max of the row / column minima
};

Geometry geometry(const double* X, std::size_t n, const double* Y, std::size_t m, std::size_t d, int norm) {
  Geometry g;
  g.D.resize(n * m);
  std::vector<double> colmin(m, std::numeric_limits<double>::infinity());
  for (std::size_t i = 0; i < n; ++i) {
    double rmin = std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < m; ++j) {
      double v = distance(X + i * d, Y + j * d, d, norm);
      g.D[i * m + j] = v;
      rmin = std::min(rmin, v);
      colmin[j] = std::min(colmin[j], v);
    }
    g.lower = std::max(g.lower, rmin);
  }
  for (double v : colmin) g.lower = std::max(g.lower, v);
  g.cand.reserve(n * m);
  for (double v : g.D)
    if (v >= g.lower) g.cand.push_back(v);
  std::sort(g.cand.begin(), g.cand.end());
  g.cand.erase(std::unique(g.cand.begin(), g.cand.end()), g.cand.end());
  return g;
}

void check_points(const double* X, std::size_t n, std::size_t d, const char* name) {
  if (n == 0) throw InvalidArgument(name, "an empty law", "at least one atom");
  for (std::size_t k = 0; k < n * d; ++k)
    if (!std::isfinite(X[k])) throw InvalidArgument(name, "a non-finite coordinate", "finite atoms");
}

// Feasibility of a threshold from the max-flow. Exact masses: the flow must carry all the
// mass. Float masses (normalised): every atom, of either law, must be shipped up to a relative
// `band` of its own mass (residual of its source / sink edge <= band * mass). So a genuinely
// stranded atom, however small (1e-300), makes the threshold infeasible, while the ~1e-17
// leftovers of decimal masses do not (the d-D form of the level rule).
template <class T>
struct Need {
  T total;
  double band;
};

template <class T>
Bottleneck solve(const Geometry& g, const std::vector<T>& P, const std::vector<T>& Q, Need<T> need, bool want_plan,
                 std::size_t n, std::size_t m) {
  // Edges s->i get ids 2i, edges j->t ids 2(n + j) (Dinic::add returns consecutive pairs).
  auto build = [&](double z, Dinic<T>& net, std::vector<int>& mid) {
    const int s = static_cast<int>(n + m), t = s + 1;
    for (std::size_t i = 0; i < n; ++i) net.add(s, static_cast<int>(i), P[i]);
    for (std::size_t j = 0; j < m; ++j) net.add(static_cast<int>(n + j), t, Q[j]);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < m; ++j)
        if (g.D[i * m + j] <= z) mid.push_back(net.add(static_cast<int>(i), static_cast<int>(n + j), Dinic<T>::inf()));
    return net.maxflow(s, t);
  };
  auto feasible = [&](double z) {
    Dinic<T> net(static_cast<int>(n + m + 2));
    std::vector<int> mid;
    const T flow = build(z, net, mid);
    if constexpr (std::is_floating_point_v<T>) {
      (void)flow;
      for (std::size_t i = 0; i < n; ++i)
        if (net.edge(static_cast<int>(2 * i)).cap > need.band * P[i]) return false;
      for (std::size_t j = 0; j < m; ++j)
        if (net.edge(static_cast<int>(2 * (n + j))).cap > need.band * Q[j]) return false;
      return true;
    } else {
      return flow >= need.total;
    }
  };
  std::size_t lo = 0, hi = g.cand.size() - 1;  // the largest candidate is always feasible
  while (lo < hi) {
    std::size_t mid = lo + (hi - lo) / 2;
    if (feasible(g.cand[mid])) hi = mid;
    else lo = mid + 1;
  }
  Bottleneck res;
  res.value = g.cand[lo];
  if (want_plan) {
    Dinic<T> net(static_cast<int>(n + m + 2));
    std::vector<int> mid;
    build(res.value, net, mid);
    for (int id : mid) {
      // flow on a forward edge = capacity of its reverse edge
      T f = net.edge(id ^ 1).cap;
      if (f > T(0)) {
        int i = net.edge(id ^ 1).to, j = net.edge(id).to - static_cast<int>(n);
        res.plan.src.push_back(i);
        res.plan.dst.push_back(j);
        if constexpr (std::is_floating_point_v<T>) {
          res.plan.mass.push_back(static_cast<double>(f));
        } else {
          res.plan.mass.push_back(static_cast<double>(f));  // rescaled by the caller
          res.plan.mass_hi.push_back(static_cast<std::int64_t>(f >> 64));
          res.plan.mass_lo.push_back(static_cast<std::uint64_t>(f));
        }
      }
    }
  }
  return res;
}

void check_norm(int norm) {
  if (norm != 1 && norm != 2 && norm != 0)
    throw InvalidArgument("norm", to_str(norm), "1, 2 or inf");
}

}  // namespace

Bottleneck w_inf_nd(const double* X, const double* p, std::size_t n, const double* Y, const double* q,
                    std::size_t m, std::size_t d, int norm, bool want_plan, double rtol, double sum_tol) {
  detail::check_rtol(rtol);
  check_norm(norm);
  require(d >= 1, "d", d, "dimension >= 1");
  check_points(X, n, d, "P.atoms");
  check_points(Y, m, d, "Q.atoms");
  // Masses: reuse the 1-D checks with a dummy sorted coordinate.
  std::vector<double> idx_p(n), idx_q(m);
  for (std::size_t k = 0; k < n; ++k) idx_p[k] = static_cast<double>(k);
  for (std::size_t k = 0; k < m; ++k) idx_q[k] = static_cast<double>(k);
  const double TP = detail::checked_total(idx_p.data(), p, n, sum_tol, "P.atoms", "P.probs");
  const double TQ = detail::checked_total(idx_q.data(), q, m, sum_tol, "Q.atoms", "Q.probs");
  // Drop zero-mass atoms (not in the support).
  std::vector<std::size_t> ip, iq;
  for (std::size_t k = 0; k < n; ++k)
    if (p[k] > 0) ip.push_back(k);
  for (std::size_t k = 0; k < m; ++k)
    if (q[k] > 0) iq.push_back(k);
  std::vector<double> Xs(ip.size() * d), Ys(iq.size() * d), P(ip.size()), Q(iq.size());
  for (std::size_t a = 0; a < ip.size(); ++a) {
    std::copy(X + ip[a] * d, X + ip[a] * d + d, Xs.begin() + a * d);
    P[a] = p[ip[a]] / TP;
  }
  for (std::size_t b = 0; b < iq.size(); ++b) {
    std::copy(Y + iq[b] * d, Y + iq[b] * d + d, Ys.begin() + b * d);
    Q[b] = q[iq[b]] / TQ;
  }
  Geometry g = geometry(Xs.data(), ip.size(), Ys.data(), iq.size(), d, norm);
  // band: rtol plus the rounding of the normalised masses and of the flow sums
  const double band = rtol + 4.0 * static_cast<double>(ip.size() + iq.size() + 4) * 0x1p-53;
  Bottleneck r = solve<double>(g, P, Q, Need<double>{1.0, band}, want_plan, ip.size(), iq.size());
  for (auto& s : r.plan.src) s = static_cast<std::int64_t>(ip[s]);
  for (auto& t : r.plan.dst) t = static_cast<std::int64_t>(iq[t]);
  return r;
}

Bottleneck w_inf_nd_exact(const double* X, const std::int64_t* a, std::size_t n, std::int64_t den_p,
                          const double* Y, const std::int64_t* b, std::size_t m, std::int64_t den_q,
                          std::size_t d, int norm, bool want_plan) {
  check_norm(norm);
  require(d >= 1, "d", d, "dimension >= 1");
  check_points(X, n, d, "P.atoms");
  check_points(Y, m, d, "Q.atoms");
  const std::int64_t kMaxDen = std::int64_t(1) << 62;
  require(den_p >= 1 && den_p <= kMaxDen, "P.denominator", den_p, "an integer in [1, 2^62]");
  require(den_q >= 1 && den_q <= kMaxDen, "Q.denominator", den_q, "an integer in [1, 2^62]");
  std::vector<std::size_t> ip, iq;
  i128 sp = 0, sq = 0;
  for (std::size_t k = 0; k < n; ++k) {
    if (a[k] < 0) throw InvalidArgument("P.numerators", to_str(a[k]), "non-negative numerators");
    sp += a[k];
    if (a[k] > 0) ip.push_back(k);
  }
  for (std::size_t k = 0; k < m; ++k) {
    if (b[k] < 0) throw InvalidArgument("Q.numerators", to_str(b[k]), "non-negative numerators");
    sq += b[k];
    if (b[k] > 0) iq.push_back(k);
  }
  if (sp != den_p) throw InvalidArgument("P.numerators", "not summing to the denominator", "exact masses summing to 1");
  if (sq != den_q) throw InvalidArgument("Q.numerators", "not summing to the denominator", "exact masses summing to 1");
  // Masses in units 1/(den_p*den_q).
  std::vector<double> Xs(ip.size() * d), Ys(iq.size() * d);
  std::vector<i128> P(ip.size()), Q(iq.size());
  for (std::size_t k = 0; k < ip.size(); ++k) {
    std::copy(X + ip[k] * d, X + ip[k] * d + d, Xs.begin() + k * d);
    P[k] = static_cast<i128>(a[ip[k]]) * den_q;
  }
  for (std::size_t k = 0; k < iq.size(); ++k) {
    std::copy(Y + iq[k] * d, Y + iq[k] * d + d, Ys.begin() + k * d);
    Q[k] = static_cast<i128>(b[iq[k]]) * den_p;
  }
  Geometry g = geometry(Xs.data(), ip.size(), Ys.data(), iq.size(), d, norm);
  const i128 need = static_cast<i128>(den_p) * den_q;
  Bottleneck r = solve<i128>(g, P, Q, Need<i128>{need, 0.0}, want_plan, ip.size(), iq.size());
  const double scale = static_cast<double>(den_p) * static_cast<double>(den_q);
  for (auto& v : r.plan.mass) v /= scale;
  for (auto& s : r.plan.src) s = static_cast<std::int64_t>(ip[s]);
  for (auto& t : r.plan.dst) t = static_cast<std::int64_t>(iq[t]);
  return r;
}

}  // namespace puffer::transport
