// One tensor's compression step with error feedback (protocol.md §3-4):
//   e <- beta * e + delta;  c = compress(e);  e <- e - decompress(c)
// so e also keeps the quantisation error for the next window.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "crucible/kernels/codec.h"

namespace crucible::kernels {

// A compressed tensor before it is packed into a packet.
struct CompressedTensor {
  BlockLayout layout;
  std::vector<std::uint16_t> indices;  // layout.kept(), ascending per block
  std::vector<std::uint8_t> codes;     // one 2-bit code per kept value
  Quant2 quant;
};

Result<CompressedTensor> compress(std::span<const float> x, std::span<const std::int64_t> shape, int threads = 0);
// Dense float tensor of the compressed values (dequantised), zeros elsewhere.
Status decompress(const CompressedTensor& c, std::span<float> out, int threads = 1);

// Applies one error-feedback step in place on `ef` and returns what to send.
// `delta` and `ef` have the tensor's element count; a non-finite delta is
// refused before `ef` changes. `threads` <= 0: the hardware's count; the
// result is the same bytes for every count.
Result<CompressedTensor> error_feedback_step(std::span<float> ef, std::span<const float> delta,
                                             std::span<const std::int64_t> shape, float beta, int threads = 0,
                                             int k_per_4096 = kTopKPer4096);

}  // namespace crucible::kernels
