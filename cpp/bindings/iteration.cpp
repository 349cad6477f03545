// Bindings of cpp/iteration: the taut-string shift allocation of amplification by iteration.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "bindings/registry.hpp"
#include "common/errors.hpp"
#include "iteration/taut_string.hpp"

namespace py = pybind11;

namespace {
using CArr = py::array_t<double, py::array::c_style | py::array::forcecast>;
}

PUFFER_BIND_SUBMODULE(iteration, m) {
  m.def(
      "taut_string",
      [](const CArr& s, py::object w) {
        puffer::require(s.ndim() == 1, "shifts", s.ndim(), "a 1-D array");
        const std::size_t T = static_cast<std::size_t>(s.shape(0));
        CArr wa;
        const double* wp = nullptr;
        if (!w.is_none()) {
          wa = w.cast<CArr>();
          puffer::require(wa.ndim() == 1 && static_cast<std::size_t>(wa.shape(0)) == T, "sigma2", wa.ndim(),
                          "one variance per step (same length as shifts)");
          wp = wa.data();
        }
        py::array_t<double> out(T);
        double* o = out.mutable_data();
        const double* sp = s.data();
        {
          py::gil_scoped_release release;
          puffer::iteration::taut_string_allocation(sp, wp, T, o);
        }
        return out;
      },
      py::arg("shifts"), py::arg("sigma2") = py::none(),
      "Greatest convex minorant allocation a_t of cumulative shifts (weights sigma2 or unit).");
}
