// Bindings of the partially-private-data samplers (cpp/sampling/partial.hpp): numpy <-> pointers,
// kernels run without the GIL. Streams come from puffer.sampling.Stream (tag 3 in the word).
#include <pybind11/numpy.h>

#include <string>

#include "bindings/registry.hpp"
#include "common/errors.hpp"
#include "sampling/partial.hpp"

namespace py = pybind11;
namespace ps = puffer::sampling;

namespace {

template <class T>
T* ptr_of(const py::array& a, const char* name, bool writable, std::size_t want) {
  if (!a.dtype().is(py::dtype::of<T>()))
    throw puffer::InvalidArgument(name, "array of dtype " + std::string(py::str(a.dtype())),
                                  std::string("dtype ") + std::string(py::str(py::dtype::of<T>())));
  if (!(a.flags() & py::array::c_style)) throw puffer::InvalidArgument(name, "non-contiguous array", "a C-contiguous array");
  if (writable && !a.writeable()) throw puffer::InvalidArgument(name, "read-only array", "a writable array");
  if (want != std::size_t(-1) && std::size_t(a.size()) != want)
    throw puffer::InvalidArgument(name, "size " + std::to_string(a.size()), "size " + std::to_string(want));
  return static_cast<T*>(const_cast<void*>(a.data()));
}

}  // namespace

PUFFER_BIND_SUBMODULE(partial, m) {
  m.doc() = "Samplers of the partially-private-data mechanisms. Use puffer.partial.";
  m.def("knorm_fill",
        [](int norm_code, std::size_t d, double scale, std::uint32_t k0, std::uint32_t k1, std::uint32_t word,
           std::uint64_t start, std::size_t n, py::array out, py::object in, unsigned threads) {
          double* o = ptr_of<double>(out, "out", true, n * d);
          const double* i = in.is_none() ? nullptr : ptr_of<double>(in.cast<py::array>(), "center", false, n * d);
          py::gil_scoped_release rel;
          ps::knorm_fill(norm_code, d, scale, {k0, k1, word}, start, n, i, o, threads);
        },
        py::arg("norm_code"), py::arg("d"), py::arg("scale"), py::arg("k0"), py::arg("k1"), py::arg("word"),
        py::arg("start"), py::arg("n"), py::arg("out"), py::arg("center") = py::none(), py::arg("threads") = 0);
  m.def("categorical_fill",
        [](py::array logw, std::uint32_t k0, std::uint32_t k1, std::uint32_t word, std::uint64_t start,
           py::array out, unsigned threads) {
          const double* lw = ptr_of<double>(logw, "log_weights", false, std::size_t(-1));
          const std::size_t K = std::size_t(logw.size());
          std::int64_t* o = ptr_of<std::int64_t>(out, "out", true, std::size_t(-1));
          const std::size_t n = std::size_t(out.size());
          py::gil_scoped_release rel;
          ps::categorical_fill(lw, K, {k0, k1, word}, start, n, o, threads);
        },
        py::arg("log_weights"), py::arg("k0"), py::arg("k1"), py::arg("word"), py::arg("start"), py::arg("out"),
        py::arg("threads") = 0);
  m.def("trunc_laplace_fill",
        [](py::object center, double c0, double b, double lo, double hi, std::uint32_t k0, std::uint32_t k1,
           std::uint32_t word, std::uint64_t start, py::array out, unsigned threads) {
          double* o = ptr_of<double>(out, "out", true, std::size_t(-1));
          const std::size_t n = std::size_t(out.size());
          const double* c = center.is_none() ? nullptr : ptr_of<double>(center.cast<py::array>(), "center", false, n);
          py::gil_scoped_release rel;
          ps::trunc_laplace_fill(c, c0, b, lo, hi, {k0, k1, word}, start, n, o, threads);
        },
        py::arg("center"), py::arg("c0"), py::arg("b"), py::arg("lo"), py::arg("hi"), py::arg("k0"), py::arg("k1"),
        py::arg("word"), py::arg("start"), py::arg("out"), py::arg("threads") = 0);
  m.def("discrete_laplace_fill",
        [](double t, std::uint32_t k0, std::uint32_t k1, std::uint32_t word, std::uint64_t start, py::array out,
           py::object in, unsigned threads) {
          std::int64_t* o = ptr_of<std::int64_t>(out, "out", true, std::size_t(-1));
          const std::size_t n = std::size_t(out.size());
          const std::int64_t* i = in.is_none() ? nullptr : ptr_of<std::int64_t>(in.cast<py::array>(), "values", false, n);
          py::gil_scoped_release rel;
          ps::discrete_laplace_fill(t, {k0, k1, word}, start, n, i, o, threads);
        },
        py::arg("t"), py::arg("k0"), py::arg("k1"), py::arg("word"), py::arg("start"), py::arg("out"),
        py::arg("values") = py::none(), py::arg("threads") = 0);
  m.def("wem_lattice_mh",
        [](int mode, std::size_t J, py::array x, py::array s, py::object a, py::array y0, double kappa,
           py::array max_step, std::uint64_t steps, std::uint32_t k0, std::uint32_t k1, std::uint32_t word,
           std::uint64_t start, py::array out, py::array accepted, unsigned threads) {
          const std::size_t mm = std::size_t(s.size());
          const std::int64_t* xp = ptr_of<std::int64_t>(x, "x", false, mm * 2 * J);
          const std::int64_t* sp = ptr_of<std::int64_t>(s, "total", false, mm);
          const double* ap = a.is_none() ? nullptr : ptr_of<double>(a.cast<py::array>(), "concentration", false, mm * J);
          if (mode == 2 && ap == nullptr) throw puffer::InvalidArgument("concentration", "None", "an array (mode 2)");
          const std::int64_t* yp = ptr_of<std::int64_t>(y0, "start", false, mm * 2 * J);
          const std::int64_t* msp = ptr_of<std::int64_t>(max_step, "max_step", false, mm);
          std::int64_t* o = ptr_of<std::int64_t>(out, "out", true, mm * 2 * J);
          std::int64_t* acc = ptr_of<std::int64_t>(accepted, "accepted", true, mm);
          py::gil_scoped_release rel;
          ps::wem_lattice_mh(mode, J, mm, xp, sp, ap, yp, kappa, msp, steps, {k0, k1, word}, start, o, acc, threads);
        },
        py::arg("mode"), py::arg("J"), py::arg("x"), py::arg("total"), py::arg("concentration"), py::arg("start_state"),
        py::arg("kappa"), py::arg("max_step"), py::arg("steps"), py::arg("k0"), py::arg("k1"), py::arg("word"),
        py::arg("start"), py::arg("out"), py::arg("accepted"), py::arg("threads") = 0);
}
