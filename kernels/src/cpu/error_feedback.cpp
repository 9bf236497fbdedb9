// Compression with error feedback in one pass over memory (protocol.md §3-4):
// each strip of block_rows rows (contiguous in memory) gets e = beta*e + delta
// and is then cut into its blocks for top-k while it is still in cache; the
// quantisation reads only the kept values; the sent values are taken off e
// only where they were kept (elsewhere the sent tensor is zero).
#include "crucible/kernels/error_feedback.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "block_topk.h"
#include "cpu_ops.h"
#include "crucible/kernels/backend_codec.h"
#include "parallel.h"

namespace crucible::kernels {
namespace {

constexpr std::int64_t kCheckGrain = 1 << 16;

// Whether x[0..n) holds an inf or NaN (exponent all ones). Or-ing a flag
// keeps the loop vectorisable.
CRUCIBLE_HOT bool any_non_finite(const float* x, std::int64_t n) {
  std::uint32_t any = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, 4);
    any |= static_cast<std::uint32_t>((bits & 0x7F800000u) == 0x7F800000u);
  }
  return any != 0;
}

// e = beta * e + d, element by element (a multiply, then an add: never fused).
CRUCIBLE_HOT void ef_update(float* e, const float* d, std::int64_t n, float beta) {
  for (std::int64_t i = 0; i < n; ++i) e[i] = beta * e[i] + d[i];
}

// The same update over a strip of `rows` rows of `cols` values (contiguous),
// taking at once the largest |e| bits of every 16 values, stored block by
// block (blocks of `block_cols` columns), each block's groups row by row as
// block_topk reads them: the top-k then reads only the groups that reach
// its threshold, not the whole strip again (which, for a wide tensor, no
// longer sits in the core's cache).
CRUCIBLE_HOT void ef_update_groups(float* e, const float* d, std::int64_t rows, std::int64_t cols,
                                   std::int64_t block_cols, float beta, std::uint32_t* gmax) {
  const std::int64_t per_row = block_cols / 16, per_block = rows * per_row;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t bc = 0; bc < cols / block_cols; ++bc) {
      std::uint32_t* out = gmax + bc * per_block + r * per_row;
      const std::int64_t at = r * cols + bc * block_cols;
      for (std::int64_t g = 0; g < per_row; ++g) out[g] = cpu::update16(e + at + g * 16, d + at + g * 16, beta);
    }
  }
}

// The first index of a non-finite value, or -1.
std::int64_t first_non_finite(std::span<const float> x, int threads) {
  const auto n = static_cast<std::int64_t>(x.size());
  std::atomic<std::int64_t> first{-1};
  cpu::parallel_for(n, threads, kCheckGrain, [&](std::int64_t a, std::int64_t b) {
    if (!any_non_finite(x.data() + a, b - a)) return;
    for (std::int64_t i = a; i < b; ++i) {
      if (!std::isfinite(x[static_cast<std::size_t>(i)])) {
        std::int64_t seen = first.load();
        while ((seen < 0 || i < seen) && !first.compare_exchange_weak(seen, i)) {
        }
        return;
      }
    }
  });
  return first.load();
}

Status check_layout(const BlockLayout& l, std::size_t n) {
  if (static_cast<std::int64_t>(n) != l.rows * l.cols) return invalid_argument("codec: {} values for the shape", n);
  if (l.block_elems() > 4096) return invalid_argument("codec: blocks of {} exceed 4096", l.block_elems());
  return Status::ok();
}

}  // namespace

Result<CompressedTensor> compress(std::span<const float> x, std::span<const std::int64_t> shape, int threads) {
  CompressedTensor c;
  CRUCIBLE_ASSIGN_OR_RETURN(c.layout, layout_for(shape));
  CRUCIBLE_RETURN_IF_ERROR(check_layout(c.layout, x.size()));
  const auto kept = static_cast<std::size_t>(c.layout.kept());
  c.indices.resize(kept);
  std::vector<float> values(kept);
  CRUCIBLE_RETURN_IF_ERROR(select_topk(x, c.layout, c.indices, values, threads));
  c.codes.resize(kept);
  c.quant = quantize2(values, c.codes, static_cast<std::size_t>(c.layout.k), threads);
  return c;
}

Status decompress(const CompressedTensor& c, std::span<float> out, int threads) {
  return decompress(*cpu_backend(threads), c, out);
}

namespace cpu {

Status decode(const BlockLayout& l, const std::uint16_t* indices, const std::uint8_t* codes, const Quant2& q,
              float* out, int threads) {
  CRUCIBLE_RETURN_IF_ERROR(check_block_indices(l, indices).with_context("decode"));
  std::array<float, 4> value{};
  for (std::size_t b = 0; b < 4; ++b) value[b] = q.lookup[b] + q.shift;
  const std::int64_t strip_elems = l.block_rows * l.cols;
  parallel_for(l.blocks_down(), threads, std::max<std::int64_t>(1, 65536 / strip_elems),
               [&](std::int64_t first, std::int64_t last) {
                 std::fill(out + first * strip_elems, out + last * strip_elems, 0.0f);
                 for (std::int64_t b = first * l.blocks_across(); b < last * l.blocks_across(); ++b) {
                   float* base = out + (b / l.blocks_across()) * strip_elems + (b % l.blocks_across()) * l.block_cols;
                   for (int i = 0; i < l.k; ++i) {
                     const auto at = static_cast<std::size_t>(b * l.k + i);
                     const std::int64_t j = indices[at];
                     base[j / l.block_cols * l.cols + j % l.block_cols] = value[codes[at] & 3];
                   }
                 }
               });
  return Status::ok();
}

Status encode(float* ef, const float* delta, float beta, const BlockLayout& l, std::uint16_t* indices,
              std::uint8_t* codes, Quant2* quant, int threads) {
  if (!std::isfinite(beta) || beta < 0 || beta > 1)
    return invalid_argument("error feedback: beta {} not in [0, 1]", beta);
  if (l.block_elems() > 4096) return invalid_argument("codec: blocks of {} exceed 4096", l.block_elems());
  const std::int64_t n = l.rows * l.cols;
  // Refused before anything changes: the buffer is kept as it was.
  if (const std::int64_t bad = first_non_finite({delta, static_cast<std::size_t>(n)}, threads); bad >= 0) {
    return invalid_argument("error feedback: non-finite delta at {}", bad);
  }
  const auto kept = static_cast<std::size_t>(l.kept());
  const auto k = static_cast<std::size_t>(l.k);
  std::vector<float> values(kept);
  std::vector<std::int64_t> where(kept);  // each kept value's offset in the tensor
  const std::int64_t strip_elems = l.block_rows * l.cols;
  const std::int64_t grain = std::max<std::int64_t>(1, 65536 / strip_elems);
  // Groups of 16 (the usual block): the update also takes the groups' maxima.
  const bool fused = l.block_cols % 16 == 0 && cpu::group_size(static_cast<std::size_t>(l.block_elems()), k) == 16;
  const std::int64_t groups_per_block = l.block_elems() / 16;
  parallel_for(l.blocks_down(), threads, grain, [&](std::int64_t first, std::int64_t last) {
    TopKScratch s;
    s.reserve(static_cast<std::size_t>(l.block_elems()));
    std::vector<std::uint32_t> gmax(fused ? static_cast<std::size_t>(strip_elems / 16) : 0);
    for (std::int64_t strip = first; strip < last; ++strip) {
      if (fused) {
        ef_update_groups(ef + strip * strip_elems, delta + strip * strip_elems, l.block_rows, l.cols, l.block_cols,
                         beta, gmax.data());
      } else {
        ef_update(ef + strip * strip_elems, delta + strip * strip_elems, strip_elems, beta);
      }
      for (std::int64_t bc = 0; bc < l.blocks_across(); ++bc) {  // its blocks, while the strip is in cache
        const auto b = static_cast<std::size_t>(strip * l.blocks_across() + bc);
        const std::int64_t offset = strip * strip_elems + bc * l.block_cols;
        block_topk(ef + offset, l.cols, static_cast<std::size_t>(l.block_rows), static_cast<std::size_t>(l.block_cols),
                   k, indices + b * k, values.data() + b * k, where.data() + b * k, s,
                   fused ? gmax.data() + bc * groups_per_block : nullptr);
        for (std::size_t i = b * k; i < (b + 1) * k; ++i) where[i] += offset;
      }
    }
  });
  *quant = kernels::quantize2(values, {codes, kept}, k, threads);
  std::array<float, 4> sent{};
  for (std::size_t b = 0; b < 4; ++b) sent[b] = quant->lookup[b] + quant->shift;
  parallel_for(static_cast<std::int64_t>(kept), threads, 65536, [&](std::int64_t first, std::int64_t last) {
    for (auto i = static_cast<std::size_t>(first); i < static_cast<std::size_t>(last); ++i) {
      ef[where[i]] -= sent[codes[i]];
    }
  });
  return Status::ok();
}

}  // namespace cpu

Result<CompressedTensor> error_feedback_step(std::span<float> ef, std::span<const float> delta,
                                             std::span<const std::int64_t> shape, float beta, int threads,
                                             int k_per_4096) {
  return error_feedback_step(*cpu_backend(threads), ef, delta, shape, beta, k_per_4096);
}

}  // namespace crucible::kernels
