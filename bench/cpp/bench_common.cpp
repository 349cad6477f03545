// Overhead of the shared thread pool: an empty parallel_for over many small tasks.
#include <benchmark/benchmark.h>

#include <atomic>

#include "common/parallel.hpp"

static void BM_ParallelForOverhead(benchmark::State& state) {
  const std::size_t n_tasks = static_cast<std::size_t>(state.range(0));
  std::atomic<std::size_t> sink{0};
  for (auto _ : state) {
    puffer::parallel_for(n_tasks, 2, [&](std::size_t t) { sink.fetch_add(t, std::memory_order_relaxed); });
  }
  benchmark::DoNotOptimize(sink.load());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n_tasks));
}
BENCHMARK(BM_ParallelForOverhead)->Arg(2)->Arg(64)->Arg(4096);
