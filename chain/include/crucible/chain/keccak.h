// Keccak-256 as Ethereum uses it: the original Keccak padding (0x01), not
// SHA3-256's (0x06). OpenSSL 3.0 (Debian 12) exposes only the SHA3 variant,
// so the permutation is written here and checked against published vectors.
#pragma once

#include <array>
#include <cstdint>

#include "crucible/common/bytes.h"

namespace crucible::chain {

using Hash32 = std::array<std::uint8_t, 32>;

class Keccak256 {
 public:
  Keccak256() = default;
  Keccak256& update(ByteSpan data);
  Hash32 finish();  // the object is spent afterwards

 private:
  std::array<std::uint64_t, 25> state_{};
  std::array<std::uint8_t, 136> buffer_{};  // rate of Keccak-256
  std::size_t buffered_ = 0;
};

Hash32 keccak256(ByteSpan data);

}  // namespace crucible::chain
