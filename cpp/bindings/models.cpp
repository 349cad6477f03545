// Bindings of cpp/models: conditional query laws of the built-in correlated-data models.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>

#include "bindings/job.hpp"
#include "bindings/markov_spec.hpp"
#include "bindings/registry.hpp"
#include "common/errors.hpp"
#include "models/markov.hpp"
#include "models/markov_internal.hpp"
#include "models/markov_skip.hpp"
#include "models/poisson_binomial.hpp"

namespace py = pybind11;
using puffer::models::Arithmetic;
using puffer::models::Law;
using puffer::models::MarkovChainSpec;

namespace {
using CArr = py::array_t<double, py::array::c_style | py::array::forcecast>;
using IArr = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

// W_inf of every prior, position and pair (w_inf_all_pairs): the table, the per-prior flags and
// (with_stats) what the skipping did.
py::tuple markov_w_inf_job(const CArr& trans, const CArr& init, const IArr& values, std::size_t T, unsigned threads,
                           double tol, bool reference, const py::object& progress, const py::object& positions,
                           bool full, std::size_t window, bool with_stats) {
  MarkovChainSpec spec = puffer::bind::markov_spec(trans, init, values, T);
  puffer::models::validate(spec, tol);
  const std::size_t n_pairs = spec.k * (spec.k - 1) / 2;
  py::array_t<double> W({spec.n_theta, T, n_pairs});
  double* w = W.mutable_data();
  std::vector<std::uint8_t> mask;
  if (!positions.is_none()) {
    mask.assign(T, 0);
    const IArr pos = positions.cast<IArr>();
    puffer::require(pos.ndim() == 1, "positions", pos.ndim(), "a 1-D array of positions");
    for (py::ssize_t j = 0; j < pos.shape(0); ++j) {
      const std::int64_t i = pos.data()[j];
      puffer::require(i >= 0 && static_cast<std::size_t>(i) < T, "positions", i, "positions in [0, T)");
      mask[static_cast<std::size_t>(i)] = 1;
    }
    std::fill(w, w + spec.n_theta * T * n_pairs, std::numeric_limits<double>::quiet_NaN());
  }
  std::vector<std::uint8_t> used;
  puffer::JobControl ctl;
  ctl.total = spec.n_theta * T;
  puffer::models::SumLawsOptions opt;
  opt.arithmetic = reference ? Arithmetic::kLogReference : Arithmetic::kAuto;
  opt.control = &ctl;
  opt.positions = mask.empty() ? nullptr : mask.data();
  opt.skip_interior = !full;
  opt.skip_window = window;
  puffer::models::SkipStats st;
  if (with_stats) opt.skip_stats = &st;
  puffer::bind::run_job(ctl, progress, [&] { used = puffer::models::w_inf_all_pairs(spec, threads, w, opt); });
  py::array_t<bool> L(used.size());
  for (std::size_t j = 0; j < used.size(); ++j) L.mutable_data()[j] = used[j] != 0;
  if (!with_stats) return py::make_tuple(W, L);
  py::dict d;
  d["planned"] = st.planned;
  d["rounds"] = st.rounds;
  d["representatives"] = st.representatives;
  d["certified"] = st.certified;
  d["direct"] = st.direct;
  return py::make_tuple(W, L, d);
}

}  // namespace

PUFFER_BIND_SUBMODULE(models, m) {
  m.def(
      "markov_sum_laws",
      [](const CArr& trans, const CArr& init, const IArr& values, std::size_t T, unsigned threads, double tol,
         bool reference, const py::object& progress) {
        MarkovChainSpec spec = puffer::bind::markov_spec(trans, init, values, T);
        puffer::models::validate(spec, tol);
        const std::size_t n_laws = spec.n_theta * T * spec.k;
        // Collect per-law vectors, then pack CSR (theta-major, then position, then state).
        std::vector<std::vector<double>> atoms(n_laws), probs(n_laws);
        std::vector<double> secret(n_laws);
        std::vector<std::uint8_t> log_law(n_laws, 0);
        puffer::JobControl ctl;
        ctl.total = spec.n_theta * T;
        puffer::models::SumLawsOptions opt;
        opt.arithmetic = reference ? Arithmetic::kLogReference : Arithmetic::kAuto;
        opt.control = &ctl;
        puffer::bind::run_job(ctl, progress, [&] {
          puffer::models::sum_laws(spec, threads, [&](std::size_t th, std::size_t i, const std::vector<Law>& laws) {
            for (std::size_t a = 0; a < spec.k; ++a) {
              const Law& law = laws[a];
              const std::size_t idx = (th * T + i) * spec.k + a;
              secret[idx] = law.secret_prob;
              if (!law.plain()) {
                // log masses (shifted, not normalised) of the reachable sums: the law spans more
                // than the double range, so no float mass could hold it without losing level
                // order. The caller builds a LogDiscreteDist.
                log_law[idx] = 1;
                double mx = -std::numeric_limits<double>::infinity();
                for (std::size_t j = 0; j < law.n; ++j)
                  if (law.reachable(j)) {
                    atoms[idx].push_back(law.atoms[j]);
                    probs[idx].push_back(law.log_mass(j));
                    mx = std::max(mx, probs[idx].back());
                  }
                for (double& v : probs[idx]) v -= mx;
                continue;
              }
              double tot = 0.0;
              for (std::size_t j = 0; j < law.n; ++j) tot += law.mass[j];
              for (std::size_t j = 0; j < law.n; ++j)
                if (law.mass[j] > 0.0) {
                  // plain laws span <= 2^1000: every normalised reachable mass stays normal
                  atoms[idx].push_back(law.atoms[j]);
                  probs[idx].push_back(law.mass[j] / tot);
                }
            }
          }, opt);
        });
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
        py::array_t<bool> L(log_law.size());
        for (std::size_t j = 0; j < log_law.size(); ++j) L.mutable_data()[j] = log_law[j] != 0;
        return py::make_tuple(A, Pr, O, S, L);
      },
      py::arg("trans"), py::arg("init"), py::arg("values"), py::arg("T"), py::arg("threads") = 0,
      py::arg("tol") = 1e-9, py::arg("reference") = false, py::arg("progress") = py::none(),
      "CSR conditional laws of sum_t values[X_t] given X_i = a, for every prior, position and state;\n"
      "for laws flagged in the last output (one flag per law) the masses are natural logs (unnormalised).\n"
      "reference=True: the log-space reference arithmetic. progress: None or callable(done, total).");

  m.def(
      "markov_w_inf",
      [](const CArr& trans, const CArr& init, const IArr& values, std::size_t T, unsigned threads, double tol,
         bool reference, const py::object& progress, const py::object& positions, bool full, std::size_t window) {
        const py::tuple r =
            markov_w_inf_job(trans, init, values, T, threads, tol, reference, progress, positions, full, window, false);
        return py::make_tuple(r[0].cast<py::array_t<double>>(), r[1].cast<py::array_t<bool>>());
      },
      py::arg("trans"), py::arg("init"), py::arg("values"), py::arg("T"), py::arg("threads") = 0,
      py::arg("tol") = 1e-9, py::arg("reference") = false, py::arg("progress") = py::none(),
      py::arg("positions") = py::none(), py::arg("full") = false, py::arg("window") = 0,
      "W_inf between the laws given X_i = a and X_i = b, shape (n_theta, T, k(k-1)/2); -1 where a secret is\n"
      "impossible; per prior, whether some law needed the extended range. reference=True: log-space\n"
      "reference arithmetic. progress: None or callable(done, total) (units: priors x positions).\n"
      "Interruptible (Ctrl-C raises KeyboardInterrupt within ~0.1 s). positions: None (all) or the positions\n"
      "to compute (the others are NaN). full=True: the direct computation at every position; False (default):\n"
      "interior positions whose value a representative certifies are not computed (docs/long-chains.md;\n"
      "the same values). window: the skipping's window m (0: chosen per prior; tests).");

  m.def(
      "markov_w_inf_stats",
      [](const CArr& trans, const CArr& init, const IArr& values, std::size_t T, unsigned threads, bool full,
         std::size_t window) {
        const py::tuple r = markov_w_inf_job(trans, init, values, T, threads, 1e-9, false, py::none(), py::none(), full,
                                             window, true);
        return py::make_tuple(r[0].cast<py::array_t<double>>(), r[2].cast<py::dict>());
      },
      py::arg("trans"), py::arg("init"), py::arg("values"), py::arg("T"), py::arg("threads") = 0,
      py::arg("full") = false, py::arg("window") = 0,
      "markov_w_inf (every position) with what the skipping did (docs/long-chains.md): the W_inf table and a\n"
      "dict: planned (priors with a usable plan), rounds (the most rounds of representatives of one prior),\n"
      "representatives, certified (interior positions given a representative's value), direct (positions\n"
      "computed directly). Tests and benchmarks.");

  m.def(
      "markov_skip_plan",
      [](const CArr& trans, const CArr& init, const IArr& values, std::size_t T, std::size_t prior, double eta,
         std::size_t window) {
        MarkovChainSpec spec = puffer::bind::markov_spec(trans, init, values, T);
        puffer::models::validate(spec, 1e-9);
        puffer::require(prior < spec.n_theta, "prior", prior, "a prior index below n_theta");
        puffer::models::SkipPlan plan;
        {
          py::gil_scoped_release nogil;
          plan = puffer::models::plan_skip(spec, prior, eta, nullptr, window);
        }
        py::dict d;
        d["usable"] = plan.usable;
        d["m"] = plan.drift.m;
        d["period"] = plan.drift.period;
        d["omega"] = py::array_t<double>(plan.drift.omega.size(), plan.drift.omega.data());
        d["reps"] = py::array_t<std::size_t>(plan.reps.size(), plan.reps.data());
        d["lo"] = plan.lo;
        d["hi"] = plan.hi;
        return d;
      },
      py::arg("trans"), py::arg("init"), py::arg("values"), py::arg("T"), py::arg("prior") = 0, py::arg("eta") = puffer::models::kSkipDrift,
      py::arg("window") = 0,
      "The skipping plan of one prior (docs/long-chains.md; eta: the drift target, by default that of\n"
      "markov_w_inf): usable, window m, period p, omega (p * k: the\n"
      "certified log-oscillation per step of each phase and state), reps (one position per phase), lo / hi\n"
      "(the interior).");
  m.def(
      "markov_window_drift",
      [](const CArr& trans, const CArr& init, const IArr& values, std::size_t T, std::size_t m_, std::size_t period,
         std::size_t prior) {
        MarkovChainSpec spec = puffer::bind::markov_spec(trans, init, values, T);
        puffer::models::validate(spec, 1e-9);
        puffer::require(prior < spec.n_theta, "prior", prior, "a prior index below n_theta");
        puffer::require(m_ >= 1, "m", m_, "a window m >= 1");
        puffer::require(period >= 1 && spec.period % puffer::models::minimal_period(spec, prior) == 0 &&
                            period % puffer::models::minimal_period(spec, prior) == 0,
                        "period", period, "a multiple of the chain's period");
        puffer::models::WindowDrift d;
        {
          py::gil_scoped_release nogil;
          d = puffer::models::window_drift(spec, prior, period, m_, nullptr);
        }
        return py::array_t<double>(d.omega.size(), d.omega.data()).reshape({period, spec.k});
      },
      py::arg("trans"), py::arg("init"), py::arg("values"), py::arg("T"), py::arg("m"), py::arg("period") = 1,
      py::arg("prior") = 0,
      "The certified window oscillation omega[phase, state] of Lemma 2 of docs/long-chains.md: for\n"
      "interior positions t, t + period of that phase, |log L_{t+period}(s) / L_t(s)| <= omega for every atom s.");
  m.def(
      "markov_drift_walks",
      [](const IArr& xa, const CArr& pa, const IArr& xb, const CArr& pb, double eta, std::size_t T, std::size_t k) {
        puffer::require(xa.ndim() == 1 && pa.ndim() == 1 && xa.shape(0) == pa.shape(0) && xa.shape(0) > 0, "a",
                        xa.shape(0), "atoms and masses of equal length >= 1");
        puffer::require(xb.ndim() == 1 && pb.ndim() == 1 && xb.shape(0) == pb.shape(0) && xb.shape(0) > 0, "b",
                        xb.shape(0), "atoms and masses of equal length >= 1");
        // both laws on one integer grid [lo, hi] (the masses of absent sums 0)
        std::int64_t lo = xa.data()[0], hi = xa.data()[0];
        for (const IArr* x : {&xa, &xb})
          for (py::ssize_t j = 0; j < x->shape(0); ++j) {
            lo = std::min(lo, x->data()[j]);
            hi = std::max(hi, x->data()[j]);
            puffer::require(j == 0 || x->data()[j] > x->data()[j - 1], "atoms", x->data()[j], "increasing atoms");
          }
        puffer::require(hi - lo < 100000, "atoms", hi - lo, "a range below 1e5");
        const std::size_t R = static_cast<std::size_t>(hi - lo + 1);
        std::vector<double> grid(R), ma(R, 0.0), mb(R, 0.0);
        for (std::size_t s = 0; s < R; ++s) grid[s] = static_cast<double>(lo + static_cast<std::int64_t>(s));
        for (py::ssize_t j = 0; j < xa.shape(0); ++j) ma[static_cast<std::size_t>(xa.data()[j] - lo)] = pa.data()[j];
        for (py::ssize_t j = 0; j < xb.shape(0); ++j) mb[static_cast<std::size_t>(xb.data()[j] - lo)] = pb.data()[j];
        for (double v : ma) puffer::require(std::isfinite(v) && v >= 0.0, "mass", v, "finite masses >= 0");
        for (double v : mb) puffer::require(std::isfinite(v) && v >= 0.0, "mass", v, "finite masses >= 0");
        puffer::models::Law a, b;
        a.atoms = b.atoms = grid.data();
        a.mass = ma.data();
        b.mass = mb.data();
        a.n = b.n = R;
        double up = 0.0, low = 0.0;
        puffer::models::drift_walks(a, b, T, k, R, static_cast<double>(lo), eta, up, low);
        return py::make_tuple(up, low);
      },
      py::arg("atoms_a"), py::arg("mass_a"), py::arg("atoms_b"), py::arg("mass_b"), py::arg("eta"), py::arg("T") = 1,
      py::arg("k") = 2,
      "Tests of the skipping certificate (docs/long-chains.md, Theorem 6): the upper and lower W_inf walks of\n"
      "two plain laws whose levels may each move by a factor exp(+-eta) (levels with the rounding bound of a\n"
      "chain of length T with k states). Equal: every such perturbation has this W_inf.");
  m.def(
      "markov_workspace_bytes",
      [](std::size_t k, std::size_t T, std::size_t span, bool reference, std::size_t period) {
        return puffer::models::workspace_bytes(k, T, span, reference ? Arithmetic::kLogReference : Arithmetic::kAuto,
                                               period);
      },
      py::arg("k"), py::arg("T"), py::arg("span"), py::arg("reference") = false, py::arg("period") = 1,
      "Bytes one worker of the Markov kernel allocates (backward store + buffers); period: matrices per prior.");
  m.def(
      "markov_peak_bytes",
      [](std::size_t k, std::size_t T, std::size_t span, std::size_t n_theta, unsigned threads, bool reference,
         std::size_t period) {
        return puffer::models::peak_bytes(k, T, span, n_theta, threads,
                                          reference ? Arithmetic::kLogReference : Arithmetic::kAuto, period);
      },
      py::arg("k"), py::arg("T"), py::arg("span"), py::arg("n_theta"), py::arg("threads") = 0,
      py::arg("reference") = false, py::arg("period") = 1,
      "Upper bound of the bytes the Markov kernel allocates for n_theta priors on `threads` threads\n"
      "(0: all), as it schedules them (checkpoints, per-worker buffers, exact images; the output excluded);\n"
      "period: transition matrices per prior (1: time-homogeneous).");
  m.def("markov_prior_operations", &puffer::models::prior_operations, py::arg("k"), py::arg("T"), py::arg("span"),
        "Multiply-adds of the Markov kernel for one prior (convolutions + passes).");
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
