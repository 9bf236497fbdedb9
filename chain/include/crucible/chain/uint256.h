// A 256-bit unsigned integer as 32 big-endian bytes: enough for wei amounts
// and ABI words. No arithmetic beyond what the client needs.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "crucible/common/bytes.h"

namespace crucible::chain {

class U256 {
 public:
  constexpr U256() = default;
  constexpr explicit U256(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) be_[31 - i] = static_cast<std::uint8_t>(v >> (8 * i));
  }
  static U256 from_be(const std::array<std::uint8_t, 32>& be) {
    U256 u;
    u.be_ = be;
    return u;
  }
  // At most 32 big-endian bytes.
  static Result<U256> from_be_bytes(ByteSpan be);
  // "0x..." hex (JSON-RPC quantities) or decimal digits.
  static Result<U256> parse(std::string_view text);

  const std::array<std::uint8_t, 32>& be() const noexcept { return be_; }
  Bytes minimal_be() const;  // no leading zeros; zero -> empty
  bool fits_u64() const noexcept;
  std::uint64_t low_u64() const noexcept;
  std::string to_decimal() const;
  std::string to_quantity() const;  // JSON-RPC "0x..." without leading zeros

  // a * m + add, or out_of_range on overflow (used to parse decimal).
  Result<U256> mul_add(std::uint32_t m, std::uint32_t add) const;

  friend bool operator==(const U256&, const U256&) = default;
  friend auto operator<=>(const U256& a, const U256& b) { return a.be_ <=> b.be_; }

 private:
  std::array<std::uint8_t, 32> be_{};
};

}  // namespace crucible::chain
