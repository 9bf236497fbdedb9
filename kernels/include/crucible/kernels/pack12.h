// 12-bit index packing (protocol.md §4): block-local top-k indices (< 4096)
// two per three bytes, little end first:
//   b0 = a & 0xFF;  b1 = (a >> 8) | ((b & 0xF) << 4);  b2 = b >> 4
// An odd count is padded with a zero index, and unpacking insists the pad is zero
// so that every index list has exactly one encoding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "crucible/common/status.h"

namespace crucible::kernels {

inline constexpr std::uint16_t kMaxIndex12 = 4095;

constexpr std::size_t packed12_size(std::size_t count) noexcept { return (count + 1) / 2 * 3; }

// The checks every pack12 implementation (CPU, CUDA) makes before packing:
// out.size() must be packed12_size(indices.size()); an index above 4095 is invalid_argument.
Status check_pack12_args(std::span<const std::uint16_t> indices, std::span<const std::uint8_t> out);

Status pack_indices12(std::span<const std::uint16_t> indices, std::span<std::uint8_t> out);

// out.size() is the number of indices expected; `bytes` must be exactly
// packed12_size(out.size()) long, or data_loss.
Status unpack_indices12(std::span<const std::uint8_t> bytes, std::span<std::uint16_t> out);

}  // namespace crucible::kernels
