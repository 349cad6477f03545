// ChaCha20 (RFC 8439) as a CSPRNG for secure mode: 256-bit key, 96-bit nonce, 32-bit block
// counter; keystream read as little-endian 64-bit words. Keys come from the OS
// (getrandom(2), falling back to /dev/urandom) unless a test passes one explicitly.
#pragma once
#include <array>
#include <cstdint>

namespace puffer::sampling {

// Fills buf with n bytes of OS entropy; throws NumericalFailure if the OS cannot provide them.
void os_entropy(void* buf, std::size_t n);

class ChaCha20 {
 public:
  ChaCha20(const std::array<std::uint32_t, 8>& key, const std::array<std::uint32_t, 3>& nonce);
  std::uint64_t next_u64();
  // Exactly uniform on [0, n) by rejection (no modulo bias); n > 0.
  std::uint64_t below(std::uint64_t n);
  unsigned __int128 below128(unsigned __int128 n);
  bool bit();

 private:
  void refill();
  std::array<std::uint32_t, 16> state_{};
  std::array<std::uint32_t, 16> block_{};
  unsigned pos_ = 16;  // next unused 32-bit word of block_
  std::uint64_t bits_ = 0;
  unsigned nbits_ = 0;
};

// RFC 8439 block function (exposed for the known-answer test).
std::array<std::uint32_t, 16> chacha20_block(const std::array<std::uint32_t, 16>& in);

}  // namespace puffer::sampling
