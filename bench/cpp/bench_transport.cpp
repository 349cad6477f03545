// Transport kernel without Python: 1-D W_inf (fast path and careful walk), the quantile
// coupling plan, a CSR batch of small pairs, and the 2-D bottleneck.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <vector>

#include "transport/common_1d.hpp"
#include "transport/transport.hpp"

namespace {

struct Law {
  std::vector<double> x, p;
};

Law make_law(std::size_t n, double shift, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> N;
  std::uniform_real_distribution<double> U;
  Law L{std::vector<double>(n), std::vector<double>(n)};
  double s = 0;
  for (auto& v : L.x) v = N(g) + shift;
  std::sort(L.x.begin(), L.x.end());
  for (auto& v : L.p) s += (v = U(g));
  for (auto& v : L.p) v /= s;
  return L;
}

void BM_WInf1D(benchmark::State& st) {
  const std::size_t n = static_cast<std::size_t>(st.range(0));
  Law P = make_law(n, 0.0, 1), Q = make_law(n, 0.1, 2);
  for (auto _ : st)
    benchmark::DoNotOptimize(puffer::transport::w_inf_1d(P.x.data(), P.p.data(), n, Q.x.data(), Q.p.data(), n));
  st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(2 * n));
}
BENCHMARK(BM_WInf1D)->Arg(1000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMicrosecond);

void BM_WInf1DCareful(benchmark::State& st) {
  const std::size_t n = static_cast<std::size_t>(st.range(0));
  Law P = make_law(n, 0.0, 1), Q = make_law(n, 0.1, 2);
  for (auto _ : st)
    benchmark::DoNotOptimize(puffer::transport::detail::w_inf_1d_careful(
        P.x.data(), P.p.data(), n, Q.x.data(), Q.p.data(), n, puffer::transport::kDefaultRtol,
        puffer::transport::kDefaultSumTol));
  st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(2 * n));
}
BENCHMARK(BM_WInf1DCareful)->Arg(1000)->Arg(100000)->Unit(benchmark::kMicrosecond);

void BM_Coupling1D(benchmark::State& st) {
  const std::size_t n = static_cast<std::size_t>(st.range(0));
  Law P = make_law(n, 0.0, 1), Q = make_law(n, 0.1, 2);
  for (auto _ : st)
    benchmark::DoNotOptimize(puffer::transport::coupling_1d(P.x.data(), P.p.data(), n, Q.x.data(), Q.p.data(), n));
  st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(2 * n));
}
BENCHMARK(BM_Coupling1D)->Arg(1000)->Arg(100000)->Unit(benchmark::kMicrosecond);

void BM_BatchSmall(benchmark::State& st) {
  const std::size_t K = 10000, m = 100;
  const unsigned threads = static_cast<unsigned>(st.range(0));
  std::vector<double> X, P, Y, Q;
  std::vector<std::int64_t> off(K + 1);
  for (std::size_t k = 0; k < K; ++k) {
    Law a = make_law(m, 0.0, 3 * k + 1), b = make_law(m, 0.1, 3 * k + 2);
    X.insert(X.end(), a.x.begin(), a.x.end());
    P.insert(P.end(), a.p.begin(), a.p.end());
    Y.insert(Y.end(), b.x.begin(), b.x.end());
    Q.insert(Q.end(), b.p.begin(), b.p.end());
    off[k + 1] = static_cast<std::int64_t>((k + 1) * m);
  }
  std::vector<double> out(K);
  for (auto _ : st)
    puffer::transport::w_inf_1d_batch(X.data(), P.data(), off.data(), X.size(), Y.data(), Q.data(), off.data(),
                                      Y.size(), K, out.data(), threads);
  st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(K));
}
BENCHMARK(BM_BatchSmall)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

void BM_Bottleneck2D(benchmark::State& st) {
  const std::size_t n = static_cast<std::size_t>(st.range(0));
  std::mt19937_64 g(5);
  std::uniform_real_distribution<double> U;
  std::vector<double> X(2 * n), Y(2 * n), p(n, 1.0 / n), q(n, 1.0 / n);
  for (auto& v : X) v = U(g);
  for (auto& v : Y) v = U(g);
  for (auto _ : st)
    benchmark::DoNotOptimize(puffer::transport::w_inf_nd(X.data(), p.data(), n, Y.data(), q.data(), n, 2, 2, false));
}
BENCHMARK(BM_Bottleneck2D)->Arg(20)->Arg(60)->Unit(benchmark::kMillisecond);

}  // namespace
