// Top-k of one block, read in place from a row-major tensor (the CPU
// kernels' inner loop).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "parallel.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace crucible::kernels::cpu {

// Scratch space reused across blocks by one thread.
struct TopKScratch {
  std::vector<std::uint32_t> group_max;
  std::vector<std::uint64_t> cand;
  void reserve(std::size_t elems) {
    group_max.resize(elems);
    cand.resize(elems);
  }
};

inline std::uint32_t magnitude_bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, 4);
  return b & 0x7FFFFFFFu;
}

// The k elements of largest |x| of the block of `rows` x `cols` values at
// `base` (rows `stride` floats apart; rows * cols <= 4096, k <= rows * cols),
// equal magnitudes by lower block-local index j = r * cols + c. Their
// indices ascending into `idx`, the signed values into `val`, and their
// offsets from `base` into `where` (when not null).
//
// Order: every element is the integer key |x|bits << 12 | (4095 - j), so
// "larger |x|, then lower index" is plain integer order (|x| of a float
// orders like its bit pattern). Threshold: each row is cut into groups of
// at most G = min(16, elems / k) values, so there are at least k groups;
// T is at most the k-th largest of the groups' maxima, so k groups hold an
// element >= T and the top k are among the elements >= T. They are found by
// reading only the groups whose maximum reaches T, and only they are ranked.
CRUCIBLE_HOT inline void block_topk(const float* base, std::int64_t stride, std::size_t rows, std::size_t cols,
                                    std::size_t k, std::uint16_t* idx, float* val, std::int64_t* where,
                                    TopKScratch& s) {
  const std::size_t elems = rows * cols;
  const std::size_t g_size = std::max<std::size_t>(1, std::min<std::size_t>(16, elems / k));
  std::uint32_t* gmax = s.group_max.data();
  std::size_t groups = 0;
  // Magnitudes' bits are < 2^31, so signed order is theirs.
  auto group_max = [](const float* p, std::size_t len) {
    std::int32_t m = 0;
    for (std::size_t c = 0; c < len; ++c) m = std::max(m, static_cast<std::int32_t>(magnitude_bits(p[c])));
    return static_cast<std::uint32_t>(m);
  };
  if (g_size == 16 && cols % 16 == 0) {  // the usual block: fixed-length groups the compiler unrolls
    for (std::size_t r = 0; r < rows; ++r) {
      const float* row = base + static_cast<std::int64_t>(r) * stride;
      for (std::size_t c0 = 0; c0 < cols; c0 += 16) {
        std::int32_t m = 0;
        for (std::size_t c = 0; c < 16; ++c) m = std::max(m, static_cast<std::int32_t>(magnitude_bits(row[c0 + c])));
        gmax[groups++] = static_cast<std::uint32_t>(m);
      }
    }
  } else {
    for (std::size_t r = 0; r < rows; ++r) {
      const float* row = base + static_cast<std::int64_t>(r) * stride;
      for (std::size_t c0 = 0; c0 < cols; c0 += g_size)
        gmax[groups++] = group_max(row + c0, std::min(g_size, cols - c0));
    }
  }
  // T: a histogram of each group maximum's distance below the largest, in
  // sixteenths of an octave (64 bins, the last catching the rest); T is the
  // lowest value of the first bins that hold k groups. Every group at or
  // above T is in those bins, so at least k are.
  std::uint32_t top = 0;
  for (std::size_t g = 0; g < groups; ++g) top = std::max(top, gmax[g]);
  std::uint32_t hist[64] = {};
  for (std::size_t g = 0; g < groups; ++g) ++hist[std::min<std::uint32_t>(63, (top - gmax[g]) >> 19)];
  std::size_t seen = 0, bin = 0;
  for (; bin < 63; ++bin) {
    seen += hist[bin];
    if (seen >= k) break;
  }
  const std::uint32_t below = ((static_cast<std::uint32_t>(bin) + 1) << 19) - 1;
  const std::uint32_t threshold = bin == 63 || below > top ? 0 : top - below;
  std::uint64_t* cand = s.cand.data();
  std::size_t n = 0;
  std::size_t g = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = base + static_cast<std::int64_t>(r) * stride;
    for (std::size_t c0 = 0; c0 < cols; c0 += g_size, ++g) {
      if (gmax[g] < threshold) continue;
      const std::size_t c1 = std::min(cols, c0 + g_size);
      std::size_t c = c0;
#ifdef __SSE2__
      // Four at a time: most fours hold no candidate and cost one compare.
      const __m128i mask = _mm_set1_epi32(0x7FFFFFFF), below = _mm_set1_epi32(static_cast<int>(threshold) - 1);
      for (; c + 4 <= c1; c += 4) {
        const __m128i bits = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c)), mask);
        int hits = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(bits, below)));
        for (; hits != 0; hits &= hits - 1) {
          const std::size_t cc = c + static_cast<std::size_t>(std::countr_zero(static_cast<unsigned>(hits)));
          const auto j = static_cast<std::uint32_t>(r * cols + cc);
          cand[n++] = (static_cast<std::uint64_t>(magnitude_bits(row[cc])) << 12) | (4095u - j);
        }
      }
#endif
      for (; c < c1; ++c) {
        const std::uint32_t bits = magnitude_bits(row[c]);
        const auto j = static_cast<std::uint32_t>(r * cols + c);
        cand[n] = (static_cast<std::uint64_t>(bits) << 12) | (4095u - j);
        n += bits >= threshold;
      }
    }
  }
  if (n > k) std::nth_element(cand, cand + (k - 1), cand + n, std::greater<std::uint64_t>());
  // Ascending indices: mark the chosen in a bitmap and read it in order.
  std::uint64_t chosen[64] = {};
  for (std::size_t i = 0; i < k; ++i) {
    const std::uint32_t j = 4095u - static_cast<std::uint32_t>(cand[i] & 0xFFFu);
    chosen[j >> 6] |= std::uint64_t{1} << (j & 63);
  }
  std::size_t out = 0;
  for (std::uint32_t w = 0; w < (elems + 63) / 64; ++w) {
    for (std::uint64_t word = chosen[w]; word != 0; word &= word - 1) {
      const std::uint32_t j = w * 64 + static_cast<std::uint32_t>(std::countr_zero(word));
      const std::int64_t at = static_cast<std::int64_t>(j / cols) * stride + static_cast<std::int64_t>(j % cols);
      idx[out] = static_cast<std::uint16_t>(j);
      val[out] = base[at];
      if (where != nullptr) where[out] = at;
      ++out;
    }
  }
}

}  // namespace crucible::kernels::cpu
