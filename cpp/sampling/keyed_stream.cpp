// Scalar reference of the keyed ChaCha20 block layout (keyed_stream.hpp); the SIMD kernels in
// samplers.cpp must produce these words bit for bit (cpp/tests/test_kernels.cpp checks it).
#include "sampling/keyed_stream.hpp"

#include "sampling/chacha20.hpp"

namespace puffer::sampling {

std::array<std::uint32_t, 16> keyed_block_input(const KeyedKey& k, std::uint32_t w12, std::uint32_t w13,
                                                std::uint32_t w14) {
  std::array<std::uint32_t, 16> s{};
  s[0] = 0x61707865u;  // "expand 32-byte k" (RFC 8439 section 2.3)
  s[1] = 0x3320646eu;
  s[2] = 0x79622d32u;
  s[3] = 0x6b206574u;
  for (int i = 0; i < 8; ++i) s[4 + i] = k.key[i];
  s[12] = w12;
  s[13] = w13;
  s[14] = w14;
  s[15] = k.word;
  return s;
}

namespace {
std::array<std::uint64_t, 8> words_of(const std::array<std::uint32_t, 16>& x) {
  std::array<std::uint64_t, 8> w{};
  for (int k = 0; k < 8; ++k) w[k] = std::uint64_t(x[2 * k]) | (std::uint64_t(x[2 * k + 1]) << 32);
  return w;
}
}  // namespace

std::array<std::uint64_t, 8> keyed_pair_words(const KeyedKey& k, std::uint64_t j) {
  return words_of(chacha20_block(keyed_block_input(k, std::uint32_t(j), std::uint32_t(j >> 32), 0)));
}

std::array<std::uint64_t, 8> keyed_lattice_words(const KeyedKey& k, std::uint64_t j) {
  return words_of(
      chacha20_block(keyed_block_input(k, std::uint32_t(j), std::uint32_t(j >> 32), kLatticeTag << kKeyedTagShift)));
}

std::array<std::uint64_t, 8> keyed_reject_words(const KeyedKey& k, std::uint32_t tag, std::uint64_t i,
                                                std::uint32_t attempt) {
  return words_of(chacha20_block(
      keyed_block_input(k, std::uint32_t(i), std::uint32_t(i >> 32), (tag << kKeyedTagShift) | attempt)));
}

}  // namespace puffer::sampling
