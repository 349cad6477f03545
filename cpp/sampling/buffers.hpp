// Whole-buffer passes of the noise facade on the worker pool: the first non-finite input value
// (checked before anything is written) and the memory-write ceiling the benchmark compares the
// samplers against. Plain pointers + lengths; threads as in parallel_for.
#pragma once
#include <cstddef>

namespace puffer::sampling {

// Index of the first NaN/inf of v[0, n), or -1 (a parallel read-only pass).
long long first_nonfinite(const double* v, std::size_t n, unsigned threads);
long long first_nonfinite(const float* v, std::size_t n, unsigned threads);

// out[0, n) = value with the samplers' task layout (2^15 values a task): nothing but stores.
void fill_constant(double* out, std::size_t n, double value, unsigned threads);

}  // namespace puffer::sampling
