// Argument conversions shared by the bindings of cpp/renyi (renyi.cpp, profile.cpp): the family
// shape from its three numbers, an element-wise map over two arrays (GIL released), and a Python
// log-density callable as a LogPdfBatch (the GIL is held while it runs: it calls into Python).
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstring>
#include <string>

#include "common/errors.hpp"
#include "renyi/renyi.hpp"

namespace puffer::bind {

inline renyi::Shape make_shape(double k, double nu, double beta) {
  renyi::Shape s;
  s.k = k;
  s.nu = nu;
  s.beta = beta;
  return s;
}

using Arr = pybind11::array_t<double, pybind11::array::c_style | pybind11::array::forcecast>;

// A new array out[i] from (a[i], b[i]) of two flat arrays of one length (else an error naming the
// second, `b_name`, with what was `expected`): `batch(pa, pb, po, n)` runs with the GIL released.
template <class Batch>
Arr map_pairs(const Arr& a, const Arr& b, const char* b_name, const char* expected, Batch batch) {
  require(a.size() == b.size(), b_name, b.size(), expected);
  Arr out(a.size());
  const double* pa = a.data();
  const double* pb = b.data();
  double* po = out.mutable_data();
  const std::size_t n = static_cast<std::size_t>(a.size());
  {
    pybind11::gil_scoped_release release;
    batch(pa, pb, po, n);
  }
  return out;
}

inline renyi::LogPdfBatch wrap_logpdf(pybind11::function fn) {
  return renyi::LogPdfBatch([fn](const double* x, std::size_t n, double* out) {
    Arr xs(static_cast<pybind11::ssize_t>(n));
    std::memcpy(xs.mutable_data(), x, n * sizeof(double));
    pybind11::object r = fn(xs);
    Arr ys = Arr::ensure(r);
    if (!ys || static_cast<std::size_t>(ys.size()) != n)
      throw InvalidArgument("logpdf", "a callable returning " + std::string(pybind11::str(pybind11::repr(r)).cast<std::string>().substr(0, 60)),
                            "a callable mapping a float64 array of shape (n,) to log-densities of shape (n,)");
    std::memcpy(out, ys.data(), n * sizeof(double));
  });
}

}  // namespace puffer::bind
