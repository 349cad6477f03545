// Bindings of cpp/common: thread-pool facts used by the facade and tests.
#include <pybind11/functional.h>

#include "bindings/registry.hpp"
#include "common/errors.hpp"
#include "common/parallel.hpp"

namespace py = pybind11;

PUFFER_BIND_SUBMODULE(common, m) {
  m.def("parallel_sum_of_squares",
        [](std::size_t n, unsigned threads) {
          // Exercises the pool end to end (used by tests): sum of i^2 for i < n, one task per 1024.
          puffer::require(threads <= puffer::kMaxThreads, "threads", threads, "0 (all cores) to 256 (puffer.sampling.MAX_THREADS)");
          std::size_t n_tasks = (n + 1023) / 1024;
          std::vector<double> part(n_tasks, 0.0);
          {
            py::gil_scoped_release release;
            puffer::parallel_for(n_tasks, threads, [&](std::size_t t) {
              double s = 0.0;
              for (std::size_t i = t * 1024; i < std::min(n, (t + 1) * 1024); ++i) s += double(i) * double(i);
              part[t] = s;
            });
          }
          double s = 0.0;
          for (double x : part) s += x;
          return s;
        },
        py::arg("n"), py::arg("threads") = 0);
  m.def("pool_workers", &puffer::pool_workers, "Worker threads of the largest pool started so far.");
  m.def("max_threads", [] { return puffer::kMaxThreads; }, "The largest threads= any kernel accepts.");
  m.def("hold_pool_mutex_for_tests", &puffer::hold_pool_mutex_for_tests, py::arg("ms"),
        "Test hook: a background thread holds the pool mutex for ms milliseconds (fork tests).");
}
