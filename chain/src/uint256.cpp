#include "crucible/chain/uint256.h"

#include <algorithm>

namespace crucible::chain {

Result<U256> U256::from_be_bytes(ByteSpan be) {
  if (be.size() > 32) return out_of_range("{} bytes do not fit in 256 bits", be.size());
  U256 u;
  std::copy(be.begin(), be.end(), u.be_.begin() + static_cast<std::ptrdiff_t>(32 - be.size()));
  return u;
}

Result<U256> U256::mul_add(std::uint32_t m, std::uint32_t add) const {
  U256 out;
  std::uint64_t carry = add;
  for (int i = 31; i >= 0; --i) {
    std::uint64_t v = static_cast<std::uint64_t>(be_[i]) * m + carry;
    out.be_[i] = static_cast<std::uint8_t>(v);
    carry = v >> 8;
  }
  if (carry != 0) return out_of_range("value does not fit in 256 bits");
  return out;
}

Result<U256> U256::parse(std::string_view text) {
  if (text.empty()) return invalid_argument("empty number");
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    std::string hex(text.substr(2));
    if (hex.size() > 64) return out_of_range("quantity '{}' does not fit in 256 bits", text);
    if (hex.size() % 2 != 0) hex.insert(hex.begin(), '0');
    CRUCIBLE_ASSIGN_OR_RETURN(Bytes b, from_hex(hex));
    return from_be_bytes(b);
  }
  U256 acc;
  for (char c : text) {
    if (c < '0' || c > '9') return invalid_argument("'{}' is not a decimal number", text);
    CRUCIBLE_ASSIGN_OR_RETURN(acc, acc.mul_add(10, static_cast<std::uint32_t>(c - '0')));
  }
  return acc;
}

Bytes U256::minimal_be() const {
  auto first = std::find_if(be_.begin(), be_.end(), [](std::uint8_t b) { return b != 0; });
  return Bytes(first, be_.end());
}

bool U256::fits_u64() const noexcept {
  return std::all_of(be_.begin(), be_.begin() + 24, [](std::uint8_t b) { return b == 0; });
}

std::uint64_t U256::low_u64() const noexcept {
  std::uint64_t v = 0;
  for (int i = 24; i < 32; ++i) v = (v << 8) | be_[i];
  return v;
}

std::string U256::to_decimal() const {
  // Repeated division by 10 on a copy.
  std::array<std::uint8_t, 32> n = be_;
  std::string digits;
  bool zero = false;
  while (!zero) {
    std::uint32_t rem = 0;
    zero = true;
    for (auto& b : n) {
      std::uint32_t cur = (rem << 8) | b;
      b = static_cast<std::uint8_t>(cur / 10);
      rem = cur % 10;
      if (b != 0) zero = false;
    }
    digits.push_back(static_cast<char>('0' + rem));
  }
  std::reverse(digits.begin(), digits.end());
  return digits;
}

std::string U256::to_quantity() const {
  std::string hex = to_hex(minimal_be(), false);
  if (hex.empty()) return "0x0";
  if (hex[0] == '0') hex.erase(0, 1);
  return "0x" + hex;
}

}  // namespace crucible::chain
