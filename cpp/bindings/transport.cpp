// Bindings of cpp/transport: numpy arrays <-> pointers, GIL released around every loop.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "bindings/registry.hpp"
#include "common/errors.hpp"
#include "common/parallel.hpp"
#include "transport/transport.hpp"

namespace py = pybind11;
namespace tr = puffer::transport;

namespace {

using darr = py::array_t<double, py::array::c_style | py::array::forcecast>;
using iarr = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

std::size_t len1(const py::array& a, const char* name) {
  if (a.ndim() != 1) throw puffer::InvalidArgument(name, "ndim " + std::to_string(a.ndim()), "a 1-D array");
  return static_cast<std::size_t>(a.shape(0));
}

void same_len(std::size_t a, std::size_t b, const char* name) {
  if (a != b)
    throw puffer::InvalidArgument(name, "length " + std::to_string(b), "one mass per atom (" + std::to_string(a) + ")");
}

py::array_t<std::int64_t> to_np(const std::vector<std::int64_t>& v) {
  py::array_t<std::int64_t> a(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}
py::array_t<double> to_np(const std::vector<double>& v) {
  py::array_t<double> a(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}
py::array_t<std::uint64_t> to_np(const std::vector<std::uint64_t>& v) {
  py::array_t<std::uint64_t> a(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

tr::i128 to_i128(const py::int_& v) {
  py::object mask = py::int_((std::uint64_t)~0ULL);
  py::object lo = v.attr("__and__")(mask);
  py::object hi = v.attr("__rshift__")(py::int_(64));
  std::int64_t h = hi.cast<std::int64_t>();
  std::uint64_t l = lo.cast<std::uint64_t>();
  return (static_cast<tr::i128>(h) << 64) | static_cast<tr::i128>(l);
}

py::tuple plan_tuple(const tr::Plan& p) {
  return py::make_tuple(to_np(p.src), to_np(p.dst), to_np(p.mass), to_np(p.mass_hi), to_np(p.mass_lo),
                        p.near_ties);
}

}  // namespace

PUFFER_BIND_SUBMODULE(transport, m) {
  m.attr("DEFAULT_RTOL") = tr::kDefaultRtol;
  m.attr("DEFAULT_SUM_TOL") = tr::kDefaultSumTol;

  m.def("w_inf_1d",
        [](darr x, darr p, darr y, darr q, double rtol, double sum_tol) {
          std::size_t n = len1(x, "atoms_p"), mm = len1(y, "atoms_q");
          same_len(n, len1(p, "probs_p"), "probs_p");
          same_len(mm, len1(q, "probs_q"), "probs_q");
          py::gil_scoped_release rel;
          return tr::w_inf_1d(x.data(), p.data(), n, y.data(), q.data(), mm, rtol, sum_tol);
        },
        py::arg("atoms_p"), py::arg("probs_p"), py::arg("atoms_q"), py::arg("probs_q"),
        py::arg("rtol") = tr::kDefaultRtol, py::arg("sum_tol") = tr::kDefaultSumTol);

  m.def("coupling_1d",
        [](darr x, darr p, darr y, darr q, double rtol, double sum_tol) {
          std::size_t n = len1(x, "atoms_p"), mm = len1(y, "atoms_q");
          same_len(n, len1(p, "probs_p"), "probs_p");
          same_len(mm, len1(q, "probs_q"), "probs_q");
          tr::Plan plan;
          {
            py::gil_scoped_release rel;
            plan = tr::coupling_1d(x.data(), p.data(), n, y.data(), q.data(), mm, rtol, sum_tol);
          }
          return plan_tuple(plan);
        },
        py::arg("atoms_p"), py::arg("probs_p"), py::arg("atoms_q"), py::arg("probs_q"),
        py::arg("rtol") = tr::kDefaultRtol, py::arg("sum_tol") = tr::kDefaultSumTol);

  m.def("coupling_1d_exact",
        [](darr x, iarr a, std::int64_t den_p, darr y, iarr b, std::int64_t den_q) {
          std::size_t n = len1(x, "atoms_p"), mm = len1(y, "atoms_q");
          same_len(n, len1(a, "numerators_p"), "numerators_p");
          same_len(mm, len1(b, "numerators_q"), "numerators_q");
          tr::Plan plan;
          {
            py::gil_scoped_release rel;
            plan = tr::coupling_1d_exact(x.data(), a.data(), n, den_p, y.data(), b.data(), mm, den_q);
          }
          return plan_tuple(plan);
        });

  m.def("w_inf_keys",
        [](darr x, darr kp, darr y, darr kq, double tol) {
          std::size_t n = len1(x, "atoms_p"), mm = len1(y, "atoms_q");
          same_len(n, len1(kp, "keys_p"), "keys_p");
          same_len(mm, len1(kq, "keys_q"), "keys_q");
          py::gil_scoped_release rel;
          return tr::w_inf_keys(x.data(), kp.data(), n, y.data(), kq.data(), mm, tol);
        });

  m.def("w_inf_1d_batch",
        [](darr x, darr p, iarr offp, darr y, darr q, iarr offq, unsigned threads, double rtol, double sum_tol) {
          std::size_t np = len1(x, "atoms_p"), nq = len1(y, "atoms_q");
          same_len(np, len1(p, "probs_p"), "probs_p");
          same_len(nq, len1(q, "probs_q"), "probs_q");
          std::size_t kp = len1(offp, "offsets_p"), kq = len1(offq, "offsets_q");
          if (kp < 1) throw puffer::InvalidArgument("offsets_p", "an empty array", "K + 1 offsets");
          if (kp != kq)
            throw puffer::InvalidArgument("offsets_q", "length " + std::to_string(kq),
                                          "as many offsets as offsets_p (" + std::to_string(kp) + ")");
          puffer::require(threads <= puffer::kMaxThreads, "threads", threads, "0 (all cores) to 256 (puffer.sampling.MAX_THREADS)");
          std::size_t K = kp - 1;
          py::array_t<double> out(static_cast<py::ssize_t>(K));
          double* o = out.mutable_data();
          {
            py::gil_scoped_release rel;
            tr::w_inf_1d_batch(x.data(), p.data(), offp.data(), np, y.data(), q.data(), offq.data(), nq, K, o,
                               threads, rtol, sum_tol);
          }
          return out;
        },
        py::arg("atoms_p"), py::arg("probs_p"), py::arg("offsets_p"), py::arg("atoms_q"), py::arg("probs_q"),
        py::arg("offsets_q"), py::arg("threads") = 0, py::arg("rtol") = tr::kDefaultRtol,
        py::arg("sum_tol") = tr::kDefaultSumTol);

  m.def("w_inf_nd",
        [](darr X, darr p, darr Y, darr q, int norm, bool want_plan, double rtol, double sum_tol) {
          if (X.ndim() != 2 || Y.ndim() != 2 || X.shape(1) != Y.shape(1))
            throw puffer::InvalidArgument("atoms", "mismatched shapes", "two (n, d) arrays with the same d");
          std::size_t n = X.shape(0), mm = Y.shape(0), d = X.shape(1);
          same_len(n, len1(p, "probs_p"), "probs_p");
          same_len(mm, len1(q, "probs_q"), "probs_q");
          tr::Bottleneck r;
          {
            py::gil_scoped_release rel;
            r = tr::w_inf_nd(X.data(), p.data(), n, Y.data(), q.data(), mm, d, norm, want_plan, rtol, sum_tol);
          }
          return py::make_tuple(r.value, plan_tuple(r.plan));
        });

  m.def("w_inf_nd_exact",
        [](darr X, iarr a, std::int64_t den_p, darr Y, iarr b, std::int64_t den_q, int norm, bool want_plan) {
          if (X.ndim() != 2 || Y.ndim() != 2 || X.shape(1) != Y.shape(1))
            throw puffer::InvalidArgument("atoms", "mismatched shapes", "two (n, d) arrays with the same d");
          std::size_t n = X.shape(0), mm = Y.shape(0), d = X.shape(1);
          same_len(n, len1(a, "numerators_p"), "numerators_p");
          same_len(mm, len1(b, "numerators_q"), "numerators_q");
          tr::Bottleneck r;
          {
            py::gil_scoped_release rel;
            r = tr::w_inf_nd_exact(X.data(), a.data(), n, den_p, Y.data(), b.data(), mm, den_q, d, norm, want_plan);
          }
          return py::make_tuple(r.value, plan_tuple(r.plan));
        });

  m.def("near_radius_1d",
        [](darr x, darr p, darr y, darr q, double delta, double rtol, double sum_tol) {
          std::size_t n = len1(x, "atoms_p"), mm = len1(y, "atoms_q");
          same_len(n, len1(p, "probs_p"), "probs_p");
          same_len(mm, len1(q, "probs_q"), "probs_q");
          py::gil_scoped_release rel;
          return tr::near_radius_1d(x.data(), p.data(), n, y.data(), q.data(), mm, delta, rtol, sum_tol);
        });

  m.def("near_radius_1d_exact",
        [](darr x, iarr a, std::int64_t den_p, darr y, iarr b, std::int64_t den_q, py::int_ need) {
          std::size_t n = len1(x, "atoms_p"), mm = len1(y, "atoms_q");
          same_len(n, len1(a, "numerators_p"), "numerators_p");
          same_len(mm, len1(b, "numerators_q"), "numerators_q");
          tr::i128 nd = to_i128(need);
          py::gil_scoped_release rel;
          return tr::near_radius_1d_exact(x.data(), a.data(), n, den_p, y.data(), b.data(), mm, den_q, nd);
        });
}
