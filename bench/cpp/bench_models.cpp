// The Markov-chain Delta_G kernel (issue 6 benchmark shape): 2 states, T = 100, per prior all
// positions' conditional laws and their W_inf, no Python in the loop.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "models/markov.hpp"

static void BM_MarkovWInf(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0)), T = 100, k = 2;
  const unsigned threads = static_cast<unsigned>(state.range(1));
  std::mt19937_64 gen(0);
  std::uniform_real_distribution<double> u(0.55, 0.95);
  std::vector<double> trans(n * 4), init(n * 2), out(n * T);
  for (std::size_t t = 0; t < n; ++t) {
    const double a = u(gen), h = u(gen);
    trans[4 * t + 0] = a; trans[4 * t + 1] = 1 - a; trans[4 * t + 2] = 1 - h; trans[4 * t + 3] = h;
    const double pi0 = (1 - h) / ((1 - a) + (1 - h));  // stationary law of the 2-state chain
    init[2 * t] = pi0; init[2 * t + 1] = 1 - pi0;
  }
  const std::int64_t values[2] = {0, 1};
  puffer::models::MarkovChainSpec spec{trans.data(), init.data(), n, k, values, T};
  for (auto _ : state) {
    puffer::models::w_inf_all_pairs(spec, threads, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n));
}
BENCHMARK(BM_MarkovWInf)->Args({100, 1})->Args({100, 2})->Unit(benchmark::kMillisecond);
