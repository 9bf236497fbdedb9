#include "crucible/chain/keccak.h"

#include <cstring>

namespace crucible::chain {
namespace {

constexpr std::uint64_t kRoundConstants[24] = {
    0x0000000000000001ULL, 0x0000000000008082ULL, 0x800000000000808AULL, 0x8000000080008000ULL, 0x000000000000808BULL,
    0x0000000080000001ULL, 0x8000000080008081ULL, 0x8000000000008009ULL, 0x000000000000008AULL, 0x0000000000000088ULL,
    0x0000000080008009ULL, 0x000000008000000AULL, 0x000000008000808BULL, 0x800000000000008BULL, 0x8000000000008089ULL,
    0x8000000000008003ULL, 0x8000000000008002ULL, 0x8000000000000080ULL, 0x000000000000800AULL, 0x800000008000000AULL,
    0x8000000080008081ULL, 0x8000000000008080ULL, 0x0000000080000001ULL, 0x8000000080008008ULL};

constexpr int kRotations[25] = {0,  1,  62, 28, 27, 36, 44, 6,  55, 20, 3,  10, 43,
                                25, 39, 41, 45, 15, 21, 8,  18, 2,  61, 56, 14};

inline std::uint64_t rotl(std::uint64_t x, int n) { return n == 0 ? x : (x << n) | (x >> (64 - n)); }

void keccak_f1600(std::array<std::uint64_t, 25>& a) {
  for (std::uint64_t rc : kRoundConstants) {
    std::uint64_t c[5], d[5], b[25];
    for (int x = 0; x < 5; ++x) c[x] = a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20];
    for (int x = 0; x < 5; ++x) d[x] = c[(x + 4) % 5] ^ rotl(c[(x + 1) % 5], 1);
    for (int i = 0; i < 25; ++i) a[i] ^= d[i % 5];
    // rho and pi: b[y, 2x + 3y] = rot(a[x, y], r[x, y])
    for (int x = 0; x < 5; ++x) {
      for (int y = 0; y < 5; ++y) b[y + 5 * ((2 * x + 3 * y) % 5)] = rotl(a[x + 5 * y], kRotations[x + 5 * y]);
    }
    for (int y = 0; y < 5; ++y) {
      for (int x = 0; x < 5; ++x) a[x + 5 * y] = b[x + 5 * y] ^ (~b[(x + 1) % 5 + 5 * y] & b[(x + 2) % 5 + 5 * y]);
    }
    a[0] ^= rc;
  }
}

void absorb_block(std::array<std::uint64_t, 25>& state, const std::uint8_t* block) {
  for (int i = 0; i < 17; ++i) {
    std::uint64_t lane = 0;
    for (int j = 7; j >= 0; --j) lane = (lane << 8) | block[8 * i + j];  // little-endian lanes
    state[i] ^= lane;
  }
  keccak_f1600(state);
}

}  // namespace

Keccak256& Keccak256::update(ByteSpan data) {
  std::size_t pos = 0;
  if (buffered_ > 0) {
    std::size_t take = std::min(buffer_.size() - buffered_, data.size());
    std::memcpy(buffer_.data() + buffered_, data.data(), take);
    buffered_ += take;
    pos = take;
    if (buffered_ < buffer_.size()) return *this;
    absorb_block(state_, buffer_.data());
    buffered_ = 0;
  }
  for (; pos + buffer_.size() <= data.size(); pos += buffer_.size()) absorb_block(state_, data.data() + pos);
  if (pos < data.size()) {
    std::memcpy(buffer_.data(), data.data() + pos, data.size() - pos);
    buffered_ = data.size() - pos;
  }
  return *this;
}

Hash32 Keccak256::finish() {
  std::memset(buffer_.data() + buffered_, 0, buffer_.size() - buffered_);
  buffer_[buffered_] ^= 0x01;  // Keccak padding, not SHA3's 0x06
  buffer_.back() ^= 0x80;
  absorb_block(state_, buffer_.data());
  Hash32 out{};
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 8; ++j) out[8 * i + j] = static_cast<std::uint8_t>(state_[i] >> (8 * j));
  }
  return out;
}

Hash32 keccak256(ByteSpan data) { return Keccak256().update(data).finish(); }

}  // namespace crucible::chain
