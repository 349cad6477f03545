// Whole-buffer passes on the worker pool (see buffers.hpp).
#include "sampling/buffers.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/parallel.hpp"

namespace puffer::sampling {

namespace {

template <class T>
long long first_nonfinite_impl(const T* v, std::size_t n, unsigned threads) {
  const std::size_t task = std::size_t(1) << 16;
  const std::size_t n_tasks = (n + task - 1) / task;
  std::vector<long long> first(n_tasks, -1);  // one slot per task: no shared writes
  parallel_for(n_tasks, threads, [&](std::size_t t) {
    const std::size_t lo = t * task, hi = std::min(n, lo + task);
    bool bad = false;
    for (std::size_t i = lo; i < hi; ++i) bad |= !(v[i] - v[i] == T(0));  // vectorizable finiteness test
    if (!bad) return;
    for (std::size_t i = lo; i < hi; ++i) {
      if (!std::isfinite(v[i])) {
        first[t] = static_cast<long long>(i);
        return;
      }
    }
  });
  for (long long f : first)
    if (f >= 0) return f;
  return -1;
}

}  // namespace

long long first_nonfinite(const double* v, std::size_t n, unsigned threads) {
  return first_nonfinite_impl(v, n, threads);
}

long long first_nonfinite(const float* v, std::size_t n, unsigned threads) {
  return first_nonfinite_impl(v, n, threads);
}

void fill_constant(double* out, std::size_t n, double value, unsigned threads) {
  const std::size_t task = std::size_t(1) << 15;
  parallel_for((n + task - 1) / task, threads, [&](std::size_t t) {
    const std::size_t lo = t * task, hi = std::min(n, lo + task);
    std::fill(out + lo, out + hi, value);
  });
}

}  // namespace puffer::sampling
