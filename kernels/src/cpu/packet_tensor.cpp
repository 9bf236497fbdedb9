#include "crucible/kernels/packet_tensor.h"

#include <cmath>

#include "crucible/kernels/pack12.h"

namespace crucible::kernels {

Result<packet::Tensor> to_packet_tensor(std::string name, std::span<const std::int64_t> shape,
                                        const CompressedTensor& c) {
  packet::Tensor t;
  t.name = std::move(name);
  t.shape.assign(shape.begin(), shape.end());
  t.block_rows = static_cast<std::uint32_t>(c.layout.block_rows);
  t.block_cols = static_cast<std::uint32_t>(c.layout.block_cols);
  t.k = static_cast<std::uint32_t>(c.layout.k);
  t.shift = c.quant.shift;
  t.scale = c.quant.scale;
  t.lookup = c.quant.lookup;
  t.indices.resize(packed12_size(c.indices.size()));
  CRUCIBLE_RETURN_IF_ERROR(pack_indices12(c.indices, t.indices));
  t.codes.resize(packed2_size(c.codes.size()));
  CRUCIBLE_RETURN_IF_ERROR(pack_codes2(c.codes, t.codes));
  return t;
}

Result<CompressedTensor> from_packet_tensor(const packet::Tensor& t) {
  CompressedTensor c;
  CRUCIBLE_ASSIGN_OR_RETURN(c.layout, layout_for(t.shape));
  if (c.layout.block_rows != t.block_rows || c.layout.block_cols != t.block_cols ||
      c.layout.k != static_cast<int>(t.k)) {
    return invalid_argument("tensor '{}': layout {}x{} k={} is not the protocol's {}x{} k={}", t.name, t.block_rows,
                            t.block_cols, t.k, c.layout.block_rows, c.layout.block_cols, c.layout.k);
  }
  const auto kept = static_cast<std::size_t>(c.layout.kept());
  if (t.indices.size() != packed12_size(kept) || t.codes.size() != packed2_size(kept)) {
    return data_loss("tensor '{}': payload sizes do not match its layout", t.name);
  }
  if (!std::isfinite(t.shift) || !std::isfinite(t.scale))
    return out_of_range("tensor '{}': non-finite shift or scale", t.name);
  // Every value the decoder will compute, not only the stored parts: each
  // finite lookup value plus a finite shift can still overflow to infinity.
  for (float v : t.lookup) {
    if (!std::isfinite(v)) return out_of_range("tensor '{}': non-finite lookup value", t.name);
    if (!std::isfinite(v + t.shift)) return out_of_range("tensor '{}': lookup value + shift overflows", t.name);
  }
  c.indices.resize(kept);
  CRUCIBLE_RETURN_IF_ERROR(unpack_indices12(t.indices, c.indices).with_context(t.name));
  CRUCIBLE_RETURN_IF_ERROR(check_block_indices(c.layout, c.indices.data()).with_context(t.name));
  c.codes.resize(kept);
  CRUCIBLE_RETURN_IF_ERROR(unpack_codes2(t.codes, c.codes).with_context(t.name));
  c.quant.shift = t.shift;
  c.quant.scale = t.scale;
  c.quant.lookup = t.lookup;
  return c;
}

}  // namespace crucible::kernels
