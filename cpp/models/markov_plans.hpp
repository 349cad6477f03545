// Plan-based mechanisms on the Markov-chain sum query, fed by sum_laws (markov.hpp) one position
// at a time, no law stored: for every prior, position i and state pair a < b, the quantile
// coupling pi* of the laws given X_i = a and X_i = b (built as puffer's Python path builds it:
// float laws normalised like DiscreteDist, log-space laws like LogDiscreteDist, a float law
// paired with a log-space one taken to log space as transport._as_log does), then
//   * Theorem 2 of Ding 2022 on pi* (markov_thm2), or
//   * the DAGWM plan data of Pierquin et al. 2024, Thm 4.5 (markov_dagwm_plans):
//     displacements v = (x - x') (1 + 2^-51) and log-masses log max(m, 2^-1022).
// Pair slots are indexed (theta * T + i) * k(k-1)/2 + pair, pairs (a, b) in lexicographic order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/markov.hpp"
#include "transport/kantorovich.hpp"

namespace puffer::models {

// Per pair slot: eta, binding kind (0 none, 1 row, 2 column, -1 = a secret is impossible: the
// pair is skipped), binding atom, and sup |x - x'| over the plan's entries.
struct MarkovThm2 {
  std::vector<double> eta, key, dmax;
  std::vector<std::int8_t> kind;
  std::vector<std::uint8_t> used_log;  // per prior
};
MarkovThm2 markov_thm2(const MarkovChainSpec& spec, double eps, unsigned threads,
                       JobControl* control = nullptr);

// CSR over the pair slots that exist (valid[slot] = 1): plan of the s-th valid slot in
// v/logm[off[s]..off[s+1]).
struct MarkovPlans {
  std::vector<double> v, logm;
  std::vector<std::int64_t> off;
  std::vector<std::uint8_t> valid, used_log;
};
MarkovPlans markov_dagwm_plans(const MarkovChainSpec& spec, unsigned threads,
                               JobControl* control = nullptr);

}  // namespace puffer::models
