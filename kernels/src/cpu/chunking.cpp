#include <cmath>

#include "crucible/kernels/codec.h"

namespace crucible::kernels {

std::int64_t chunk_size(std::int64_t dim) {
  for (std::int64_t c = std::min(dim, kMaxChunk); c > 1; --c) {
    if (dim % c == 0) return c;
  }
  return 1;
}

int topk_for_block(std::int64_t elems, int k_per_4096) {
  std::int64_t k = (elems * k_per_4096 + 2048) / 4096;  // rounded to nearest
  k = std::max<std::int64_t>(2, std::min(k, elems));
  if (k % 2 != 0) k = (k + 1 <= elems) ? k + 1 : k - 1;  // even, for 12-bit index pairs
  return static_cast<int>(std::max<std::int64_t>(k, 0));
}

Result<BlockLayout> layout_for(std::span<const std::int64_t> shape, int k_per_4096) {
  if (shape.empty()) return invalid_argument("codec: a tensor needs at least one dimension");
  std::int64_t total = 1;
  for (auto d : shape) {
    if (d <= 0) return invalid_argument("codec: dimension {} is not positive", d);
    if (total > (std::int64_t{1} << 40) / d) return invalid_argument("codec: tensor larger than 2^40 elements");
    total *= d;
  }
  BlockLayout l;
  l.cols = shape.back();
  l.rows = total / l.cols;
  l.block_rows = chunk_size(l.rows);
  l.block_cols = chunk_size(l.cols);
  l.k = topk_for_block(l.block_elems(), k_per_4096);
  if (l.block_elems() < 2) l.k = static_cast<int>(l.block_elems());
  return l;
}

Status check_block_indices(const BlockLayout& l, const std::uint16_t* indices) {
  const auto k = static_cast<std::size_t>(l.k);
  const auto kept = static_cast<std::size_t>(l.kept());
  for (std::size_t i = 0; i < kept; ++i) {
    if (indices[i] >= l.block_elems() || (i % k != 0 && indices[i] <= indices[i - 1])) {
      return data_loss("block {}: index {} outside the block ({} values) or not above the one before it", i / k,
                       indices[i], l.block_elems());
    }
  }
  return Status::ok();
}

std::int64_t element_of(const BlockLayout& l, std::int64_t block, std::int64_t j) {
  std::int64_t br = block / l.blocks_across(), bc = block % l.blocks_across();
  std::int64_t r = br * l.block_rows + j / l.block_cols;
  std::int64_t c = bc * l.block_cols + j % l.block_cols;
  return r * l.cols + c;
}

}  // namespace crucible::kernels
