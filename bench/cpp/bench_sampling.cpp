// google-benchmark cases of cpp/sampling: samplers per kind on one thread and on all cores
// (best SIMD target), and the secure exact discrete Laplace. No Python in the loop.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "sampling/samplers.hpp"
#include "sampling/secure.hpp"

namespace ps = puffer::sampling;

static void BM_Sampler(benchmark::State& state, int kind, double p0, double p1) {
  const std::size_t n = std::size_t(1) << 22;
  const unsigned threads = unsigned(state.range(0));
  std::vector<double> out(n);
  const ps::KernelParams kp = ps::make_kernel_params(kind, p0, p1);
  std::uint64_t start = 0;
  for (auto _ : state) {
    ps::fill_f64(kp, {1, 2, 3}, start, n, nullptr, out.data(), threads);
    start += n;
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(n));
}
BENCHMARK_CAPTURE(BM_Sampler, uniform, 0, 0.0, 0.0)->Arg(1)->Arg(0)->UseRealTime();
BENCHMARK_CAPTURE(BM_Sampler, laplace, 2, 1.0, 0.0)->Arg(1)->Arg(0)->UseRealTime();
BENCHMARK_CAPTURE(BM_Sampler, gaussian, 3, 1.0, 0.0)->Arg(1)->Arg(0)->UseRealTime();
BENCHMARK_CAPTURE(BM_Sampler, cauchy, 4, 1.0, 0.0)->Arg(1)->UseRealTime();
BENCHMARK_CAPTURE(BM_Sampler, student_t, 5, 3.0, 1.0)->Arg(1)->UseRealTime();
BENCHMARK_CAPTURE(BM_Sampler, gen_gaussian, 6, 1.5, 1.0)->Arg(1)->UseRealTime();

static void BM_SecureDiscreteLaplace(benchmark::State& state) {
  const std::size_t n = std::size_t(1) << 16;
  std::vector<std::int64_t> out(n);
  const ps::SecureParams p{0, std::uint64_t(1) << 20, 1, 1};  // scale 2^20 lattice units
  for (auto _ : state) {
    ps::secure_sample_int(p, out.data(), n, 1, nullptr);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(n));
}
BENCHMARK(BM_SecureDiscreteLaplace)->UseRealTime();
