// Internals shared by the Markov law kernel (markov.cpp) and the W-infinity walk over its laws
// (markov_walk.cpp): the sum grid of a chain and the two-stream law computation that the
// skipping of interior positions uses (docs/long-chains.md, "What the code computes", item 3).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/job.hpp"
#include "models/markov.hpp"

namespace puffer::models {

struct Geometry {
  std::size_t k, T, span, R;
  std::vector<std::size_t> dv;  // values - min value
  std::size_t lf(std::size_t t) const { return (t + 1) * span + 1; }      // forward slice t
  std::size_t lb(std::size_t t) const { return (T - 1 - t) * span + 1; }  // backward slice t
};

Geometry geometry(const MarkovChainSpec& spec);

// The forward slice and the backward slice of one prior at some positions (the representatives
// of the skipping), kept when the streams pass them: rows of k states, extended range.
struct KeptSlices {
  std::vector<std::size_t> at;  // positions, ascending
  std::vector<std::vector<double>> fm, bm;
  std::vector<std::vector<std::int32_t>> fe, be;
};

// One stream of prior th without checkpoints. which = 0: the forward pass u_0, u_1, ... up to
// the last position needed, emitting the laws at `positions` (ascending; the backward slices
// of those positions are computed first from the terminal slice: the positions should be near
// the right end) and keeping the forward slices at keep.at. which = 1: the backward pass
// w_{T-1}, w_{T-2}, ..., emitting the laws at `positions` (near the left end; their forward
// slices are computed first) and keeping the backward slices at keep.at. Returns whether some
// law kept the extended form. emit may be called concurrently with the other stream.
bool stream_laws(const MarkovChainSpec& spec, std::size_t th, int which, const std::vector<std::size_t>& positions,
                 KeptSlices& keep, const PositionFn& emit, JobControl* control);

// The laws of prior th at keep.at[j] from the kept slices of both streams.
bool kept_laws(const MarkovChainSpec& spec, std::size_t th, const KeptSlices& keep, std::size_t j,
               const PositionFn& emit);

// Bytes the two streams of one prior allocate (buffers, the end slices of a window m, the kept
// slices of n_kept positions).
double stream_bytes(std::size_t k, std::size_t T, std::size_t span, std::size_t m, std::size_t n_kept);

// Tests of the skipping certificate (docs/long-chains.md, Lemma 5 and Theorem 6): the upper and
// the lower walk on the comparison table A'_eta of two plain laws (atoms on the integer grid
// from `base`, levels with the error bound of a chain of length T, k states and R sums).
void drift_walks(const Law& a, const Law& b, std::size_t T, std::size_t k, std::size_t R, double base, double eta,
                 double& upper, double& lower);

}  // namespace puffer::models
