// A persistent worker pool shared by every kernel that loops (samplers, batch transport,
// batch quadrature). Work is split into tasks by index; which thread runs a task never
// changes a result, so kernels stay bitwise reproducible for any thread count.
#pragma once
#include <cstddef>
#include <functional>

namespace puffer {

// The largest `threads=` any kernel accepts (documented in puffer.sampling.MAX_THREADS).
constexpr unsigned kMaxThreads = 256;

// Number of hardware threads (>= 1).
unsigned hardware_threads();

// Runs body(t) for t in [0, n_tasks) on up to `threads` threads (0 = all cores, at most
// kMaxThreads, else InvalidArgument); the calling thread participates. Calls from inside a
// task run serially (no nested pools). If the system refuses to start worker threads (address
// space or process limits), the work runs on the threads that did start -- at worst on the
// calling thread alone: the result is the same, only slower. The first exception thrown by a
// task is rethrown here after all tasks stop. Safe across fork(): pthread_atfork handlers make
// the child forget the parent's pools (their workers do not exist there) and never inherit a
// pool mutex held by another thread.
void parallel_for(std::size_t n_tasks, unsigned threads, const std::function<void(std::size_t)>& body);

// Number of worker threads in the largest pool started so far (tests / diagnostics).
unsigned pool_workers();

// Pool self-test (tests, TSan): sum of i^2 for i < n, one task per 1024 values, each task
// writing its own slot.
double parallel_sum_of_squares(std::size_t n, unsigned threads);

// Test hook: another thread holds the pool mutex for `ms` milliseconds (what a thread busy
// creating a pool does); returns once that thread holds it, so a fork() right after the call
// always meets the mutex held.
void hold_pool_mutex_for_tests(unsigned ms);

}  // namespace puffer
