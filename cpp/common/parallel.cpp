#include "common/parallel.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace puffer {
namespace {

thread_local bool t_in_task = false;

class Pool {
 public:
  explicit Pool(unsigned n_workers) {
    for (unsigned i = 0; i < n_workers; ++i) workers_.emplace_back([this] { loop(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
  }
  unsigned size() const { return static_cast<unsigned>(workers_.size()); }

  // One job at a time; callers serialise on run_mu_.
  void run(std::size_t n_tasks, unsigned helpers, const std::function<void(std::size_t)>& body) {
    std::lock_guard<std::mutex> run_lk(run_mu_);
    {
      std::lock_guard<std::mutex> lk(mu_);
      body_ = &body;
      n_tasks_ = n_tasks;
      next_.store(0);
      error_ = nullptr;
      wanted_ = helpers;
      active_ = 0;
      ++generation_;
    }
    cv_.notify_all();
    work();
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [this] { return active_ == 0 && wanted_ == 0; });
    body_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void work() {
    t_in_task = true;
    for (;;) {
      std::size_t t = next_.fetch_add(1);
      if (t >= n_tasks_) break;
      try {
        (*body_)(t);
      } catch (...) {
        std::lock_guard<std::mutex> lk(mu_);
        if (!error_) error_ = std::current_exception();
        next_.store(n_tasks_);  // stop handing out tasks
      }
    }
    t_in_task = false;
  }
  void loop() {
    std::uint64_t seen = 0;
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      cv_.wait(lk, [&] { return stop_ || (generation_ != seen && wanted_ > 0); });
      if (stop_) return;
      seen = generation_;
      --wanted_;
      ++active_;
      lk.unlock();
      work();
      lk.lock();
      --active_;
      if (active_ == 0) done_cv_.notify_all();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mu_, run_mu_;
  std::condition_variable cv_, done_cv_;
  bool stop_ = false;
  std::uint64_t generation_ = 0;
  const std::function<void(std::size_t)>* body_ = nullptr;
  std::size_t n_tasks_ = 0;
  std::atomic<std::size_t> next_{0};
  std::exception_ptr error_;
  unsigned wanted_ = 0, active_ = 0;
};

std::mutex g_pool_mu;
// Pools are only ever added, never destroyed while the process lives: another thread may
// still be running a job on an older, smaller pool when a larger one is requested.
std::vector<Pool*> g_pools;
pid_t g_pool_pid = 0;

Pool& pool_with(unsigned n_workers) {
  std::lock_guard<std::mutex> lk(g_pool_mu);
  if (!g_pools.empty() && g_pool_pid != getpid()) {
    // After fork() the workers do not exist in the child: forget those pools (joining
    // them would hang) and build new ones.
    g_pools.clear();
  }
  if (g_pools.empty() || g_pools.back()->size() < n_workers) {
    unsigned n = std::max(n_workers, hardware_threads() > 1 ? hardware_threads() - 1 : 1u);
    g_pools.push_back(new Pool(n));
    g_pool_pid = getpid();
  }
  return *g_pools.back();
}

}  // namespace

unsigned hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1u : n;
}

void parallel_for(std::size_t n_tasks, unsigned threads, const std::function<void(std::size_t)>& body) {
  if (n_tasks == 0) return;
  if (threads == 0) threads = hardware_threads();
  if (threads > 256) threads = 256;
  if (threads == 1 || n_tasks == 1 || t_in_task) {
    for (std::size_t t = 0; t < n_tasks; ++t) body(t);
    return;
  }
  unsigned helpers = static_cast<unsigned>(std::min<std::size_t>(threads - 1, n_tasks - 1));
  pool_with(helpers).run(n_tasks, helpers, body);
}

}  // namespace puffer
