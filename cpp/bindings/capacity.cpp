// Bindings of cpp/capacity and cpp/renyi/fdiv (puffer._core.capacity): f-divergence
// primitives, closed forms and the certified (poly_k, Renyi) solver. Thin; the GIL is released
// around the solver and the batch loops.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/registry.hpp"
#include "capacity/quad.hpp"
#include "capacity/restricted.hpp"
#include "common/errors.hpp"
#include "renyi/fdiv.hpp"

namespace py = pybind11;
namespace fd = puffer::fdiv;
namespace cap = puffer::capacity;

namespace {
using Arr = py::array_t<double, py::array::c_style | py::array::forcecast>;
}

PUFFER_BIND_SUBMODULE(capacity, m) {
  m.doc() = "Capacity bounded DP (Chaudhuri, Imola, Machanavajjhala 2019): f-divergence primitives, "
            "closed forms, certified restricted Renyi divergences. Noise codes: 0 Gaussian, 1 Laplace.";
  // The C++ enums are the one source of the codes: Python looks them up by name.
  py::enum_<fd::Kind>(m, "Divergence", py::arithmetic(), "f-divergence kinds (renyi/fdiv.hpp)")
      .value("kl", fd::kKL)
      .value("tv", fd::kTV)
      .value("alpha", fd::kAlpha);
  py::enum_<cap::Noise>(m, "Noise", py::arithmetic(), "noise families of the restricted-divergence solver")
      .value("gaussian", cap::kGaussian)
      .value("laplace", cap::kLaplace);
  m.def("generator", &fd::generator, py::arg("kind"), py::arg("t"), py::arg("alpha") = 2.0,
        "f(t) for kind 0 KL, 1 TV, 2 alpha-divergence (even extension).");
  m.def("conjugate", &fd::conjugate, py::arg("kind"), py::arg("u"), py::arg("alpha") = 2.0,
        "Fenchel conjugate f*(u).");
  m.def(
      "f_divergence_discrete",
      [](int kind, Arr p, Arr q, double alpha) {
        puffer::require(p.size() == q.size(), "q", q.size(), "as many entries as p");
        return fd::f_divergence_discrete(kind, p.data(), q.data(), static_cast<std::size_t>(p.size()), alpha);
      },
      py::arg("kind"), py::arg("p"), py::arg("q"), py::arg("alpha") = 2.0);
  m.def("alpha_div_to_renyi", &fd::alpha_div_to_renyi, py::arg("d"), py::arg("alpha"));
  m.def("renyi_to_alpha_div", &fd::renyi_to_alpha_div, py::arg("r"), py::arg("alpha"));
  m.def("laplace_kl", &fd::laplace_kl, py::arg("x"));
  m.def("laplace_lin_kl", &fd::laplace_lin_kl, py::arg("x"));
  m.def(
      "laplace_renyi", [](double alpha, Arr v) { return fd::laplace_renyi(alpha, v.data(), v.size()); },
      py::arg("alpha"), py::arg("v"));
  m.def(
      "gaussian_renyi", [](double alpha, Arr v) { return fd::gaussian_renyi(alpha, v.data(), v.size()); },
      py::arg("alpha"), py::arg("v"));
  m.def("gram_renyi2", &cap::gram_renyi2, py::arg("noise"), py::arg("s"), py::arg("k"));
  m.def(
      "restricted_renyi_poly",
      [](int noise, double s, double alpha, int k, py::object init, double gap_tol) {
        std::vector<double> ci;
        if (!init.is_none()) ci = init.cast<std::vector<double>>();
        puffer::require(ci.empty() || static_cast<int>(ci.size()) == k + 1, "coef_init", ci.size(), "k + 1 coefficients");
        cap::RestrictedResult r;
        {
          py::gil_scoped_release release;
          r = cap::restricted_renyi_poly(noise, s, alpha, k, ci.empty() ? nullptr : ci.data(), gap_tol);
        }
        py::dict d;
        d["d_lo"] = r.d_lo;
        d["d_hi"] = r.d_hi;
        d["coef"] = r.coef;
        d["quad_err"] = r.quad_err;
        d["iterations"] = r.iterations;
        d["converged"] = r.converged;
        d["n_eval"] = r.n_eval;
        d["unrestricted"] = r.unrestricted;
        return d;
      },
      py::arg("noise"), py::arg("s"), py::arg("alpha"), py::arg("k"), py::arg("coef_init") = py::none(),
      py::arg("gap_tol") = 1e-10,
      "Certified bracket [d_lo, d_hi] of D^{poly_k}_{R,alpha}(Y + s || Y), standardized noise.");
  m.def(
      "restricted_renyi_batch",
      [](int noise, Arr s, Arr alpha, int k) {
        puffer::require(s.size() == alpha.size(), "alpha", alpha.size(), "as many orders as shifts");
        const std::size_t n = static_cast<std::size_t>(s.size());
        Arr out(n);
        const double* ps = s.data();
        const double* pa = alpha.data();
        double* po = out.mutable_data();
        {
          py::gil_scoped_release release;
          std::vector<double> warm;
          for (std::size_t i = 0; i < n; ++i) {
            auto r = cap::restricted_renyi_poly(noise, ps[i], pa[i], k, warm.empty() ? nullptr : warm.data());
            po[i] = r.d_hi;
            warm = r.coef;
          }
        }
        return out;
      },
      py::arg("noise"), py::arg("s"), py::arg("alpha"), py::arg("k"),
      "Certified upper values d_hi over arrays of shifts/orders (warm-started along the arrays).");
  m.def(
      "poly_moments",
      [](int noise, double s, int k) {
        std::vector<double> mm(k + 1), g((k + 1) * (k + 1));
        cap::poly_moments(noise, s, k, mm.data(), g.data());
        return py::make_tuple(mm, g);
      },
      py::arg("noise"), py::arg("s"), py::arg("k"));
}
