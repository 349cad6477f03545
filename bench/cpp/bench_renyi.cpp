// google-benchmark cases of the Renyi kernel (cpp/renyi): one certified shift divergence per
// iteration for each quadrature family, the closed forms, and the calibration root.
#include <benchmark/benchmark.h>

#include "renyi/renyi.hpp"

using puffer::renyi::Shape;

static Shape shape(double k, double nu, double beta) {
  Shape s;
  s.k = k;
  s.nu = nu;
  s.beta = beta;
  return s;
}

// args: family, alpha*10, u*100
static void BM_ShiftDivergence(benchmark::State& state, int family, Shape s, double alpha, double u) {
  for (auto _ : state) benchmark::DoNotOptimize(puffer::renyi::shift_divergence(family, s, alpha, u));
}
BENCHMARK_CAPTURE(BM_ShiftDivergence, gaussian_closed, 0, shape(0, 0, 0), 2.0, 1.0);
BENCHMARK_CAPTURE(BM_ShiftDivergence, laplace_closed, 1, shape(0, 0, 0), 10.0, 1.0);
BENCHMARK_CAPTURE(BM_ShiftDivergence, student_t3_a2_u1, 2, shape(4, 3, 0), 2.0, 1.0);
BENCHMARK_CAPTURE(BM_ShiftDivergence, cauchy_a10_u1, 2, shape(2, 1, 0), 10.0, 1.0);
BENCHMARK_CAPTURE(BM_ShiftDivergence, gencauchy3_a5_u2, 2, shape(3, 1, 0), 5.0, 2.0);
BENCHMARK_CAPTURE(BM_ShiftDivergence, logistic_a2_u1, 3, shape(0, 0, 0), 2.0, 1.0);
BENCHMARK_CAPTURE(BM_ShiftDivergence, gengauss15_a3_u1, 4, shape(0, 0, 1.5), 3.0, 1.0);
BENCHMARK_CAPTURE(BM_ShiftDivergence, student_t3_a1e4_u1000, 2, shape(4, 3, 0), 1e4, 1000.0);
BENCHMARK_CAPTURE(BM_ShiftDivergence, student_t3_a1p01_u1em3, 2, shape(4, 3, 0), 1.01, 1e-3);

static void BM_MaxShift(benchmark::State& state, int family, Shape s) {
  for (auto _ : state) benchmark::DoNotOptimize(puffer::renyi::max_shift(family, s, 2.0, 1.0));
}
BENCHMARK_CAPTURE(BM_MaxShift, student_t3, 2, shape(4, 3, 0));
BENCHMARK_CAPTURE(BM_MaxShift, logistic, 3, shape(0, 0, 0));
BENCHMARK_CAPTURE(BM_MaxShift, laplace, 1, shape(0, 0, 0));
