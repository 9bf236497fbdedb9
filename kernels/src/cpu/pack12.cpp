#include "crucible/kernels/pack12.h"

namespace crucible::kernels {

Status check_pack12_args(std::span<const std::uint16_t> indices, std::span<const std::uint8_t> out) {
  if (out.size() != packed12_size(indices.size())) {
    return invalid_argument("pack12: output holds {} bytes, {} indices need {}", out.size(), indices.size(),
                            packed12_size(indices.size()));
  }
  for (std::size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] > kMaxIndex12)
      return invalid_argument("pack12: index {} at position {} exceeds 4095", indices[i], i);
  }
  return Status::ok();
}

Status pack_indices12(std::span<const std::uint16_t> indices, std::span<std::uint8_t> out) {
  CRUCIBLE_RETURN_IF_ERROR(check_pack12_args(indices, out));
  for (std::size_t pair = 0; pair < (indices.size() + 1) / 2; ++pair) {
    std::uint16_t a = indices[2 * pair];
    std::uint16_t b = 2 * pair + 1 < indices.size() ? indices[2 * pair + 1] : 0;
    out[3 * pair] = static_cast<std::uint8_t>(a & 0xFF);
    out[3 * pair + 1] = static_cast<std::uint8_t>((a >> 8) | ((b & 0xF) << 4));
    out[3 * pair + 2] = static_cast<std::uint8_t>(b >> 4);
  }
  return Status::ok();
}

Status unpack_indices12(std::span<const std::uint8_t> bytes, std::span<std::uint16_t> out) {
  if (bytes.size() != packed12_size(out.size())) {
    return data_loss("unpack12: {} bytes for {} indices, expected {}", bytes.size(), out.size(),
                     packed12_size(out.size()));
  }
  for (std::size_t pair = 0; pair < (out.size() + 1) / 2; ++pair) {
    std::uint8_t b0 = bytes[3 * pair], b1 = bytes[3 * pair + 1], b2 = bytes[3 * pair + 2];
    out[2 * pair] = static_cast<std::uint16_t>(b0 | ((b1 & 0xF) << 8));
    std::uint16_t b = static_cast<std::uint16_t>((b1 >> 4) | (b2 << 4));
    if (2 * pair + 1 < out.size()) {
      out[2 * pair + 1] = b;
    } else if (b != 0) {
      return data_loss("unpack12: non-zero padding after the last of {} indices", out.size());
    }
  }
  return Status::ok();
}

}  // namespace crucible::kernels
