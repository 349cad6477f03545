// puffer._core: exception translation and the submodules registered by each kernel's
// binding file. Only this folder knows about Python.
#include <pybind11/pybind11.h>

#include "bindings/registry.hpp"
#include "common/errors.hpp"
#include "common/parallel.hpp"

namespace py = pybind11;

namespace puffer::bind {
std::vector<Entry>& registry() {
  static std::vector<Entry> r;
  return r;
}
}  // namespace puffer::bind

PYBIND11_MODULE(_core, m) {
  m.doc() = "puffer's compiled core (transport, Renyi quadrature, samplers). Use the puffer facade.";

  // C++ errors become puffer exceptions (ValueError / ArithmeticError subclasses).
  py::module_ errors = py::module_::import("puffer.errors");
  static py::object ParameterError = errors.attr("ParameterError");
  static py::object NumericalError = errors.attr("NumericalError");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const puffer::InvalidArgument& e) {
      py::object exc = ParameterError(e.param(), py::str(e.value()), e.expected());
      PyErr_SetObject(ParameterError.ptr(), exc.ptr());
    } catch (const puffer::NumericalFailure& e) {
      PyErr_SetString(NumericalError.ptr(), e.what());
    }
  });

  m.def("hardware_threads", &puffer::hardware_threads, "Number of hardware threads seen by the core.");

  for (const auto& entry : puffer::bind::registry()) {
    py::module_ sub = m.def_submodule(entry.name);
    entry.init(sub);
  }
}
