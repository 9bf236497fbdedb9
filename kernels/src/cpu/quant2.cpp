#include <cmath>

#include "crucible/kernels/codec.h"

namespace crucible::kernels {

Quant2 quantize2(std::span<const float> v, std::span<std::uint8_t> codes) {
  Quant2 q;
  const std::size_t n = v.size();
  if (n == 0) return q;
  // Fixed-order double sums: every node gets the same bits.
  double sum = 0;
  for (float x : v) sum += x;
  double shift = sum / static_cast<double>(n);
  double sq = 0;
  for (float x : v) sq += (x - shift) * (x - shift);
  double sigma = n > 1 ? std::sqrt(sq) / std::sqrt(static_cast<double>(n - 1)) : 0.0;
  double scale = 6.0 * sigma / 4.0;
  std::array<double, 4> bin_sum{};
  std::array<std::size_t, 4> bin_n{};
  for (std::size_t i = 0; i < n; ++i) {
    double c = v[i] - shift;
    double r = scale > 0 ? std::nearbyint(c / scale + 2.0) : 2.0;  // half to even
    auto code = static_cast<std::uint8_t>(std::min(3.0, std::max(0.0, r)));
    codes[i] = code;
    bin_sum[code] += c;
    ++bin_n[code];
  }
  q.shift = static_cast<float>(shift);
  q.scale = static_cast<float>(scale);
  for (int b = 0; b < 4; ++b) {
    q.lookup[static_cast<std::size_t>(b)] =
        bin_n[static_cast<std::size_t>(b)] ? static_cast<float>(bin_sum[static_cast<std::size_t>(b)] /
                                                                static_cast<double>(bin_n[static_cast<std::size_t>(b)]))
                                           : 0.0f;
  }
  return q;
}

void dequantize2(const Quant2& q, std::span<const std::uint8_t> codes, std::span<float> out) {
  for (std::size_t i = 0; i < codes.size() && i < out.size(); ++i) out[i] = q.lookup[codes[i] & 3] + q.shift;
}

Status pack_codes2(std::span<const std::uint8_t> codes, std::span<std::uint8_t> out) {
  if (out.size() != packed2_size(codes.size())) return invalid_argument("pack2: wrong output size");
  std::fill(out.begin(), out.end(), 0);
  for (std::size_t i = 0; i < codes.size(); ++i) {
    if (codes[i] > 3) return invalid_argument("pack2: code {} at {} exceeds 3", codes[i], i);
    out[i / 4] |= static_cast<std::uint8_t>(codes[i] << (2 * (i % 4)));
  }
  return Status::ok();
}

Status unpack_codes2(std::span<const std::uint8_t> packed, std::span<std::uint8_t> codes) {
  if (packed.size() != packed2_size(codes.size())) {
    return data_loss("unpack2: {} bytes for {} codes, expected {}", packed.size(), codes.size(),
                     packed2_size(codes.size()));
  }
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = (packed[i / 4] >> (2 * (i % 4))) & 3;
  if (codes.size() % 4 != 0 && (packed.back() >> (2 * (codes.size() % 4))) != 0) {
    return data_loss("unpack2: non-zero padding after the last of {} codes", codes.size());
  }
  return Status::ok();
}

}  // namespace crucible::kernels
