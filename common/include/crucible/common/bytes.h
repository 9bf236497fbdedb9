// Byte buffers and hex, shared by every module that speaks a wire format.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "crucible/common/status.h"

namespace crucible {

using Bytes = std::vector<std::uint8_t>;
using ByteSpan = std::span<const std::uint8_t>;

// Lower-case hex, "0x"-prefixed unless `prefix` is false.
std::string to_hex(ByteSpan bytes, bool prefix = true);

// Accepts an optional 0x/0X prefix and either case; odd length or a non-hex
// character is invalid_argument naming the position.
Result<Bytes> from_hex(std::string_view hex);

// Exactly N bytes from hex, or invalid_argument.
template <std::size_t N>
Result<std::array<std::uint8_t, N>> from_hex_fixed(std::string_view hex) {
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes b, from_hex(hex));
  if (b.size() != N) return invalid_argument("expected {} bytes of hex, got {}", N, b.size());
  std::array<std::uint8_t, N> out{};
  std::copy(b.begin(), b.end(), out.begin());
  return out;
}

inline ByteSpan as_bytes(std::string_view s) { return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()}; }

// A zero-filled buffer of n bytes. Large ones ask the kernel for huge pages
// first: faulting in 4 KiB pages of a fresh 256 MiB buffer costs ~0.8 s on
// these VMs, huge pages ~0.03 s (docs/benchmarks.md).
Bytes zeroed_buffer(std::size_t n);

// Big-endian bytes of `v` without leading zeros (0 -> empty).
Bytes be_minimal(std::uint64_t v);

}  // namespace crucible
