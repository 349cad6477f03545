#include "sampling/chacha20.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/errors.hpp"

namespace puffer::sampling {
namespace {
inline std::uint32_t rotl(std::uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
inline void qr(std::uint32_t& a, std::uint32_t& b, std::uint32_t& c, std::uint32_t& d) {
  a += b; d ^= a; d = rotl(d, 16);
  c += d; b ^= c; b = rotl(b, 12);
  a += b; d ^= a; d = rotl(d, 8);
  c += d; b ^= c; b = rotl(b, 7);
}
}  // namespace

void os_entropy(void* buf, std::size_t n) {
  auto* p = static_cast<unsigned char*>(buf);
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = getrandom(p + got, n - got, 0);
    if (r > 0) {
      got += std::size_t(r);
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    break;
  }
  if (got == n) return;
  std::FILE* f = std::fopen("/dev/urandom", "rb");
  if (f != nullptr) {
    got += std::fread(p + got, 1, n - got, f);
    std::fclose(f);
  }
  if (got != n) throw NumericalFailure("secure sampling: the OS did not provide entropy");
}

std::array<std::uint32_t, 16> chacha20_block(const std::array<std::uint32_t, 16>& in) {
  std::array<std::uint32_t, 16> x = in;
  for (int i = 0; i < 10; ++i) {
    qr(x[0], x[4], x[8], x[12]);
    qr(x[1], x[5], x[9], x[13]);
    qr(x[2], x[6], x[10], x[14]);
    qr(x[3], x[7], x[11], x[15]);
    qr(x[0], x[5], x[10], x[15]);
    qr(x[1], x[6], x[11], x[12]);
    qr(x[2], x[7], x[8], x[13]);
    qr(x[3], x[4], x[9], x[14]);
  }
  for (int i = 0; i < 16; ++i) x[i] += in[i];
  return x;
}

ChaCha20::ChaCha20(const std::array<std::uint32_t, 8>& key, const std::array<std::uint32_t, 3>& nonce) {
  state_[0] = 0x61707865u;
  state_[1] = 0x3320646eu;
  state_[2] = 0x79622d32u;
  state_[3] = 0x6b206574u;
  for (int i = 0; i < 8; ++i) state_[4 + i] = key[i];
  state_[12] = 0;
  for (int i = 0; i < 3; ++i) state_[13 + i] = nonce[i];
}

void ChaCha20::refill() {
  block_ = chacha20_block(state_);
  // 2^32 blocks (256 GiB) per (key, nonce); callers use a fresh nonce per task far below that.
  if (++state_[12] == 0) throw NumericalFailure("secure sampling: ChaCha20 block counter exhausted");
  pos_ = 0;
}

std::uint64_t ChaCha20::next_u64() {
  if (pos_ + 2 > 16) refill();
  const std::uint64_t v = std::uint64_t(block_[pos_]) | (std::uint64_t(block_[pos_ + 1]) << 32);
  pos_ += 2;
  return v;
}

bool ChaCha20::bit() {
  if (nbits_ == 0) {
    bits_ = next_u64();
    nbits_ = 64;
  }
  const bool b = bits_ & 1u;
  bits_ >>= 1;
  --nbits_;
  return b;
}

std::uint64_t ChaCha20::below(std::uint64_t n) {
  // Lemire (2019) multiply-and-reject: exactly uniform.
  unsigned __int128 m = (unsigned __int128)next_u64() * n;
  std::uint64_t l = std::uint64_t(m);
  if (l < n) {
    const std::uint64_t t = (0 - n) % n;
    while (l < t) {
      m = (unsigned __int128)next_u64() * n;
      l = std::uint64_t(m);
    }
  }
  return std::uint64_t(m >> 64);
}

unsigned __int128 ChaCha20::below128(unsigned __int128 n) {
  if ((n >> 64) == 0) return below(std::uint64_t(n));
  // Mask to the bit length of n - 1 and reject (acceptance > 1/2).
  unsigned __int128 m = n - 1;
  int bits = 0;
  while (m != 0) {
    ++bits;
    m >>= 1;
  }
  const unsigned __int128 mask = bits >= 128 ? ~(unsigned __int128)0 : (((unsigned __int128)1 << bits) - 1);
  for (;;) {
    const unsigned __int128 r = (((unsigned __int128)next_u64() << 64) | next_u64()) & mask;
    if (r < n) return r;
  }
}

}  // namespace puffer::sampling
