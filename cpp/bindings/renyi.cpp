// Bindings of cpp/renyi: certified Renyi shift divergences and calibration (puffer._core.renyi).
// Thin: numpy arrays <-> pointers; the GIL is released around every loop except the Custom
// path, whose log-density is a Python callable.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>

#include "bindings/registry.hpp"
#include "bindings/renyi_args.hpp"
#include "common/errors.hpp"
#include "renyi/renyi.hpp"

namespace py = pybind11;
using puffer::bind::Arr;
using puffer::bind::make_shape;
using puffer::renyi::Shape;

PUFFER_BIND_SUBMODULE(renyi, m) {
  m.doc() = "Renyi shift divergences of additive noise (certified upper bounds). Families: 0 Gaussian, "
            "1 Laplace, 2 Student-type (k, nu), 3 Logistic, 4 GenGaussian (beta); all standardized.";
  // The C++ enum is the one source of the family codes (Python reads them by name).
  py::enum_<puffer::renyi::Family>(m, "Family", py::arithmetic(), "noise family codes (renyi/renyi.hpp)")
      .value("gaussian", puffer::renyi::Family::Gaussian)
      .value("laplace", puffer::renyi::Family::Laplace)
      .value("student", puffer::renyi::Family::StudentT)
      .value("logistic", puffer::renyi::Family::Logistic)
      .value("gen_gaussian", puffer::renyi::Family::GenGaussian);

  m.def(
      "shift_divergence",
      [](int family, double k, double nu, double beta, const Arr& alpha, const Arr& u, unsigned threads,
         bool force_quadrature) {
        Shape s = make_shape(k, nu, beta);
        puffer::renyi::check_shape(family, s);
        return puffer::bind::map_pairs(alpha, u, "u", "as many shifts as orders",
                                       [&](const double* pa, const double* pu, double* po, std::size_t n) {
                                         puffer::renyi::shift_divergence_batch(family, s, pa, pu, po, n, threads,
                                                                               force_quadrature);
                                       });
      },
      py::arg("family"), py::arg("k"), py::arg("nu"), py::arg("beta"), py::arg("alpha"), py::arg("u"),
      py::arg("threads") = 0, py::arg("force_quadrature") = false,
      "Certified upper bounds on D_alpha(zeta(. - u) || zeta) for flat arrays alpha (>= 1; 1 = KL, inf ok) and u >= 0.");

  m.def(
      "shift_divergence1",
      [](int family, double k, double nu, double beta, double alpha, double u) {
        return puffer::renyi::shift_divergence(family, make_shape(k, nu, beta), alpha, u);
      },
      py::arg("family"), py::arg("k"), py::arg("nu"), py::arg("beta"), py::arg("alpha"), py::arg("u"),
      "Scalar version of shift_divergence (no array conversion).");

  m.def(
      "max_shift",
      [](int family, double k, double nu, double beta, double alpha, double eps) {
        py::gil_scoped_release release;
        return puffer::renyi::max_shift(family, make_shape(k, nu, beta), alpha, eps);
      },
      py::arg("family"), py::arg("k"), py::arg("nu"), py::arg("beta"), py::arg("alpha"), py::arg("eps"),
      "Largest standardized shift u whose certified D_alpha is <= eps (to relative 1e-12, from below).");

  auto wrap = [](py::function fn) { return puffer::bind::wrap_logpdf(fn); };

  m.def(
      "custom_shift_divergence",
      [wrap](py::function logpdf, bool symmetric, double alpha, double u, double scale_hint,
             std::vector<double> breaks) {
        return puffer::renyi::custom_shift_divergence(wrap(logpdf), symmetric, alpha, u, scale_hint, breaks.data(),
                                                      breaks.size());
      },
      py::arg("logpdf"), py::arg("symmetric"), py::arg("alpha"), py::arg("u"), py::arg("scale_hint") = 1.0,
      py::arg("breaks") = std::vector<double>{},
      "Certified upper bound on D_alpha(p(. - u) || p) for a vectorised Python log-density (GIL held).");

  m.def(
      "custom_shift_divergence_lipschitz",
      [wrap](py::function logpdf, double alpha, double u, double L, double scale_hint, std::vector<double> breaks,
             double rtol, std::size_t max_nodes) {
        return puffer::renyi::custom_shift_divergence_lipschitz(wrap(logpdf), alpha, u, L, scale_hint, breaks.data(),
                                                                breaks.size(), rtol, max_nodes);
      },
      py::arg("logpdf"), py::arg("alpha"), py::arg("u"), py::arg("L"), py::arg("scale_hint") = 1.0,
      py::arg("breaks") = std::vector<double>{}, py::arg("rtol") = 1e-3, py::arg("max_nodes") = std::size_t{1} << 21,
      "Upper bound on D_alpha(p(. - u) || p) certified from |d/dx log p| <= L (GIL held: Python log-density).");

  m.def(
      "custom_mass",
      [wrap](py::function logpdf, double scale_hint, std::vector<double> breaks) {
        double mass = 0, err = 0;
        puffer::renyi::custom_mass(wrap(logpdf), scale_hint, &mass, &err, breaks.data(), breaks.size());
        return py::make_tuple(mass, err);
      },
      py::arg("logpdf"), py::arg("scale_hint") = 1.0, py::arg("breaks") = std::vector<double>{}, "(mass, error bound) of exp(logpdf) over the real line.");
}
