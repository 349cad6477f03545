// Bindings of cpp/accounting: group factor, extended product, multi-source BFS and the
// footprint edge maxima of the composition accountant.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "accounting/accounting.hpp"
#include "bindings/registry.hpp"
#include "common/errors.hpp"

namespace py = pybind11;
namespace acc = puffer::accounting;

namespace {
using DArr = py::array_t<double, py::array::c_style | py::array::forcecast>;
using IArr = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;
using BArr = py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>;

std::size_t rows_of(const IArr& indptr, const IArr& indices) {
  puffer::require(indptr.ndim() == 1 && indptr.shape(0) >= 1, "indptr", indptr.ndim(), "a 1-D offset array of length n + 1");
  puffer::require(indices.ndim() == 1, "indices", indices.ndim(), "a 1-D array");
  const std::size_t n = static_cast<std::size_t>(indptr.shape(0)) - 1;
  puffer::require(indptr.data()[n] == indices.shape(0), "indptr[-1]", indptr.data()[n], "len(indices)");
  return n;
}

py::tuple result(const acc::FootprintMax& r) {
  return py::make_tuple(r.value, r.s, r.t, r.terms, r.pairs_evaluated);
}
}  // namespace

PUFFER_BIND_SUBMODULE(accounting, m) {
  m.def("group_factor", &acc::group_factor, py::arg("n"), py::arg("eps"),
        "[n]_eps = expm1(eps n)/expm1(eps), rounded up; [n]_0 = n, [inf]_eps = inf.");
  m.def("ext_mul", &acc::ext_mul, py::arg("a"), py::arg("n"), "a * n with 0 * inf = inf.");
  m.def(
      "bfs_multi",
      [](const IArr& indptr, const IArr& indices, const IArr& sources, std::int64_t cap) {
        const std::size_t n = rows_of(indptr, indices);
        for (py::ssize_t q = 0; q < indices.shape(0); ++q)
          puffer::require(indices.data()[q] >= 0 && static_cast<std::size_t>(indices.data()[q]) < n, "indices",
                          indices.data()[q], "vertex indices in [0, n_vertices)");
        py::array_t<std::int64_t> out(n);
        std::int64_t* o = out.mutable_data();
        {
          py::gil_scoped_release release;
          acc::bfs_multi(indptr.data(), indices.data(), n, sources.data(), static_cast<std::size_t>(sources.size()),
                         cap, o);
        }
        return out;
      },
      py::arg("indptr"), py::arg("indices"), py::arg("sources"), py::arg("cap") = -1,
      "Multi-source BFS distances on a CSR graph; -1 where not reached (within cap steps).");
  m.def(
      "footprint_max_single",
      [](const IArr& indptr, const IArr& indices, const DArr& t1) {
        const std::size_t n = rows_of(indptr, indices);
        puffer::require(t1.ndim() == 1, "t1", t1.ndim(), "a 1-D array of per-release terms");
        acc::FootprintMax r;
        {
          py::gil_scoped_release release;
          r = acc::footprint_max_single(indptr.data(), indices.data(), n, t1.data(), static_cast<std::size_t>(t1.shape(0)));
        }
        return result(r);
      },
      py::arg("indptr"), py::arg("indices"), py::arg("t1"),
      "max over footprints S of sum_{i in S} t1_i: (value, s, -1, terms, evaluated).");
  m.def(
      "footprint_max_pair",
      [](const IArr& indptr, const IArr& indices, const BArr& self_ok, const DArr& t1, const DArr& t2) {
        const std::size_t n = rows_of(indptr, indices);
        puffer::require(self_ok.ndim() == 1 && static_cast<std::size_t>(self_ok.shape(0)) == n, "self_ok",
                        self_ok.ndim(), "one flag per footprint");
        puffer::require(t1.ndim() == 1 && t2.ndim() == 1 && t1.shape(0) == t2.shape(0), "t2", t2.ndim(),
                        "1-D arrays t1, t2 of equal length");
        acc::FootprintMax r;
        {
          py::gil_scoped_release release;
          r = acc::footprint_max_pair(indptr.data(), indices.data(), n, self_ok.data(), t1.data(), t2.data(),
                                      static_cast<std::size_t>(t1.shape(0)));
        }
        return result(r);
      },
      py::arg("indptr"), py::arg("indices"), py::arg("self_ok"), py::arg("t1"), py::arg("t2"),
      "max over footprint pairs (S, T) of sum_{S xor T} t1 + sum_{S and T} t2: (value, s, t, terms, evaluated).");
}
