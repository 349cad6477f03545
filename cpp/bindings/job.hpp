// Runs a long kernel call interruptibly (cpp/common/job.hpp): the kernel runs on a helper
// thread with the GIL released while the calling thread waits in ~100 ms slices; between slices
// it re-acquires the GIL, calls PyErr_CheckSignals() (Ctrl-C -> KeyboardInterrupt) and the
// optional Python progress callback progress(done, total). On a signal or a callback exception
// it sets JobControl::cancel, waits for the kernel to unwind (kernels poll every few ms; the
// thread pool stays usable) and re-raises the Python exception. Any kernel can use it:
//     puffer::JobControl ctl;  ctl.total = n_units;
//     puffer::bind::run_job(ctl, progress, [&] { kernel(..., &ctl); });
#pragma once
#include <pybind11/pybind11.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "common/job.hpp"

namespace puffer::bind {

// progress: None or a callable (done: int, total: int) -> Any, called about every 100 ms and
// once at the end. Must be called with the GIL held.
template <class F>
void run_job(JobControl& ctl, const pybind11::object& progress, F&& body) {
  namespace py = pybind11;
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  std::exception_ptr error;
  std::thread worker([&] {
    try {
      body();
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lk(mu);
    finished = true;
    cv.notify_all();
  });
  auto stop = [&] {  // cancel and wait for the kernel to unwind, GIL released
    ctl.cancel.store(true);
    py::gil_scoped_release release;
    worker.join();
  };
  for (;;) {
    bool fin;
    {
      py::gil_scoped_release release;
      std::unique_lock<std::mutex> lk(mu);
      fin = cv.wait_for(lk, std::chrono::milliseconds(100), [&] { return finished; });
    }
    if (fin) break;
    if (PyErr_CheckSignals() != 0) {
      stop();
      throw py::error_already_set();
    }
    if (!progress.is_none()) {
      try {
        progress(ctl.done.load(), ctl.total.load());
      } catch (...) {
        stop();
        throw;
      }
    }
  }
  worker.join();
  if (error) std::rethrow_exception(error);
  if (!progress.is_none()) progress(ctl.done.load(), ctl.total.load());
}

}  // namespace puffer::bind
