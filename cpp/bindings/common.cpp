// Bindings of cpp/common: thread-pool facts used by the facade and tests.
#include <pybind11/pybind11.h>

#include "bindings/registry.hpp"
#include "common/errors.hpp"
#include "common/parallel.hpp"

namespace py = pybind11;

PUFFER_BIND_SUBMODULE(common, m) {
  m.def("parallel_sum_of_squares",
        [](std::size_t n, unsigned threads) {
          py::gil_scoped_release release;
          return puffer::parallel_sum_of_squares(n, threads);
        },
        py::arg("n"), py::arg("threads") = 0,
        "Exercises the pool end to end (tests): sum of i^2 for i < n, one task per 1024.");
  m.def("pool_workers", &puffer::pool_workers, "Worker threads of the largest pool started so far.");
  m.def("max_threads", [] { return puffer::kMaxThreads; }, "The largest threads= any kernel accepts.");
  m.def("hold_pool_mutex_for_tests", &puffer::hold_pool_mutex_for_tests, py::arg("ms"),
        "Test hook: a background thread holds the pool mutex for ms milliseconds; returns once it holds it "
        "(fork tests).");
}
