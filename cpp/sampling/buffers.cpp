// Whole-buffer passes on the worker pool (see buffers.hpp).
#include "sampling/buffers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/parallel.hpp"

namespace puffer::sampling {

namespace {

// The IEEE-754 layout a finiteness test needs: NaN and +-inf are the values whose exponent field
// is all ones.
template <class T> struct Layout;
template <> struct Layout<double> {
  using U = std::uint64_t;
  static constexpr U kExp = 0x7ff0000000000000ull, kExpOne = U(1) << 52;
};
template <> struct Layout<float> {
  using U = std::uint32_t;
  static constexpr U kExp = 0x7f800000u, kExpOne = U(1) << 23;
};

// Whether v[0, n) holds a NaN or an inf, tested on the bits: (exponent field) + 1 carries into
// the sign bit exactly when the field is all ones, so one OR-reduction of integers answers for
// the block, which the compiler vectorizes for any target. (The float test !(v - v == 0) stayed
// scalar on the baseline x86-64 target the core is built for: 4-6x slower than numpy.)
template <class T>
bool any_nonfinite(const T* v, std::size_t n) {
  using L = Layout<T>;
  typename L::U acc = 0;
  for (std::size_t i = 0; i < n; ++i) {
    typename L::U b;
    std::memcpy(&b, v + i, sizeof b);
    acc |= (b & L::kExp) + L::kExpOne;
  }
  return (acc >> (8 * sizeof acc - 1)) != 0;
}

template <class T>
long long first_nonfinite_impl(const T* v, std::size_t n, unsigned threads) {
  const std::size_t task = std::size_t(1) << 16;
  const std::size_t n_tasks = (n + task - 1) / task;
  std::vector<long long> first(n_tasks, -1);  // one slot per task: no shared writes
  parallel_for(n_tasks, threads, [&](std::size_t t) {
    const std::size_t lo = t * task, hi = std::min(n, lo + task);
    if (!any_nonfinite(v + lo, hi - lo)) return;
    for (std::size_t i = lo; i < hi; ++i) {  // a bad block: locate its first bad value
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
