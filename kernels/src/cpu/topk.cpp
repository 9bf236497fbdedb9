#include <algorithm>
#include <vector>

#include "block_topk.h"
#include "crucible/kernels/codec.h"
#include "parallel.h"

namespace crucible::kernels {

Status select_topk(std::span<const float> x, const BlockLayout& l, std::span<std::uint16_t> indices,
                   std::span<float> values, int threads) {
  if (static_cast<std::int64_t>(x.size()) != l.rows * l.cols) {
    return invalid_argument("topk: {} values for a {}x{} tensor", x.size(), l.rows, l.cols);
  }
  if (static_cast<std::int64_t>(indices.size()) != l.kept() || indices.size() != values.size()) {
    return invalid_argument("topk: output holds {} entries, the layout keeps {}", indices.size(), l.kept());
  }
  if (l.block_elems() > 4096) return invalid_argument("topk: blocks of {} exceed 4096", l.block_elems());
  const auto elems = static_cast<std::size_t>(l.block_elems());
  const auto k = static_cast<std::size_t>(l.k);
  cpu::parallel_for(l.num_blocks(), threads, 16, [&](std::int64_t first, std::int64_t last) {
    cpu::TopKScratch s;
    s.reserve(elems);
    for (std::int64_t b = first; b < last; ++b) {
      const std::int64_t r0 = (b / l.blocks_across()) * l.block_rows, c0 = (b % l.blocks_across()) * l.block_cols;
      const auto at = static_cast<std::size_t>(b) * k;
      cpu::block_topk(x.data() + r0 * l.cols + c0, l.cols, static_cast<std::size_t>(l.block_rows),
                      static_cast<std::size_t>(l.block_cols), k, indices.data() + at, values.data() + at, nullptr, s);
    }
  });
  return Status::ok();
}

Status decode_dense(const BlockLayout& l, std::span<const std::uint16_t> indices, std::span<const float> values,
                    std::span<float> out) {
  if (static_cast<std::int64_t>(out.size()) != l.rows * l.cols) return invalid_argument("decode: wrong output size");
  if (static_cast<std::int64_t>(indices.size()) != l.kept() || values.size() != indices.size()) {
    return data_loss("decode: {} entries, the layout keeps {}", indices.size(), l.kept());
  }
  for (std::uint16_t i : indices) {
    if (i >= l.block_elems()) return data_loss("decode: index {} outside a block of {}", i, l.block_elems());
  }
  std::fill(out.begin(), out.end(), 0.0f);
  for (std::int64_t b = 0; b < l.num_blocks(); ++b) {
    for (int i = 0; i < l.k; ++i) {
      const auto at = static_cast<std::size_t>(b * l.k + i);
      out[static_cast<std::size_t>(element_of(l, b, indices[at]))] = values[at];
    }
  }
  return Status::ok();
}

}  // namespace crucible::kernels
