// Composition accounting for general granularity notions (Guerra-Balboa, Miranda-Pascual,
// Parra-Arnau, Strufe, "Composition in Differential Privacy for General Granularity Notions",
// IEEE CSF 2024).
//
// Contract:
//  * group_factor(n, eps) = [n]_eps = (e^{eps n} - 1)/(e^{eps} - 1) (Sec. VI-A), computed as
//    expm1(eps n)/expm1(eps) and moved up a few ulps; [n]_0 = n, [inf]_eps = inf.
//  * ext_mul(a, n) = a * n with the convention 0 * inf = inf: a 0-DP guarantee w.r.t. a
//    granularity in which two databases are not connected says nothing about them (Ex. II.9).
//  * bfs_multi: multi-source breadth-first distances on an undirected graph in CSR form
//    (canonical path metric d^G of Prop. A.1, fibre distances of Prop. IV.10).
//  * footprint_max_single / footprint_max_pair: the edge maximum of the unified reduction
//    (Thm IV.11 and its (eps, delta), zCDP and GDP analogues) for record-level selectors.
//    A footprint S is the set of releases whose selector sees a record x. An add/remove edge
//    changes exactly the releases in S (loss = sum_{i in S} t1_i). A replace edge x -> x'
//    changes S u T; releases in S xor T see a one-sided change (term t1_i), releases in S n T
//    see both sides (term t2_i). Terms are >= 0 (inf allowed); nothing is subtracted, so no
//    inf - inf. The returned value is the floating maximum; callers inflate it by the
//    summation error bound (at most `terms` additions of non-negative numbers).
#pragma once
#include <cstddef>
#include <cstdint>

namespace puffer::accounting {

double group_factor(double n, double eps);
double ext_mul(double a, double n);

// dist_out[v] = min over sources s of the number of edges on a shortest path s -> v, or -1 if
// v is not reached within `cap` steps (cap < 0: no cap). Returns the number of reached vertices.
std::size_t bfs_multi(const std::int64_t* indptr, const std::int64_t* indices, std::size_t n_vertices,
                      const std::int64_t* sources, std::size_t n_sources, std::int64_t cap,
                      std::int64_t* dist_out);

struct FootprintMax {
  double value;       // floating maximum of the edge loss
  std::int64_t s, t;  // footprints attaining it (t = -1 for the single-set maximum)
  std::size_t terms;  // largest number of terms summed in one candidate
  std::size_t pairs_evaluated;
};

// Footprints in CSR: members of footprint f are indices[indptr[f] .. indptr[f+1]), sorted,
// distinct, each in [0, k).
FootprintMax footprint_max_single(const std::int64_t* indptr, const std::int64_t* indices, std::size_t n_fp,
                                  const double* t1, std::size_t k);

// self_ok[f] != 0 when two distinct records share footprint f (so S = T is an edge).
FootprintMax footprint_max_pair(const std::int64_t* indptr, const std::int64_t* indices, std::size_t n_fp,
                                const std::uint8_t* self_ok, const double* t1, const double* t2, std::size_t k);

}  // namespace puffer::accounting
