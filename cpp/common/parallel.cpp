#include "common/parallel.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "common/errors.hpp"

namespace puffer {
namespace {

thread_local bool t_in_task = false;

class Pool {
 public:
  // Starts up to n_workers threads. std::thread throws std::system_error when the system
  // refuses (EAGAIN under RLIMIT_NPROC / RLIMIT_AS): keep the ones that started (size() tells
  // how many) instead of letting the exception destroy joinable threads (std::terminate).
  explicit Pool(unsigned n_workers) {
    workers_.reserve(n_workers);
    for (unsigned i = 0; i < n_workers; ++i) {
      try {
        workers_.emplace_back([this] { loop(); });
      } catch (const std::system_error&) {
        break;
      } catch (const std::bad_alloc&) {
        break;
      }
    }
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

  // One job at a time; callers serialise on run_mu_. helpers <= size(), else the job would
  // wait for workers that do not exist.
  void run(std::size_t n_tasks, unsigned helpers, const std::function<void(std::size_t)>& body) {
    helpers = std::min(helpers, size());
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

// Heap-allocated and never destroyed: no static destructor can race a running job at exit, and
// the fork handlers below may run at any time.
std::mutex& pool_mu() {
  static std::mutex* m = new std::mutex();
  return *m;
}
// Pools are only ever added, never destroyed while the process lives: another thread may
// still be running a job on an older, smaller pool when a larger one is requested.
std::vector<Pool*>& pools() {
  static std::vector<Pool*>* v = new std::vector<Pool*>();
  return *v;
}
// A pool that could not start every worker it asked for: do not retry on every call.
bool g_pool_limited = false;

// fork(): the child has only the forking thread. If another thread held pool_mu() (creating a
// pool) the child would block on it forever; the prepare handler takes the mutex so no other
// thread holds it at the fork, and the child releases it after forgetting the parent's pools
// (their workers do not exist in the child; they are leaked, never joined).
void atfork_prepare() { pool_mu().lock(); }
void atfork_parent() { pool_mu().unlock(); }
// The test hook's holder thread (below): created on first use, forgotten in a fork child.
struct Holder;
Holder* g_holder = nullptr;

void atfork_child() {
  pools().clear();
  g_pool_limited = false;
  t_in_task = false;
  g_holder = nullptr;  // its thread does not exist in the child (leaked, like the pools)
  pool_mu().unlock();
}
const bool g_atfork_registered = [] {
  pool_mu();
  pools();
  return pthread_atfork(atfork_prepare, atfork_parent, atfork_child) == 0;
}();

Pool* pool_with(unsigned n_workers) {
  (void)g_atfork_registered;
  std::lock_guard<std::mutex> lk(pool_mu());
  auto& ps = pools();
  if (ps.empty() || (ps.back()->size() < n_workers && !g_pool_limited)) {
    unsigned n = std::max(n_workers, hardware_threads() > 1 ? hardware_threads() - 1 : 1u);
    auto* p = new Pool(n);
    if (p->size() < n) g_pool_limited = true;
    if (p->size() == 0 || (!ps.empty() && p->size() <= ps.back()->size())) {
      delete p;  // no worker started, or no better than what we had (joins what did start)
    } else {
      ps.push_back(p);
    }
  }
  return ps.empty() ? nullptr : ps.back();
}

}  // namespace

unsigned hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1u : n;
}

unsigned pool_workers() {
  std::lock_guard<std::mutex> lk(pool_mu());
  return pools().empty() ? 0u : pools().back()->size();
}

namespace {
// One persistent thread serves every hold and waits on a condition variable in between. A thread
// per hold would still be tearing itself down (returning its allocator caches) when the fork that
// follows the release lands, and an allocator without fork handlers (GCC 12's AddressSanitizer
// runtime) then leaves its lock held in the child: a hang of that runtime, not of the pool.
struct Holder {
  std::mutex mu;
  std::condition_variable cv;
  unsigned ms = 0;
  std::uint64_t asked = 0, served = 0;  // requests made / holds begun
};

void holder_loop(Holder* h) {
  std::unique_lock<std::mutex> lk(h->mu);
  for (;;) {
    h->cv.wait(lk, [h] { return h->asked != h->served; });
    const unsigned ms = h->ms;
    pool_mu().lock();
    h->served = h->asked;
    h->cv.notify_all();
    lk.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    pool_mu().unlock();
    lk.lock();
  }
}
}  // namespace

void hold_pool_mutex_for_tests(unsigned ms) {
  if (g_holder == nullptr) {
    auto* h = new Holder();
    std::thread(holder_loop, h).detach();
    g_holder = h;
  }
  Holder* h = g_holder;
  std::unique_lock<std::mutex> lk(h->mu);
  h->ms = ms;
  const std::uint64_t ticket = ++h->asked;
  h->cv.notify_all();
  h->cv.wait(lk, [h, ticket] { return h->served >= ticket; });
}

void parallel_for(std::size_t n_tasks, unsigned threads, const std::function<void(std::size_t)>& body) {
  require(threads <= kMaxThreads, "threads", threads, "0 (all cores) to 256 (puffer.sampling.MAX_THREADS)");
  if (n_tasks == 0) return;
  if (threads == 0) threads = std::min(hardware_threads(), kMaxThreads);
  if (threads == 1 || n_tasks == 1 || t_in_task) {
    for (std::size_t t = 0; t < n_tasks; ++t) body(t);
    return;
  }
  unsigned helpers = static_cast<unsigned>(std::min<std::size_t>(threads - 1, n_tasks - 1));
  Pool* pool = pool_with(helpers);
  if (pool == nullptr) {  // the system would not start a single worker: run here
    for (std::size_t t = 0; t < n_tasks; ++t) body(t);
    return;
  }
  pool->run(n_tasks, helpers, body);
}

double parallel_sum_of_squares(std::size_t n, unsigned threads) {
  require(threads <= kMaxThreads, "threads", threads, "0 (all cores) to 256 (puffer.sampling.MAX_THREADS)");
  const std::size_t n_tasks = (n + 1023) / 1024;
  std::vector<double> part(n_tasks, 0.0);
  parallel_for(n_tasks, threads, [&](std::size_t t) {
    double s = 0.0;
    for (std::size_t i = t * 1024; i < std::min(n, (t + 1) * 1024); ++i) s += double(i) * double(i);
    part[t] = s;
  });
  double s = 0.0;
  for (double x : part) s += x;
  return s;
}

}  // namespace puffer
