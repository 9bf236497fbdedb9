#include "crucible/common/bytes.h"

#include <sys/mman.h>

#include <cstdint>

namespace crucible {
namespace {

int nibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string to_hex(ByteSpan bytes, bool prefix) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = prefix ? "0x" : "";
  out.reserve(out.size() + 2 * bytes.size());
  for (std::uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 0xF];
  }
  return out;
}

Result<Bytes> from_hex(std::string_view hex) {
  if (hex.size() >= 2 && hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X')) hex.remove_prefix(2);
  if (hex.size() % 2 != 0) return invalid_argument("hex string has odd length {}", hex.size());
  Bytes out(hex.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return invalid_argument("non-hex character at position {}", 2 * i + (hi < 0 ? 0 : 1));
    out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return out;
}

Bytes zeroed_buffer(std::size_t n) {
  constexpr std::size_t kHuge = 2u << 20;
  Bytes out;
  out.reserve(n);  // allocated, not yet touched
  if (n >= 2 * kHuge) {
    auto p = reinterpret_cast<std::uintptr_t>(out.data());
    std::uintptr_t aligned = (p + kHuge - 1) & ~(kHuge - 1);
    (void)madvise(reinterpret_cast<void*>(aligned), n - (aligned - p), MADV_HUGEPAGE);  // a hint; fine if refused
  }
  out.resize(n);
  return out;
}

Bytes be_minimal(std::uint64_t v) {
  Bytes out;
  for (int shift = 56; shift >= 0; shift -= 8) {
    auto b = static_cast<std::uint8_t>(v >> shift);
    if (b != 0 || !out.empty()) out.push_back(b);
  }
  return out;
}

}  // namespace crucible
