// The compression codec's CPU fast path (protocol.md §4), on plain float
// buffers so it is the same code for every caller: chunking into blocks,
// top-k per block, 2-bit quantisation of the kept values with bit-packed
// codes, and decode. Deterministic: identical input gives bit-identical
// output, whatever the thread count (blocks are independent; reductions
// run in a fixed order in double precision).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "crucible/common/status.h"

namespace crucible::kernels {

inline constexpr std::int64_t kMaxChunk = 64;  // chunk size per dimension
inline constexpr int kTopKPer4096 = 64;        // k for a full 64 x 64 block

// The largest divisor of `dim` that is <= 64 (protocol.md §4).
std::int64_t chunk_size(std::int64_t dim);

// How a tensor is cut into blocks: a [rows, cols] view (1-D tensors are
// [1, n], higher ranks fold their leading dimensions into rows), blocks of
// [block_rows, block_cols], k values kept per block.
struct BlockLayout {
  std::int64_t rows = 0, cols = 0;
  std::int64_t block_rows = 0, block_cols = 0;
  int k = 0;
  std::int64_t blocks_down() const { return rows / block_rows; }
  std::int64_t blocks_across() const { return cols / block_cols; }
  std::int64_t num_blocks() const { return blocks_down() * blocks_across(); }
  std::int64_t block_elems() const { return block_rows * block_cols; }
  std::int64_t kept() const { return num_blocks() * k; }
};

// k for a block of `elems` values: 64 per 4096 scaled, clamped to [2, elems], even.
int topk_for_block(std::int64_t elems, int k_per_4096 = kTopKPer4096);

// invalid_argument for an empty shape, a zero or negative dimension, or more
// than 2^40 elements.
Result<BlockLayout> layout_for(std::span<const std::int64_t> shape, int k_per_4096 = kTopKPer4096);

// Flat index of element j of block b in the row-major [rows, cols] tensor.
std::int64_t element_of(const BlockLayout& l, std::int64_t block, std::int64_t j);

// Top-k by |x| in every block. Out: layout.kept() block-local indices (< 4096),
// ascending within each block, and the signed values at them. Ties in |x|
// go to the lower index. `threads` <= 0 uses the hardware's count.
Status select_topk(std::span<const float> x, const BlockLayout& layout, std::span<std::uint16_t> indices,
                   std::span<float> values, int threads = 0);

// 2-bit quantisation with one parameter set per tensor.
struct Quant2 {
  float shift = 0;                // mean of the values
  float scale = 0;                // 6 sigma / 4
  std::array<float, 4> lookup{};  // mean of the centred values in each bin (0 if empty)
};

// Fills `codes` (one 0..3 per value). Rounding is half to even, as numpy and
// torch. `per_block`: the values are the layout's kept values, k per block
// in block order; every sum runs over one block's values in double, in
// order, and the blocks' sums are then added in block order (0: one run of
// all values). The result is the same for every thread count.
Quant2 quantize2(std::span<const float> values, std::span<std::uint8_t> codes, std::size_t per_block, int threads = 1);
// lookup[code] + shift
void dequantize2(const Quant2& q, std::span<const std::uint8_t> codes, std::span<float> out);

// Four 2-bit codes per byte, the first in the low bits: byte = c0 | c1<<2 | c2<<4 | c3<<6.
inline constexpr std::size_t packed2_size(std::size_t n) { return (n + 3) / 4; }
Status pack_codes2(std::span<const std::uint8_t> codes, std::span<std::uint8_t> out);
// data_loss if the size is wrong or the padding bits of the last byte are not zero.
Status unpack_codes2(std::span<const std::uint8_t> packed, std::span<std::uint8_t> codes);

// data_loss naming the block when an index of `indices` (layout.kept(), k per
// block) is outside its block or not above the one before it in its block:
// the form every decoder and the merge rely on (protocol.md §4).
Status check_block_indices(const BlockLayout& layout, const std::uint16_t* indices);

// Dense tensor (layout.rows * layout.cols, zeros elsewhere) from per-block
// indices and values; an index outside its block is data_loss.
Status decode_dense(const BlockLayout& layout, std::span<const std::uint16_t> indices, std::span<const float> values,
                    std::span<float> out);

}  // namespace crucible::kernels
