#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "crucible/kernels/codec.h"

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
  const std::int64_t nb = l.num_blocks();
  int n_threads = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n_threads = static_cast<int>(std::min<std::int64_t>(n_threads, std::max<std::int64_t>(1, nb / 64)));

  // Per block: each element becomes one integer key, |x|'s bits above a
  // descending-index tiebreak, so "larger |x| first, then lower index" is
  // plain integer order (|x| of a finite float orders like its bit pattern).
  // A 256-bin histogram of the exponent byte finds the bin holding the k-th
  // largest; only elements at or above it are ranked, by nth_element on
  // the integer keys.
  auto work = [&](std::int64_t first, std::int64_t last) {
    const auto elems = static_cast<std::size_t>(l.block_elems());
    const auto k = static_cast<std::size_t>(l.k);
    std::vector<std::uint64_t> keys(elems), cand;
    cand.reserve(elems);
    std::vector<float> block(elems);
    std::vector<std::uint16_t> picked(k);
    std::uint32_t hist[256];
    for (std::int64_t b = first; b < last; ++b) {
      // Gather the block row by row (contiguous copies).
      const std::int64_t r0 = (b / l.blocks_across()) * l.block_rows, c0 = (b % l.blocks_across()) * l.block_cols;
      for (std::int64_t r = 0; r < l.block_rows; ++r) {
        const float* src = x.data() + (r0 + r) * l.cols + c0;
        std::copy(src, src + l.block_cols, block.begin() + r * l.block_cols);
      }
      std::fill(std::begin(hist), std::end(hist), 0u);
      for (std::size_t j = 0; j < elems; ++j) {
        std::uint32_t bits;
        std::memcpy(&bits, &block[j], 4);
        bits &= 0x7FFFFFFFu;
        keys[j] = (static_cast<std::uint64_t>(bits) << 12) | (4095u - j);
        ++hist[bits >> 23];
      }
      // The exponent bin holding the k-th largest.
      std::size_t seen = 0;
      int t = 255;
      for (; t > 0; --t) {
        seen += hist[t];
        if (seen >= k) break;
      }
      const std::uint64_t floor = static_cast<std::uint64_t>(t) << (23 + 12);
      cand.clear();
      for (std::size_t j = 0; j < elems; ++j)
        if (keys[j] >= floor) cand.push_back(keys[j]);
      std::nth_element(cand.begin(), cand.begin() + static_cast<std::ptrdiff_t>(k - 1), cand.end(),
                       std::greater<std::uint64_t>());
      for (std::size_t i = 0; i < k; ++i) picked[i] = static_cast<std::uint16_t>(4095u - (cand[i] & 0xFFFu));
      std::sort(picked.begin(), picked.end());
      for (std::size_t i = 0; i < k; ++i) {
        std::size_t out = static_cast<std::size_t>(b) * k + i;
        indices[out] = picked[i];
        values[out] = block[picked[i]];
      }
    }
  };
  if (n_threads <= 1) {
    work(0, nb);
    return Status::ok();
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < n_threads; ++t) pool.emplace_back(work, nb * t / n_threads, nb * (t + 1) / n_threads);
  for (auto& th : pool) th.join();
  return Status::ok();
}

Status decode_dense(const BlockLayout& l, std::span<const std::uint16_t> indices, std::span<const float> values,
                    std::span<float> out) {
  if (static_cast<std::int64_t>(out.size()) != l.rows * l.cols) return invalid_argument("decode: wrong output size");
  if (static_cast<std::int64_t>(indices.size()) != l.kept() || values.size() != indices.size()) {
    return data_loss("decode: {} entries, the layout keeps {}", indices.size(), l.kept());
  }
  std::fill(out.begin(), out.end(), 0.0f);
  for (std::int64_t b = 0; b < l.num_blocks(); ++b) {
    for (int i = 0; i < l.k; ++i) {
      std::size_t at = static_cast<std::size_t>(b * l.k + i);
      if (indices[at] >= l.block_elems()) {
        return data_loss("decode: index {} outside a block of {}", indices[at], l.block_elems());
      }
      out[static_cast<std::size_t>(element_of(l, b, indices[at]))] = values[at];
    }
  }
  return Status::ok();
}

}  // namespace crucible::kernels
