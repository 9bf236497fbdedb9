// Count sketches of updates (similarity.h).
#include "crucible/validator/similarity.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "crucible/kernels/codec.h"

namespace crucible::validator {

namespace {

// SplitMix64's finaliser of (tensor, element): a bucket from the low bits,
// a sign from the top bit. The same coordinate hashes alike for sparse
// updates and dense aggregates.
inline void add(std::vector<float>& buckets, std::uint64_t tensor, std::uint64_t element, float value) {
  std::uint64_t z = (tensor << 44) ^ element;
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  buckets[z % kSketchBuckets] += (z >> 63) ? -value : value;
}

}  // namespace

Sketch sketch_of(const std::vector<kernels::CompressedTensor>& update) {
  Sketch s;
  s.buckets.assign(kSketchBuckets, 0.0f);
  for (std::size_t t = 0; t < update.size(); ++t) {
    const auto& c = update[t];
    const auto k = static_cast<std::size_t>(c.layout.k);
    if (k == 0 || c.indices.size() != c.codes.size()) continue;
    for (std::size_t i = 0; i < c.indices.size(); ++i) {
      const auto block = static_cast<std::int64_t>(i / k);
      const std::int64_t e = kernels::element_of(c.layout, block, c.indices[i]);
      const float v = c.quant.lookup[c.codes[i] & 3u] + c.quant.shift;
      add(s.buckets, t, static_cast<std::uint64_t>(e), v);
    }
  }
  return s;
}

Sketch sketch_of(const model::TensorValues& dense) {
  Sketch s;
  s.buckets.assign(kSketchBuckets, 0.0f);
  for (std::size_t t = 0; t < dense.size(); ++t)
    for (std::size_t e = 0; e < dense[t].size(); ++e)
      if (dense[t][e] != 0.0f) add(s.buckets, t, e, dense[t][e]);
  return s;
}

double norm_of(const std::vector<kernels::CompressedTensor>& update) {
  double sq = 0;
  for (const auto& t : update) {
    std::array<std::uint64_t, 4> count{};
    for (std::uint8_t c : t.codes) ++count[c & 3];
    for (std::size_t b = 0; b < 4; ++b) {
      const float value = t.quant.lookup[b] + t.quant.shift;  // what the decoder writes
      const double v = value;
      sq += static_cast<double>(count[b]) * v * v;
    }
  }
  return std::sqrt(sq);
}

double cosine(const Sketch& a, const Sketch& b) {
  if (a.buckets.size() != kSketchBuckets || b.buckets.size() != kSketchBuckets) return 0;
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < kSketchBuckets; ++i) {
    const double x = a.buckets[i], y = b.buckets[i];
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  if (aa <= 0 || bb <= 0 || !std::isfinite(ab)) return 0;
  return std::clamp(ab / std::sqrt(aa * bb), -1.0, 1.0);
}

void UnitSketches::add(const Sketch& s) {
  const std::size_t at = rows_.size();
  rows_.resize(at + kSketchBuckets, 0.0f);
  if (s.buckets.size() != kSketchBuckets) return;
  double sq = 0;
  for (float x : s.buckets) sq += static_cast<double>(x) * x;
  if (!(sq > 0) || !std::isfinite(sq)) return;
  const double inv = 1.0 / std::sqrt(sq);
  for (std::size_t i = 0; i < kSketchBuckets; ++i) rows_[at + i] = static_cast<float>(s.buckets[i] * inv);
}

double UnitSketches::cosine(std::size_t i, const UnitSketches& other, std::size_t j) const {
  const float* a = rows_.data() + i * kSketchBuckets;
  const float* b = other.rows_.data() + j * kSketchBuckets;
  // Sixteen independent sums, so that the compiler can use vector lanes
  // without reordering any one sum (kSketchBuckets is a multiple of 16).
  constexpr std::size_t kLanes = 16;
  std::array<float, kLanes> acc{};
  for (std::size_t k = 0; k < kSketchBuckets; k += kLanes) {
    for (std::size_t l = 0; l < kLanes; ++l) acc[l] += a[k + l] * b[k + l];
  }
  double sum = 0;
  for (float x : acc) sum += x;
  return std::clamp(sum, -1.0, 1.0);
}

Bytes encode_sketch(const Sketch& s) {
  Bytes out(kSketchBuckets * 4, 0);
  if (s.buckets.size() != kSketchBuckets) return out;
  for (std::size_t i = 0; i < kSketchBuckets; ++i) {
    std::uint32_t u = 0;
    std::memcpy(&u, &s.buckets[i], 4);
    for (int b = 0; b < 4; ++b) out[i * 4 + static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(u >> (8 * b));
  }
  return out;
}

Result<Sketch> decode_sketch(ByteSpan bytes) {
  if (bytes.size() != kSketchBuckets * 4) {
    return data_loss("a sketch is {} bytes, not {}", kSketchBuckets * 4, bytes.size());
  }
  Sketch s;
  s.buckets.resize(kSketchBuckets);
  for (std::size_t i = 0; i < kSketchBuckets; ++i) {
    std::uint32_t u = 0;
    for (int b = 0; b < 4; ++b) u |= static_cast<std::uint32_t>(bytes[i * 4 + static_cast<std::size_t>(b)]) << (8 * b);
    std::memcpy(&s.buckets[i], &u, 4);
    if (!std::isfinite(s.buckets[i])) return data_loss("a sketch with a value that is not finite");
  }
  return s;
}

}  // namespace crucible::validator
