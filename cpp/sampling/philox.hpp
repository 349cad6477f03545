// Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3",
// SC 2011): a counter-based generator. Block = Philox(key, counter); block i depends only on
// (key, i), which is what makes every sampler in this folder bitwise reproducible for any
// thread count and chunking. This scalar version is the reference the SIMD kernels in
// samplers.cpp must match bit for bit (tests compare them via the known-answer vectors of
// Random123).
#pragma once
#include <array>
#include <cstdint>

namespace puffer::sampling {

constexpr std::uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;
constexpr std::uint32_t kPhiloxW0 = 0x9E3779B9u, kPhiloxW1 = 0xBB67AE85u;

inline std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> c, std::uint32_t k0,
                                                  std::uint32_t k1) {
  for (int r = 0; r < 10; ++r) {
    const std::uint64_t p0 = std::uint64_t(kPhiloxM0) * c[0];
    const std::uint64_t p1 = std::uint64_t(kPhiloxM1) * c[2];
    c = {std::uint32_t(p1 >> 32) ^ c[1] ^ k0, std::uint32_t(p1), std::uint32_t(p0 >> 32) ^ c[3] ^ k1,
         std::uint32_t(p0)};
    k0 += kPhiloxW0;
    k1 += kPhiloxW1;
  }
  return c;
}

}  // namespace puffer::sampling
