// Cancellation and progress of a long kernel call, shared by every kernel that loops for
// seconds (Markov laws, Kantorovich, ...). The caller (cpp/bindings/job.hpp for Python) owns a
// JobControl, runs the kernel on another thread and, from its own thread, sets `cancel` (Ctrl-C)
// and reads `done` / `total` (progress). Kernels call poll() between units of work of a few
// milliseconds at most and advance() after each unit; poll() throws Cancelled, which unwinds
// through parallel_for (the pool stops handing out tasks and stays reusable).
#pragma once
#include <atomic>
#include <cstdint>
#include <stdexcept>

namespace puffer {

// Thrown by JobControl::poll() once cancellation was requested.
class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("computation cancelled") {}
};

struct JobControl {
  std::atomic<bool> cancel{false};
  std::atomic<std::uint64_t> done{0};
  std::atomic<std::uint64_t> total{0};  // units of work (set by the kernel or by its caller)

  void poll() const {
    if (cancel.load(std::memory_order_relaxed)) throw Cancelled();
  }
  void advance(std::uint64_t n = 1) { done.fetch_add(n, std::memory_order_relaxed); }
};

// Null-safe helpers for kernels that take an optional JobControl*.
inline void poll(const JobControl* c) {
  if (c != nullptr) c->poll();
}
inline void advance(JobControl* c, std::uint64_t n = 1) {
  if (c != nullptr) c->advance(n);
}

}  // namespace puffer
