// Bindings of the plan kernels of cpp/transport/kantorovich.hpp (Ding 2022 Theorem 2, the DAGWM
// log-moment of Pierquin et al. 2024) and of their Markov consumers (cpp/models/markov_plans.hpp).
// GIL released around every loop.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "bindings/job.hpp"
#include "bindings/markov_spec.hpp"
#include "bindings/registry.hpp"
#include "common/errors.hpp"
#include "models/markov.hpp"
#include "models/markov_plans.hpp"
#include "transport/kantorovich.hpp"

namespace py = pybind11;
namespace tr = puffer::transport;
namespace md = puffer::models;

namespace {

using darr = py::array_t<double, py::array::c_style | py::array::forcecast>;
using iarr = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

std::size_t len1(const py::array& a, const char* name) {
  if (a.ndim() != 1) throw puffer::InvalidArgument(name, "ndim " + std::to_string(a.ndim()), "a 1-D array");
  return static_cast<std::size_t>(a.shape(0));
}

void same(std::size_t want, std::size_t got, const char* name) {
  if (want != got)
    throw puffer::InvalidArgument(name, "length " + std::to_string(got), "length " + std::to_string(want));
}

// CSR offsets: K + 1 entries from 0 to `total`.
std::size_t plans_of(const iarr& off, std::size_t total) {
  const std::size_t n = len1(off, "offsets");
  puffer::require(n >= 1, "offsets", n, "K + 1 offsets");
  const std::int64_t* o = off.data();
  puffer::require(o[0] == 0 && o[n - 1] == static_cast<std::int64_t>(total), "offsets", o[n - 1],
                  "offsets from 0 to the number of plan entries");
  return n - 1;
}


template <class T>
py::array_t<T> to_np(const std::vector<T>& v) {
  py::array_t<T> a(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

py::array_t<bool> flags(const std::vector<std::uint8_t>& v) {
  py::array_t<bool> a(static_cast<py::ssize_t>(v.size()));
  for (std::size_t j = 0; j < v.size(); ++j) a.mutable_data()[j] = v[j] != 0;
  return a;
}

}  // namespace

PUFFER_BIND_SUBMODULE(kantorovich, m) {
  m.attr("WITNESS_BAND") = tr::kWitnessBand;
  m.def(
      "thm2_plans",
      [](const darr& d, const darr& mass, const darr& row, const darr& col, const iarr& off, double eps,
         double mass_rtol, unsigned threads) {
        const std::size_t n = len1(d, "d");
        same(n, len1(mass, "mass"), "mass");
        same(n, len1(row, "row"), "row");
        same(n, len1(col, "col"), "col");
        const std::size_t K = plans_of(off, n);
        std::vector<tr::Thm2> out(K);
        {
          py::gil_scoped_release rel;
          tr::thm2_batch(d.data(), mass.data(), row.data(), col.data(), off.data(), K, eps, mass_rtol, threads, {},
                         out.data());
        }
        py::array_t<double> eta(static_cast<py::ssize_t>(K)), key(static_cast<py::ssize_t>(K));
        py::array_t<std::int8_t> kind(static_cast<py::ssize_t>(K));
        for (std::size_t k = 0; k < K; ++k) {
          eta.mutable_data()[k] = out[k].eta;
          key.mutable_data()[k] = out[k].key;
          kind.mutable_data()[k] = static_cast<std::int8_t>(out[k].kind);
        }
        return py::make_tuple(eta, kind, key);
      },
      py::arg("d"), py::arg("mass"), py::arg("row"), py::arg("col"), py::arg("offsets"), py::arg("eps"),
      py::arg("mass_rtol") = 0.0, py::arg("threads") = 0,
      "Theorem 2 of Ding 2022 on K plans in CSR form: (eta, kind, key) per plan; eta is a feasible\n"
      "(lower) root, kind 0 = unconstrained (eta = inf), 1 = row, 2 = column; key = binding atom.");

  m.def(
      "thm2_laws",
      [](const darr& x, const darr& p, const iarr& offp, const darr& y, const darr& q, const iarr& offq, double eps,
         unsigned threads) {
        const std::size_t np_ = len1(x, "atoms_p"), nq = len1(y, "atoms_q");
        same(np_, len1(p, "probs_p"), "probs_p");
        same(nq, len1(q, "probs_q"), "probs_q");
        const std::size_t kp = len1(offp, "offsets_p"), kq = len1(offq, "offsets_q");
        puffer::require(kp >= 1, "offsets_p", kp, "K + 1 offsets");
        same(kp, kq, "offsets_q");
        const std::size_t K = kp - 1;
        std::vector<tr::Thm2> out(K);
        py::array_t<double> dmax(static_cast<py::ssize_t>(K));
        double* dm = dmax.mutable_data();
        {
          py::gil_scoped_release rel;
          tr::thm2_laws_batch(x.data(), p.data(), offp.data(), np_, y.data(), q.data(), offq.data(), nq, K, eps,
                              threads, {}, out.data(), dm);
        }
        py::array_t<double> eta(static_cast<py::ssize_t>(K)), key(static_cast<py::ssize_t>(K));
        py::array_t<std::int8_t> kind(static_cast<py::ssize_t>(K));
        for (std::size_t k = 0; k < K; ++k) {
          eta.mutable_data()[k] = out[k].eta;
          key.mutable_data()[k] = out[k].key;
          kind.mutable_data()[k] = static_cast<std::int8_t>(out[k].kind);
        }
        return py::make_tuple(eta, kind, key, dmax);
      },
      py::arg("atoms_p"), py::arg("probs_p"), py::arg("offsets_p"), py::arg("atoms_q"), py::arg("probs_q"),
      py::arg("offsets_q"), py::arg("eps"), py::arg("threads") = 0,
      "Theorem 2 of Ding 2022 on the quantile couplings of K pairs of float laws (CSR): (eta, kind, key,\n"
      "dmax) per pair, dmax = sup |x - x'| over the plan.");

  m.def(
      "dagwm_log_moments",
      [](const darr& logm, const darr& s, const iarr& idx, const iarr& off, double a2m1, unsigned threads) {
        const std::size_t n = len1(logm, "logm");
        same(n, len1(idx, "idx"), "idx");
        const std::size_t ns = len1(s, "s");
        const std::size_t K = plans_of(off, n);
        py::array_t<double> out(static_cast<py::ssize_t>(K));
        double* o = out.mutable_data();
        {
          py::gil_scoped_release rel;
          tr::dagwm_log_moments(logm.data(), s.data(), idx.data(), ns, off.data(), K, a2m1, threads, {}, o);
        }
        return out;
      },
      py::arg("logm"), py::arg("s"), py::arg("idx"), py::arg("offsets"), py::arg("a2m1"), py::arg("threads") = 0,
      "Upper bounds on log sum_j exp(logm[j] + a2m1 * s[idx[j]]) per plan (CSR offsets): the DAGWM\n"
      "exponential-moment cost of Pierquin et al. 2024, Thm 4.5.");

  m.def(
      "dagwm_merge",
      [](const darr& logm, const iarr& idx, const iarr& off, unsigned threads) {
        const std::size_t n = len1(logm, "logm");
        same(n, len1(idx, "idx"), "idx");
        const std::size_t K = plans_of(off, n);
        std::vector<double> lm;
        std::vector<std::int64_t> ix, of;
        {
          py::gil_scoped_release rel;
          tr::dagwm_merge(logm.data(), idx.data(), off.data(), K, threads, lm, ix, of);
        }
        return py::make_tuple(to_np(lm), to_np(ix), to_np(of));
      },
      py::arg("logm"), py::arg("idx"), py::arg("offsets"), py::arg("threads") = 0,
      "Per plan, entries with equal displacement index merged into one upper-bounding log-mass:\n"
      "(logm, idx, offsets) of the merged plans.");

  m.def(
      "markov_thm2",
      [](const darr& trans, const darr& init, const iarr& values, std::size_t T, double eps, unsigned threads,
         double tol, const py::object& progress) {
        md::MarkovChainSpec spec = puffer::bind::markov_spec(trans, init, values, T);
        md::validate(spec, tol);
        md::MarkovThm2 r;
        puffer::JobControl ctl;  // Ctrl-C and progress (units: priors x positions)
        ctl.total = spec.n_theta * T;
        puffer::bind::run_job(ctl, progress, [&] { r = md::markov_thm2(spec, eps, threads, &ctl); });
        const std::size_t np_ = spec.k * (spec.k - 1) / 2;
        auto shape = [&](py::array a) { return a.reshape({static_cast<py::ssize_t>(spec.n_theta),
                                                          static_cast<py::ssize_t>(T), static_cast<py::ssize_t>(np_)}); };
        return py::make_tuple(shape(to_np(r.eta)), shape(to_np(r.kind)), shape(to_np(r.key)), shape(to_np(r.dmax)),
                              flags(r.used_log));
      },
      py::arg("trans"), py::arg("init"), py::arg("values"), py::arg("T"), py::arg("eps"), py::arg("threads") = 0,
      py::arg("tol") = 1e-9, py::arg("progress") = py::none(),
      "Theorem 2 of Ding 2022 for every prior, position and state pair a < b of the Markov sum query:\n"
      "(eta, kind, key, dmax), each of shape (n_theta, T, k(k-1)/2) (kind -1: a secret is impossible),\n"
      "and the per-prior log-space flags. Interruptible (Ctrl-C); progress: None or callable(done, total).");

  m.def(
      "markov_dagwm_plans",
      [](const darr& trans, const darr& init, const iarr& values, std::size_t T, unsigned threads, double tol,
         const py::object& progress) {
        md::MarkovChainSpec spec = puffer::bind::markov_spec(trans, init, values, T);
        md::validate(spec, tol);
        md::MarkovPlans r;
        puffer::JobControl ctl;
        ctl.total = spec.n_theta * T;
        puffer::bind::run_job(ctl, progress, [&] { r = md::markov_dagwm_plans(spec, threads, &ctl); });
        const std::size_t np_ = spec.k * (spec.k - 1) / 2;
        py::array valid = flags(r.valid).reshape({static_cast<py::ssize_t>(spec.n_theta), static_cast<py::ssize_t>(T),
                                                  static_cast<py::ssize_t>(np_)});
        return py::make_tuple(to_np(r.v), to_np(r.logm), to_np(r.off), valid, flags(r.used_log));
      },
      py::arg("trans"), py::arg("init"), py::arg("values"), py::arg("T"), py::arg("threads") = 0,
      py::arg("tol") = 1e-9, py::arg("progress") = py::none(),
      "Interruptible (Ctrl-C); progress: None or callable(done, total). DAGWM plan data of every existing (prior, position, pair) of the Markov sum query: displacements\n"
      "v = (x - x')(1 + 2^-51), log-masses log max(m, 2^-1022), CSR offsets, the (n_theta, T, k(k-1)/2)\n"
      "mask of pairs whose secrets are possible, and the per-prior log-space flags.");
}
