#include "crucible/kernels/error_feedback.h"

#include <cmath>

namespace crucible::kernels {

Result<CompressedTensor> compress(std::span<const float> x, std::span<const std::int64_t> shape, int threads) {
  CompressedTensor c;
  CRUCIBLE_ASSIGN_OR_RETURN(c.layout, layout_for(shape));
  if (static_cast<std::int64_t>(x.size()) != c.layout.rows * c.layout.cols) {
    return invalid_argument("compress: {} values for the shape", x.size());
  }
  auto kept = static_cast<std::size_t>(c.layout.kept());
  c.indices.resize(kept);
  std::vector<float> values(kept);
  CRUCIBLE_RETURN_IF_ERROR(select_topk(x, c.layout, c.indices, values, threads));
  c.codes.resize(kept);
  c.quant = quantize2(values, c.codes);
  return c;
}

Status decompress(const CompressedTensor& c, std::span<float> out) {
  std::vector<float> values(c.codes.size());
  dequantize2(c.quant, c.codes, values);
  return decode_dense(c.layout, c.indices, values, out);
}

Result<CompressedTensor> error_feedback_step(std::span<float> ef, std::span<const float> delta,
                                             std::span<const std::int64_t> shape, float beta, int threads) {
  if (ef.size() != delta.size()) return invalid_argument("error feedback: buffer and delta differ in size");
  if (!std::isfinite(beta) || beta < 0 || beta > 1)
    return invalid_argument("error feedback: beta {} not in [0, 1]", beta);
  for (std::size_t i = 0; i < delta.size(); ++i) {
    if (!std::isfinite(delta[i])) return invalid_argument("error feedback: non-finite delta at {}", i);
    ef[i] = beta * ef[i] + delta[i];
  }
  CRUCIBLE_ASSIGN_OR_RETURN(CompressedTensor c, compress(ef, shape, threads));
  std::vector<float> sent(ef.size());
  CRUCIBLE_RETURN_IF_ERROR(decompress(c, sent));
  for (std::size_t i = 0; i < ef.size(); ++i) ef[i] -= sent[i];
  return c;
}

}  // namespace crucible::kernels
