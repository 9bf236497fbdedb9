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
  std::vector<std::uint32_t> pass;
  void reserve(std::size_t elems) {
    group_max.resize(elems);
    cand.resize(elems);
    pass.resize(elems);
  }
};

inline std::uint32_t magnitude_bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, 4);
  return b & 0x7FFFFFFFu;
}

// The largest |x| bits of 16 floats, in whole vectors (GCC's generic
// vectors: AVX2 registers in the AVX2 build, pairs of SSE2 ones otherwise).
#if defined(__GNUC__) && !defined(__clang__)
using Int8x32 = std::int32_t __attribute__((vector_size(32)));
using Float8x32 = float __attribute__((vector_size(32)));
inline std::uint32_t max_magnitude16(const Int8x32& va, const Int8x32& vb) {
  const Int8x32 mask = va * 0 + 0x7FFFFFFF;
  const Int8x32 a = va & mask, b = vb & mask;
  Int8x32 m = a > b ? a : b;
  Int8x32 s = __builtin_shuffle(m, Int8x32{4, 5, 6, 7, 0, 1, 2, 3});
  m = m > s ? m : s;
  s = __builtin_shuffle(m, Int8x32{2, 3, 0, 1, 6, 7, 4, 5});
  m = m > s ? m : s;
  s = __builtin_shuffle(m, Int8x32{1, 0, 3, 2, 5, 4, 7, 6});
  m = m > s ? m : s;
  return static_cast<std::uint32_t>(m[0]);
}
inline std::uint32_t max_magnitude16(const float* p) {
  Int8x32 a, b;
  std::memcpy(&a, p, 32);
  std::memcpy(&b, p + 8, 32);
  return max_magnitude16(a, b);
}
// e[0..16) = beta * e + d (a multiply, then an add: never fused), and the
// largest |e| bits after it.
inline std::uint32_t update16(float* e, const float* d, float beta) {
  Float8x32 a, b, x, y;
  std::memcpy(&a, e, 32);
  std::memcpy(&b, e + 8, 32);
  std::memcpy(&x, d, 32);
  std::memcpy(&y, d + 8, 32);
  a = beta * a + x;
  b = beta * b + y;
  std::memcpy(e, &a, 32);
  std::memcpy(e + 8, &b, 32);
  Int8x32 ia, ib;
  std::memcpy(&ia, &a, 32);
  std::memcpy(&ib, &b, 32);
  return max_magnitude16(ia, ib);
}
#else
inline std::uint32_t max_magnitude16(const float* p) {
  std::uint32_t m = 0;
  for (int c = 0; c < 16; ++c) m = std::max(m, magnitude_bits(p[c]));
  return m;
}
inline std::uint32_t update16(float* e, const float* d, float beta) {
  for (int c = 0; c < 16; ++c) e[c] = beta * e[c] + d[c];
  return max_magnitude16(e);
}
#endif

// Groups of how many values a block's threshold uses (see block_topk).
inline std::size_t group_size(std::size_t elems, std::size_t k) {
  return std::max<std::size_t>(1, std::min<std::size_t>(16, elems / k));
}

// Each group's largest magnitude (as bits) into `own`, a row at a time;
// answers the number of groups.
CRUCIBLE_HOT inline std::size_t group_maxima(const float* base, std::int64_t stride, std::size_t rows, std::size_t cols,
                                             std::size_t g_size, std::uint32_t* own) {
  std::size_t groups = 0;
  if (g_size == 16 && cols % 16 == 0) {  // the usual block: groups of 16, a vector each
    for (std::size_t r = 0; r < rows; ++r) {
      const float* row = base + static_cast<std::int64_t>(r) * stride;
      for (std::size_t c0 = 0; c0 < cols; c0 += 16) own[groups++] = max_magnitude16(row + c0);
    }
    return groups;
  }
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = base + static_cast<std::int64_t>(r) * stride;
    for (std::size_t c0 = 0; c0 < cols; c0 += g_size) {
      // Magnitudes' bits are < 2^31, so signed order is theirs.
      std::int32_t m = 0;
      for (std::size_t c = c0; c < std::min(cols, c0 + g_size); ++c)
        m = std::max(m, static_cast<std::int32_t>(magnitude_bits(row[c])));
      own[groups++] = static_cast<std::uint32_t>(m);
    }
  }
  return groups;
}

// T: a histogram of each group maximum's distance below the largest, in
// 64ths of an octave (256 bins over four octaves, the last catching the rest); T is the
// lowest value of the first bins that hold k groups. Every group at or
// above T is in those bins, so at least k are.
CRUCIBLE_HOT inline std::uint32_t group_threshold(const std::uint32_t* gmax, std::size_t groups, std::size_t k) {
  std::uint32_t top = 0;
  for (std::size_t g = 0; g < groups; ++g) top = std::max(top, gmax[g]);
  std::uint32_t hist[256] = {};
  for (std::size_t g = 0; g < groups; ++g) ++hist[std::min<std::uint32_t>(255, (top - gmax[g]) >> 17)];
  std::size_t seen = 0, bin = 0;
  for (; bin < 255; ++bin) {
    seen += hist[bin];
    if (seen >= k) break;
  }
  const std::uint32_t below = ((static_cast<std::uint32_t>(bin) + 1) << 17) - 1;
  return bin == 255 || below > top ? 0 : top - below;
}

// The first k candidates (magnitude bits << 12 | 4095 - index) written out
// in ascending index order: marked in a bitmap, read back in order.
CRUCIBLE_HOT inline void emit_ascending(const std::uint64_t* cand, std::size_t k, std::size_t elems, const float* base,
                                        std::int64_t stride, std::size_t cols, std::uint16_t* idx, float* val,
                                        std::int64_t* where) {
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
//
// `given`: the groups' maxima, computed by the caller (the encode takes
// them while it updates the buffer), row by row, for groups of 16
// (group_size(...) == 16 and cols % 16 == 0); null: computed here.
CRUCIBLE_HOT inline void block_topk(const float* base, std::int64_t stride, std::size_t rows, std::size_t cols,
                                    std::size_t k, std::uint16_t* idx, float* val, std::int64_t* where, TopKScratch& s,
                                    const std::uint32_t* given = nullptr) {
  const std::size_t elems = rows * cols;
  const std::size_t g_size = group_size(elems, k);
  const std::uint32_t* gmax = given != nullptr ? given : s.group_max.data();
  const std::size_t groups =
      given != nullptr ? elems / 16 : group_maxima(base, stride, rows, cols, g_size, s.group_max.data());
  const std::uint32_t threshold = group_threshold(gmax, groups, k);
  std::uint64_t* cand = s.cand.data();
  // The groups that reach T, listed without a branch per group (which
  // ones do is as good as random), then their candidates the same way.
  std::uint32_t* pass = s.pass.data();
  std::size_t np = 0, g = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c0 = 0; c0 < cols; c0 += g_size, ++g) {
      pass[np] = static_cast<std::uint32_t>(r << 16 | c0);
      np += gmax[g] >= threshold;
    }
  }
  std::size_t n = 0;
  auto take = [&](const float* row, std::size_t r, std::size_t c) {
    const std::uint32_t bits = magnitude_bits(row[c]);
    const auto j = static_cast<std::uint32_t>(r * cols + c);
    cand[n] = (static_cast<std::uint64_t>(bits) << 12) | (4095u - j);
    n += bits >= threshold;
  };
  for (std::size_t p = 0; p < np; ++p) {
    const std::size_t r = pass[p] >> 16, c0 = pass[p] & 0xFFFFu;
    const float* row = base + static_cast<std::int64_t>(r) * stride;
    if (g_size == 16 && c0 + 16 <= cols) {
      for (std::size_t c = c0; c < c0 + 16; ++c) take(row, r, c);
    } else {
      for (std::size_t c = c0; c < std::min(cols, c0 + g_size); ++c) take(row, r, c);
    }
  }
  if (n > k) std::nth_element(cand, cand + (k - 1), cand + n, std::greater<std::uint64_t>());
  emit_ascending(cand, k, elems, base, stride, cols, idx, val, where);
}

}  // namespace crucible::kernels::cpu
