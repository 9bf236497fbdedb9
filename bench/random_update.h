// A compressed tensor as a peer's update would arrive, for the benches:
// k distinct random indices per block (ascending), random codes, and
// quantisation parameters of the given scale.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "crucible/kernels/error_feedback.h"

namespace crucible::bench {

inline kernels::CompressedTensor random_update(const kernels::BlockLayout& l, std::mt19937_64& rng, float scale) {
  kernels::CompressedTensor c;
  c.layout = l;
  c.indices.resize(static_cast<std::size_t>(l.kept()));
  c.codes.resize(c.indices.size());
  std::vector<std::uint16_t> all(static_cast<std::size_t>(l.block_elems()));
  for (std::size_t j = 0; j < all.size(); ++j) all[j] = static_cast<std::uint16_t>(j);
  for (std::int64_t b = 0; b < l.num_blocks(); ++b) {
    for (int i = 0; i < l.k; ++i) std::swap(all[static_cast<std::size_t>(i)], all[i + rng() % (all.size() - i)]);
    std::sort(all.begin(), all.begin() + l.k);
    std::copy(all.begin(), all.begin() + l.k, c.indices.begin() + b * l.k);
  }
  for (auto& code : c.codes) code = static_cast<std::uint8_t>(rng() & 3);
  c.quant = {0.0f, scale, {-1.5f * scale, -0.5f * scale, 0.5f * scale, 1.5f * scale}};
  return c;
}

}  // namespace crucible::bench
