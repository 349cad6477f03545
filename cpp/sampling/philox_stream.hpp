// A per-value Philox sub-stream (see partial.hpp): blocks (i, sub = 0, 1, ...), two 64-bit
// words per block, consumed in order.
#pragma once
#include <cmath>
#include <cstdint>

#include "sampling/philox.hpp"
#include "sampling/samplers.hpp"

namespace puffer::sampling {

class ValueStream {
 public:
  ValueStream(StreamKey key, std::uint64_t index) : key_(key), index_(index) {}
  std::uint64_t next() {
    if (have_ == 0) {
      const auto b = philox4x32_10({std::uint32_t(index_), std::uint32_t(index_ >> 32), sub_++, key_.word},
                                   key_.k0, key_.k1);
      w_[0] = std::uint64_t(b[0]) | (std::uint64_t(b[1]) << 32);
      w_[1] = std::uint64_t(b[2]) | (std::uint64_t(b[3]) << 32);
      have_ = 2;
    }
    return w_[2 - have_--];
  }
  // (k + 1/2) 2^-53 in (0, 1).
  double u53() { return (double(next() >> 11) + 0.5) * 0x1p-53; }
  // (k + 1/2) 2^-63 in (0, 1), full relative precision near 0 (tails).
  double fine() { return (double(next() >> 1) + 0.5) * 0x1p-63; }
  // Exponential(1) by inversion of a fine uniform.
  double expo() { return -std::log(fine()); }

 private:
  StreamKey key_;
  std::uint64_t index_;
  std::uint32_t sub_ = 0;
  std::uint64_t w_[2] = {0, 0};
  int have_ = 0;
};

}  // namespace puffer::sampling
