// A persistent worker pool shared by every kernel that loops (samplers, batch transport,
// batch quadrature). Work is split into tasks by index; which thread runs a task never
// changes a result, so kernels stay bitwise reproducible for any thread count.
#pragma once
#include <cstddef>
#include <functional>

namespace puffer {

// Number of hardware threads (>= 1).
unsigned hardware_threads();

// Runs body(t) for t in [0, n_tasks) on up to `threads` threads (0 = all cores); the
// calling thread participates. Calls from inside a task run serially (no nested pools).
// The first exception thrown by a task is rethrown here after all tasks stop.
void parallel_for(std::size_t n_tasks, unsigned threads, const std::function<void(std::size_t)>& body);

}  // namespace puffer
