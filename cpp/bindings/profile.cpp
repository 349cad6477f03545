// Bindings of cpp/renyi/hockey and cpp/renyi/conversion (puffer._core.profile): privacy profiles
// of additive noise and the Renyi -> (eps, delta) conversions, as certified upper bounds.
// Thin: numpy arrays <-> pointers; the GIL is released around every loop except the Custom path,
// whose log-density is a Python callable.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>
#include <vector>

#include "bindings/registry.hpp"
#include "bindings/renyi_args.hpp"
#include "common/errors.hpp"
#include "renyi/conversion.hpp"
#include "renyi/hockey.hpp"

namespace py = pybind11;
using puffer::bind::Arr;
using puffer::renyi::Shape;

PUFFER_BIND_SUBMODULE(profile, m) {
  m.doc() = "Privacy profiles (hockey-stick divergences) of additive noise and Renyi -> (eps, delta) conversions "
            "(certified upper bounds). Family codes as in puffer._core.renyi.Family.";

  m.def(
      "hockey_stick",
      [](int family, double k, double nu, double beta, const Arr& eps, const Arr& u, unsigned threads) {
        Shape s = puffer::bind::make_shape(k, nu, beta);
        puffer::renyi::check_shape(family, s);
        return puffer::bind::map_pairs(eps, u, "u", "as many shifts as eps values",
                                       [&](const double* pe, const double* pu, double* po, std::size_t n) {
                                         puffer::renyi::hockey_stick_batch(family, s, pe, pu, po, n, threads);
                                       });
      },
      py::arg("family"), py::arg("k"), py::arg("nu"), py::arg("beta"), py::arg("eps"), py::arg("u"),
      py::arg("threads") = 0,
      "Certified upper bounds on H_{e^eps}(zeta(. - u) || zeta) for flat arrays eps (>= 0) and u >= 0.");

  m.def(
      "hockey_stick1",
      [](int family, double k, double nu, double beta, double eps, double u) {
        return puffer::renyi::hockey_stick(family, puffer::bind::make_shape(k, nu, beta), eps, u);
      },
      py::arg("family"), py::arg("k"), py::arg("nu"), py::arg("beta"), py::arg("eps"), py::arg("u"),
      "Scalar version of hockey_stick.");

  m.def(
      "max_shift_hockey",
      [](int family, double k, double nu, double beta, double eps, double delta) {
        py::gil_scoped_release release;
        return puffer::renyi::max_shift_hockey(family, puffer::bind::make_shape(k, nu, beta), eps, delta);
      },
      py::arg("family"), py::arg("k"), py::arg("nu"), py::arg("beta"), py::arg("eps"), py::arg("delta"),
      "Largest standardized shift u with certified hockey_stick(eps; u) <= delta (from below, relative 1e-12).");

  m.def(
      "custom_hockey_stick",
      [](py::function logpdf, double eps, double u, double scale_hint, std::vector<double> breaks) {
        auto lp = puffer::bind::wrap_logpdf(logpdf);
        return puffer::renyi::custom_hockey_stick(lp, eps, u, scale_hint, breaks.data(), breaks.size());
      },
      py::arg("logpdf"), py::arg("eps"), py::arg("u"), py::arg("scale_hint") = 1.0,
      py::arg("breaks") = std::vector<double>{},
      "Certified upper bound on H_{e^eps}(p(. - u) || p) for a vectorised Python log-density (not renormalized; GIL held).");

  m.def(
      "custom_hockey_stick_lipschitz",
      [](py::function logpdf, double eps, double u, double L, double scale_hint, std::vector<double> breaks,
         double rtol, double atol, std::size_t max_nodes) {
        auto lp = puffer::bind::wrap_logpdf(logpdf);
        puffer::renyi::HockeyCertificate info;
        const double v = puffer::renyi::custom_hockey_stick_lipschitz(lp, eps, u, L, scale_hint, breaks.data(),
                                                                      breaks.size(), rtol, atol, max_nodes, &info);
        return py::make_tuple(v, info.lower, info.nodes);
      },
      py::arg("logpdf"), py::arg("eps"), py::arg("u"), py::arg("L"), py::arg("scale_hint") = 1.0,
      py::arg("breaks") = std::vector<double>{}, py::arg("rtol") = 1e-3, py::arg("atol") = 0.0,
      py::arg("max_nodes") = std::size_t{1} << 20,
      "(upper bound on H_{e^eps}(p(. - u) || p) certified from |d/dx log p| <= L, the matching lower sum over the "
      "window, nodes used) for a vectorised Python log-density (not renormalized; GIL held).");

  m.def("rdp_to_dp_cks", &puffer::renyi::rdp_to_dp_cks, py::arg("alpha"), py::arg("rho"), py::arg("delta"),
        "eps of (alpha, rho)-Renyi -> (eps, delta) by Canonne, Kamath & Steinke 2020, Prop 12 (rounded up, >= 0).");
  m.def(
      "rdp_to_dp_optimal",
      [](double alpha, double rho, double delta) {
        py::gil_scoped_release release;
        return puffer::renyi::rdp_to_dp_optimal(alpha, rho, delta);
      },
      py::arg("alpha"), py::arg("rho"), py::arg("delta"),
      "eps of the optimal single-order (alpha, rho)-Renyi -> (eps, delta) conversion, certified by a dual bound "
      "(never above rdp_to_dp_cks).");
  m.def(
      "rdp_to_dp_optimal_batch",
      [](const Arr& alpha, const Arr& rho, double delta) {
        return puffer::bind::map_pairs(alpha, rho, "rho", "one Renyi bound per order",
                                       [&](const double* pa, const double* pr, double* po, std::size_t n) {
                                         for (std::size_t i = 0; i < n; ++i)
                                           po[i] = puffer::renyi::rdp_to_dp_optimal(pa[i], pr[i], delta);
                                       });
      },
      py::arg("alpha"), py::arg("rho"), py::arg("delta"), "rdp_to_dp_optimal over flat arrays of orders and bounds.");
}
