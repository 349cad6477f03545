// Peak multiply-add rate of one core: 16 independent FMA chains (enough to cover the FMA
// latency on two ports). Compiled by bench/suites/long_chains.py twice: with -mavx512f (8
// doubles per instruction) and with -mavx2 -mfma (4). Prints G double multiply-adds per second of
// the thread's CPU time (on a shared machine, wall time would count other jobs' time slices).
#include <immintrin.h>

#include <time.h>

#include <cstdio>

#if defined(__AVX512F__)
typedef __m512d V;
static const int kLanes = 8;
static inline V splat(double v) { return _mm512_set1_pd(v); }
static inline V fma(V x, V y, V z) { return _mm512_fmadd_pd(x, y, z); }
static inline double first(V x) { return _mm512_cvtsd_f64(x); }
#else
typedef __m256d V;
static const int kLanes = 4;
static inline V splat(double v) { return _mm256_set1_pd(v); }
static inline V fma(V x, V y, V z) { return _mm256_fmadd_pd(x, y, z); }
static inline double first(V x) { return _mm256_cvtsd_f64(x); }
#endif

static double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

int main() {
  const long iters = 20000000;
  V acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = splat(1.0 + 1e-9 * i);
  const V a = splat(0.999999999), b = splat(1e-12);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = cpu_seconds();
    for (long n = 0; n < iters; ++n) {
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) acc[i] = fma(acc[i], a, b);
    }
    const double s = cpu_seconds() - t0;
    double r = 16.0 * kLanes * static_cast<double>(iters) / s;
    if (r > best) best = r;
  }
  double sink = 0;
  for (int i = 0; i < 16; ++i) sink += first(acc[i]);
  std::printf("%.2f %g\n", best / 1e9, sink);
  return 0;
}
