// Markov-chain consumers of the plan kernels (Ding 2022 Theorem 2; Pierquin et al. 2024 Thm 4.5),
// through the public sum_laws / Law interface only.
#include "models/markov_plans.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/errors.hpp"
#include "transport/coupling_log.hpp"
#include "transport/transport.hpp"

namespace puffer::models {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kU = 0x1p-53;

// numpy's pairwise summation of a contiguous float64 array (np.sum), so the float laws are
// normalised to the same doubles as DiscreteDist(normalize=True) does.
double pairwise(const double* a, std::size_t n) {
  if (n < 8) {
    double r = 0.0;  // numpy starts from -0.0 only for empty sums; 0.0 + x == x otherwise
    for (std::size_t i = 0; i < n; ++i) r += a[i];
    return r;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    std::size_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  std::size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise(a, n2) + pairwise(a + n2, n - n2);
}

// scipy.special.logsumexp of v: the maximal terms are counted apart, log1p of the rest.
double scipy_logsumexp(const std::vector<double>& v) {
  const std::size_t n = v.size();
  double amax = -kInf;
  for (double x : v) amax = std::max(amax, x);
  double cnt = 0.0;
  thread_local std::vector<double> e;
  e.resize(n);
  for (std::size_t j = 0; j < n; ++j) {
    if (v[j] == amax) {
      cnt += 1.0;
      e[j] = 0.0;
    } else {
      e[j] = std::exp(v[j] - amax);
    }
  }
  double s = pairwise(e.data(), n);
  if (s != 0.0) s = s / cnt;
  double total = std::log1p(s) + std::log(cnt) + amax;
  if (!std::isfinite(total)) {
    for (std::size_t j = 0; j < n; ++j) e[j] = std::exp(v[j]);
    total = std::log(pairwise(e.data(), n));
  }
  return total;
}

// A law as the Python path holds it: reachable atoms, normalised masses (float) or log-masses.
struct Prepared {
  std::vector<double> x, p;
  bool log_space = false;
  double max_abs = 0.0;  // largest |log-mass| (log space)
};

void prepare(const Law& law, Prepared& out) {
  out.x.clear();
  out.p.clear();
  // Any law that is not plain doubles (log space, or mantissa * 2^exp2 for laws spanning more than
  // the double range) is handed to Python as shifted log masses (cpp/bindings/models.cpp): mirror it.
  out.log_space = !law.plain();
  out.max_abs = 0.0;
  if (law.n == 0) return;
  if (law.plain()) {
    // the binding's normalisation (sequential total, zeros dropped), then DiscreteDist's (np.sum)
    double tot = 0.0;
    for (std::size_t j = 0; j < law.n; ++j) tot += law.mass[j];
    for (std::size_t j = 0; j < law.n; ++j)
      if (law.mass[j] > 0.0) {
        out.x.push_back(law.atoms[j]);
        out.p.push_back(law.mass[j] / tot);
      }
    const double t2 = pairwise(out.p.data(), out.p.size());
    std::size_t w = 0;
    for (std::size_t j = 0; j < out.p.size(); ++j) {
      const double q = out.p[j] / t2;
      if (q > 0.0) {
        out.x[w] = out.x[j];
        out.p[w++] = q;
      }
    }
    out.x.resize(w);
    out.p.resize(w);
    return;
  }
  double mx = -kInf;
  for (std::size_t j = 0; j < law.n; ++j)
    if (law.reachable(j)) {
      out.x.push_back(law.atoms[j]);
      out.p.push_back(law.log_mass(j));
      mx = std::max(mx, out.p.back());
    }
  const std::size_t n = out.p.size();
  if (n == 0) return;
  for (double& v : out.p) v -= mx;
  const double total = scipy_logsumexp(out.p);
  for (double& v : out.p) {
    v -= total;
    if (std::isfinite(v)) out.max_abs = std::max(out.max_abs, std::fabs(v));
  }
}

// A float law as the Python path turns it into log space for a coupling with a log-space law
// (puffer.transport._as_log: LogDiscreteDist(atoms, np.log(probs), normalize=True)). Coupling
// the float masses as if they were log-masses (what the core did) gave near-deterministic chains
// plans with masses above 1: DAGWM eps(2) 3.12 for the exact 2.59 (issue 29).
void to_log_space(Prepared& P) {
  for (double& v : P.p) v = std::log(v);
  const double total = scipy_logsumexp(P.p);
  P.max_abs = 0.0;
  for (double& v : P.p) {
    v -= total;
    if (std::isfinite(v)) P.max_abs = std::max(P.max_abs, std::fabs(v));
  }
  P.log_space = true;
}

// The quantile coupling of two prepared laws, as puffer.transport.quantile_coupling builds it.
void couple(const Prepared& P, const Prepared& Q, transport::Plan& plan) {
  if (P.log_space || Q.log_space) {
    transport::coupling_log_1d(P.p.data(), P.p.size(), Q.p.data(), Q.p.size(), plan);
    return;
  }
  plan = transport::coupling_1d(P.x.data(), P.p.data(), P.x.size(), Q.x.data(), Q.p.data(), Q.x.size(),
                                transport::kDefaultRtol, transport::kDefaultSumTol);
}

// Relative allowance for the plan masses against the Python path: log-space totals come from
// numpy's vectorised exp/log (an ulp away from libm at times), which moves a normalised
// log-mass by up to an ulp of its magnitude; float laws are normalised to the same doubles.
double mass_rtol(const Prepared& P, const Prepared& Q) {
  if (!(P.log_space || Q.log_space)) return 0.0;
  return 64.0 * kU * std::max(1.0, std::max(P.max_abs, Q.max_abs));
}

// Entries of the exact quantile coupling that the float plan lacks. The float plan decides ties
// between levels by a float tolerance band, so it can drop a tiny-mass entry -- and with it the
// largest |x - x'| -- where two exact levels differ by less than the band (issue 22). The
// certified level comparisons of the Markov W_inf walk (LevelCertifier, markov.hpp) give every
// pair of atoms whose level intervals may overlap; any such pair missing from the float plan is
// added with an upper bound on its exact mass (unknown order: the safe side, the entry kept).
// The float plan's entries are kept as they are (bit-compatible with the Python path otherwise).
void missing_entries(const transport::Plan& plan, const Prepared& P, const Prepared& Q,
                     LevelCertifier::Position& pos, std::size_t a, std::size_t b,
                     std::vector<CouplingEntry>& extra) {
  extra.clear();
  thread_local std::vector<std::pair<double, double>> have;
  thread_local std::vector<CouplingEntry> cand;
  have.clear();
  for (std::size_t e = 0; e < plan.mass.size(); ++e)
    have.emplace_back(P.x[static_cast<std::size_t>(plan.src[e])], Q.x[static_cast<std::size_t>(plan.dst[e])]);
  std::sort(have.begin(), have.end());
  auto missing = [&](const CouplingEntry& c) {
    return !std::binary_search(have.begin(), have.end(), std::make_pair(c.x, c.y));
  };
  pos.entries(a, b, false, cand);  // close levels of unknown order: a superset, no exact images
  if (std::none_of(cand.begin(), cand.end(), missing)) return;
  pos.entries(a, b, true, cand);   // close levels compared exactly modulo random primes
  for (const CouplingEntry& c : cand)
    if (missing(c)) extra.push_back(c);
}

template <class Fn>
std::vector<std::uint8_t> for_each_pair(const MarkovChainSpec& spec, unsigned threads, JobControl* control,
                                        Fn&& fn) {
  const std::size_t k = spec.k;
  SumLawsOptions opt;
  opt.control = control;  // polled per position, done += 1 per (prior, position)
  LevelCertifier cert(spec, spec.T, control);
  return sum_laws(spec, threads, [&](std::size_t th, std::size_t i, const std::vector<Law>& laws) {
    thread_local std::vector<Prepared> prep;
    thread_local transport::Plan plan;
    thread_local std::vector<CouplingEntry> extra;
    prep.resize(k);
    for (std::size_t a = 0; a < k; ++a) prepare(laws[a], prep[a]);
    LevelCertifier::Position pos = cert.at(th, i, laws);
    std::size_t pr = 0;
    for (std::size_t a = 0; a < k; ++a)
      for (std::size_t b = a + 1; b < k; ++b, ++pr) {
        if (prep[a].x.empty() || prep[b].x.empty() || laws[a].n == 0 || laws[b].n == 0) {
          fn(th, i, pr, prep[a], prep[b], nullptr, extra);
          continue;
        }
        // one law in log space, the other plain: the plain one goes to log space too
        thread_local Prepared conv;
        const Prepared* pa = &prep[a];
        const Prepared* pb = &prep[b];
        if (pa->log_space != pb->log_space) {
          conv = pa->log_space ? *pb : *pa;
          to_log_space(conv);
          (pa->log_space ? pb : pa) = &conv;
        }
        const Prepared &P = *pa, &Q = *pb;
        couple(P, Q, plan);
        missing_entries(plan, P, Q, pos, a, b, extra);
        fn(th, i, pr, P, Q, &plan, extra);
      }
    cert.done(th);
  }, opt);
}

}  // namespace

MarkovThm2 markov_thm2(const MarkovChainSpec& spec, double eps, unsigned threads, JobControl* control) {
  require(eps > 0.0 && std::isfinite(eps), "eps", eps, "a finite eps > 0");
  const std::size_t n_pairs = spec.k * (spec.k - 1) / 2, slots = spec.n_theta * spec.T * n_pairs;
  MarkovThm2 out;
  out.eta.assign(slots, kInf);
  out.key.assign(slots, 0.0);
  out.dmax.assign(slots, 0.0);
  out.kind.assign(slots, -1);
  out.used_log = for_each_pair(spec, threads, control,
                               [&](std::size_t th, std::size_t i, std::size_t pr, const Prepared& P,
                                   const Prepared& Q, const transport::Plan* plan,
                                   const std::vector<CouplingEntry>& extra) {
    const std::size_t slot = (th * spec.T + i) * n_pairs + pr;
    if (!plan) return;  // an impossible secret: the pair is skipped
    thread_local std::vector<double> d, row, col, mass;
    const std::size_t n0 = plan->mass.size(), n = n0 + extra.size();
    d.resize(n);
    row.resize(n);
    col.resize(n);
    mass.resize(n);
    double dm = 0.0;
    for (std::size_t e = 0; e < n; ++e) {
      if (e < n0) {
        row[e] = P.x[static_cast<std::size_t>(plan->src[e])];
        col[e] = Q.x[static_cast<std::size_t>(plan->dst[e])];
        mass[e] = plan->mass[e];
      } else {
        row[e] = extra[e - n0].x;
        col[e] = extra[e - n0].y;
        mass[e] = extra[e - n0].mass_ub;
      }
      d[e] = std::fabs(row[e] - col[e]);
      dm = std::max(dm, d[e]);
    }
    const transport::Thm2 r = transport::thm2_eta(d.data(), mass.data(), row.data(), col.data(), n, eps,
                                                  mass_rtol(P, Q));
    out.eta[slot] = r.eta;
    out.kind[slot] = static_cast<std::int8_t>(r.kind);
    out.key[slot] = r.key;
    out.dmax[slot] = dm;
  });
  return out;
}

MarkovPlans markov_dagwm_plans(const MarkovChainSpec& spec, unsigned threads, JobControl* control) {
  const std::size_t n_pairs = spec.k * (spec.k - 1) / 2, per_theta = spec.T * n_pairs;
  // per prior buffers (priors run in parallel), concatenated in slot order at the end
  std::vector<std::vector<double>> vs(spec.n_theta), ls(spec.n_theta);
  std::vector<std::vector<std::int64_t>> lens(spec.n_theta);
  MarkovPlans out;
  out.valid.assign(spec.n_theta * per_theta, 0);
  const double up = 1.0 + 0x1p-51, floor_mass = 0x1p-1022;
  out.used_log = for_each_pair(spec, threads, control,
                               [&](std::size_t th, std::size_t i, std::size_t pr, const Prepared& P,
                                   const Prepared& Q, const transport::Plan* plan,
                                   const std::vector<CouplingEntry>& extra) {
    if (!plan) return;
    out.valid[th * per_theta + i * n_pairs + pr] = 1;
    for (std::size_t e = 0; e < plan->mass.size(); ++e) {
      vs[th].push_back((P.x[static_cast<std::size_t>(plan->src[e])] - Q.x[static_cast<std::size_t>(plan->dst[e])]) * up);
      ls[th].push_back(std::log(std::max(plan->mass[e], floor_mass)));
    }
    for (const CouplingEntry& c : extra) {  // an upper bound on the exact mass, rounded up
      vs[th].push_back((c.x - c.y) * up);
      ls[th].push_back(std::log(std::max(c.mass_ub, floor_mass)) * (1.0 - 0x1p-50) + 0x1p-50);
    }
    lens[th].push_back(static_cast<std::int64_t>(plan->mass.size() + extra.size()));
  });
  std::size_t total = 0, n_plans = 0;
  for (std::size_t th = 0; th < spec.n_theta; ++th) {
    total += vs[th].size();
    n_plans += lens[th].size();
  }
  out.v.reserve(total);
  out.logm.reserve(total);
  out.off.reserve(n_plans + 1);
  out.off.push_back(0);
  for (std::size_t th = 0; th < spec.n_theta; ++th) {
    out.v.insert(out.v.end(), vs[th].begin(), vs[th].end());
    out.logm.insert(out.logm.end(), ls[th].begin(), ls[th].end());
    for (std::int64_t L : lens[th]) out.off.push_back(out.off.back() + L);
    std::vector<double>().swap(vs[th]);
    std::vector<double>().swap(ls[th]);
  }
  return out;
}

}  // namespace puffer::models
