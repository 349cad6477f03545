// Bindings of cpp/models: conditional query laws of the built-in correlated-data models.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <limits>
#include <mutex>

#include "bindings/registry.hpp"
#include "common/errors.hpp"
#include "models/markov.hpp"
#include "models/poisson_binomial.hpp"

namespace py = pybind11;
using puffer::models::Law;
using puffer::models::MarkovChainSpec;

namespace {
using CArr = py::array_t<double, py::array::c_style | py::array::forcecast>;
using IArr = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

MarkovChainSpec make_spec(const CArr& trans, const CArr& init, const IArr& values, std::size_t T) {
  puffer::require(trans.ndim() == 3 && trans.shape(1) == trans.shape(2), "trans", trans.ndim(),
                  "an array of shape (n_theta, k, k)");
  const std::size_t n = static_cast<std::size_t>(trans.shape(0)), k = static_cast<std::size_t>(trans.shape(1));
  puffer::require(init.ndim() == 2 && static_cast<std::size_t>(init.shape(0)) == n &&
                      static_cast<std::size_t>(init.shape(1)) == k,
                  "init", init.ndim(), "an array of shape (n_theta, k)");
  puffer::require(values.ndim() == 1 && static_cast<std::size_t>(values.shape(0)) == k, "values", values.ndim(),
                  "k integer state values");
  return MarkovChainSpec{trans.data(), init.data(), n, k, values.data(), T};
}
}  // namespace

PUFFER_BIND_SUBMODULE(models, m) {
  m.def(
      "markov_sum_laws",
      [](const CArr& trans, const CArr& init, const IArr& values, std::size_t T, unsigned threads, double tol) {
        MarkovChainSpec spec = make_spec(trans, init, values, T);
        puffer::models::validate(spec, tol);
        const std::size_t n_laws = spec.n_theta * T * spec.k;
        // Collect per-law vectors, then pack CSR (theta-major, then position, then state).
        std::vector<std::vector<double>> atoms(n_laws), probs(n_laws);
        std::vector<double> secret(n_laws);
        std::vector<std::uint8_t> used_log;
        {
          py::gil_scoped_release release;
          used_log = puffer::models::sum_laws(spec, threads, [&](std::size_t th, std::size_t i, const std::vector<Law>& laws) {
            for (std::size_t a = 0; a < spec.k; ++a) {
              // normalise the view and keep the reachable sums only
              const Law& law = laws[a];
              const std::size_t idx = (th * T + i) * spec.k + a;
              secret[idx] = law.secret_prob;
              if (law.log_space) {
                // log masses (shifted, not normalised); -inf = unreachable. The caller builds a
                // LogDiscreteDist: no float mass could hold them without losing level order.
                for (std::size_t j = 0; j < law.n; ++j)
                  if (law.mass[j] != -std::numeric_limits<double>::infinity()) {
                    atoms[idx].push_back(law.atoms[j]);
                    probs[idx].push_back(law.mass[j]);
                  }
                continue;
              }
              double tot = 0.0;
              for (std::size_t j = 0; j < law.n; ++j) tot += law.mass[j];
              for (std::size_t j = 0; j < law.n; ++j)
                if (law.mass[j] > 0.0) {
                  // a reachable sum keeps a positive mass even if the division underflows
                  // the linear path is used only when every reachable relative mass is >= 1e-300
                  atoms[idx].push_back(law.atoms[j]);
                  probs[idx].push_back(law.mass[j] / tot);
                }
            }
          });
        }
        std::vector<std::int64_t> off(n_laws + 1, 0);
        for (std::size_t j = 0; j < n_laws; ++j) off[j + 1] = off[j] + static_cast<std::int64_t>(atoms[j].size());
        py::array_t<double> A(off.back()), Pr(off.back());
        auto a = A.mutable_unchecked<1>();
        auto p = Pr.mutable_unchecked<1>();
        for (std::size_t j = 0; j < n_laws; ++j)
          for (std::size_t q = 0; q < atoms[j].size(); ++q) {
            a(off[j] + q) = atoms[j][q];
            p(off[j] + q) = probs[j][q];
          }
        py::array_t<std::int64_t> O(off.size());
        std::copy(off.begin(), off.end(), O.mutable_data());
        py::array_t<double> S(secret.size());
        std::copy(secret.begin(), secret.end(), S.mutable_data());
        py::array_t<bool> L(used_log.size());
        for (std::size_t j = 0; j < used_log.size(); ++j) L.mutable_data()[j] = used_log[j] != 0;
        return py::make_tuple(A, Pr, O, S, L);
      },
      py::arg("trans"), py::arg("init"), py::arg("values"), py::arg("T"), py::arg("threads") = 0,
      py::arg("tol") = 1e-9,
      "CSR conditional laws of sum_t values[X_t] given X_i = a, for every prior, position and state;\n"
      "for priors flagged in the last output the masses are natural logs (unnormalised).");

  m.def(
      "markov_w_inf",
      [](const CArr& trans, const CArr& init, const IArr& values, std::size_t T, unsigned threads, double tol) {
        MarkovChainSpec spec = make_spec(trans, init, values, T);
        puffer::models::validate(spec, tol);
        const std::size_t n_pairs = spec.k * (spec.k - 1) / 2;
        py::array_t<double> W({spec.n_theta, T, n_pairs});
        double* w = W.mutable_data();
        std::vector<std::uint8_t> used_log;
        {
          py::gil_scoped_release release;
          used_log = puffer::models::w_inf_all_pairs(spec, threads, w);
        }
        py::array_t<bool> L(used_log.size());
        for (std::size_t j = 0; j < used_log.size(); ++j) L.mutable_data()[j] = used_log[j] != 0;
        return py::make_tuple(W, L);
      },
      py::arg("trans"), py::arg("init"), py::arg("values"), py::arg("T"), py::arg("threads") = 0,
      py::arg("tol") = 1e-9,
      "W_inf between the laws given X_i = a and X_i = b, shape (n_theta, T, k(k-1)/2); -1 where a secret is impossible.");
  m.def(
      "poisson_binomial",
      [](const CArr& p, long skip) {
        puffer::require(p.ndim() == 1, "p", p.ndim(), "a 1-D array of probabilities");
        const std::size_t n = static_cast<std::size_t>(p.shape(0));
        puffer::require(skip >= -1 && skip < static_cast<long>(n), "skip", skip, "-1 or a user index");
        std::vector<double> out;
        {
          py::gil_scoped_release release;
          out = puffer::models::poisson_binomial(p.data(), n, skip < 0 ? n : static_cast<std::size_t>(skip));
        }
        py::array_t<double> r(out.size());
        std::copy(out.begin(), out.end(), r.mutable_data());
        return r;
      },
      py::arg("p"), py::arg("skip") = -1,
      "pmf of a sum of independent Bernoulli(p_k) (leaving out user `skip`), underflow-safe.");
}
