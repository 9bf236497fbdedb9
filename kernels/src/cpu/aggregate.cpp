// The §8 merge over the kept coordinates only: per block, every peer's kept
// values are added into a block-sized double accumulator in uid order (the
// same additions, in the same order, as a dense sum would make), and only
// the touched coordinates are divided and written. Blocks are independent,
// so they run in parallel; the result is the same bytes for every thread count.
#include "crucible/kernels/aggregate.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "cpu_ops.h"
#include "crucible/kernels/backend_codec.h"
#include "parallel.h"

namespace crucible::kernels {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

Status aggregate(std::vector<PeerUpdate> peers, std::span<float> out, int threads) {
  return aggregate(*cpu_backend(threads), std::move(peers), out);
}

namespace cpu {

Status merge(const BlockLayout& l, std::span<const MergePeer> given, float* out, int threads) {
  const std::int64_t n = l.rows * l.cols;
  if (given.empty()) {
    std::fill(out, out + n, 0.0f);
    return Status::ok();
  }
  if (l.block_elems() > 4096) return invalid_argument("aggregate: blocks of {} exceed 4096", l.block_elems());
  std::vector<MergePeer> peers(given.begin(), given.end());
  std::sort(peers.begin(), peers.end(), [](const MergePeer& a, const MergePeer& b) { return a.uid < b.uid; });
  const auto k = static_cast<std::size_t>(l.k);
  for (std::size_t i = 0; i < peers.size(); ++i) {
    if (i > 0 && peers[i].uid == peers[i - 1].uid) return invalid_argument("aggregate: uid {} twice", peers[i].uid);
    CRUCIBLE_RETURN_IF_ERROR(
        check_block_indices(l, peers[i].indices).with_context(fmt::format("aggregate: uid {}", peers[i].uid)));
  }
  // Each peer's dequantised values (lookup[code] + shift, in float) and its
  // norm: per block in double in order, the blocks' sums added in block order.
  const auto nb = static_cast<std::size_t>(l.num_blocks());
  std::vector<std::array<float, 4>> value(peers.size());
  std::vector<double> norms(peers.size());
  parallel_for(static_cast<std::int64_t>(peers.size()), threads, 1, [&](std::int64_t a, std::int64_t b) {
    for (auto i = static_cast<std::size_t>(a); i < static_cast<std::size_t>(b); ++i) {
      for (std::size_t c = 0; c < 4; ++c) value[i][c] = peers[i].quant.lookup[c] + peers[i].quant.shift;
      double total = 0;
      for (std::size_t blk = 0; blk < nb; ++blk) {
        double part = 0;
        for (std::size_t j = blk * k; j < (blk + 1) * k; ++j) {
          const double v = value[i][peers[i].codes[j] & 3];
          part += v * v;
        }
        total += part;
      }
      norms[i] = std::sqrt(total);
    }
  });
  for (std::size_t i = 0; i < peers.size(); ++i) {
    // Float values squared cannot overflow a double sum: only inf or NaN make it non-finite.
    if (!std::isfinite(norms[i])) return invalid_argument("aggregate: uid {} has a non-finite value", peers[i].uid);
  }
  const double median = median_of(norms);
  std::vector<double> scale(peers.size());
  for (std::size_t i = 0; i < peers.size(); ++i) scale[i] = norms[i] > median && norms[i] > 0 ? median / norms[i] : 1.0;

  // Strip by strip (block_rows rows, contiguous): zeros, then each block's
  // touched coordinates. offset[j]: block-local index j's offset from its block.
  const auto elems = static_cast<std::size_t>(l.block_elems());
  std::vector<std::int64_t> offset(elems);
  for (std::size_t j = 0; j < elems; ++j) {
    offset[j] = static_cast<std::int64_t>(j) / l.block_cols * l.cols + static_cast<std::int64_t>(j) % l.block_cols;
  }
  const std::int64_t strip_elems = l.block_rows * l.cols;
  parallel_for(l.blocks_down(), threads, std::max<std::int64_t>(1, 65536 / strip_elems),
               [&](std::int64_t first, std::int64_t last) {
                 std::fill(out + first * strip_elems, out + last * strip_elems, 0.0f);
                 std::vector<double> sum(elems, 0.0);
                 std::vector<std::uint32_t> count(elems, 0);
                 std::vector<std::uint16_t> touched;
                 touched.reserve(elems);
                 for (std::int64_t blk = first * l.blocks_across(); blk < last * l.blocks_across(); ++blk) {
                   for (std::size_t i = 0; i < peers.size(); ++i) {
                     for (auto j = static_cast<std::size_t>(blk) * k; j < static_cast<std::size_t>(blk + 1) * k; ++j) {
                       const std::uint16_t at = peers[i].indices[j];
                       if (count[at]++ == 0) touched.push_back(at);
                       sum[at] += scale[i] * value[i][peers[i].codes[j] & 3];
                     }
                   }
                   float* base =
                       out + (blk / l.blocks_across()) * strip_elems + (blk % l.blocks_across()) * l.block_cols;
                   for (std::uint16_t at : touched) {
                     base[offset[at]] = static_cast<float>(sum[at] / count[at]);
                     sum[at] = 0;
                     count[at] = 0;
                   }
                   touched.clear();
                 }
               });
  return Status::ok();
}

}  // namespace cpu

}  // namespace crucible::kernels
