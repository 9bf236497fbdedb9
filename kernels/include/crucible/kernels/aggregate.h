// Robust aggregation of peers' compressed updates (protocol.md §8), the same
// on every node: peers in ascending uid order; each decoded (dequantised)
// update is scaled by min(1, median_j ||v_j|| / ||v_i||); a coordinate kept
// by several peers gets the mean of their scaled values, not the sum.
// Norms and sums run in double precision in a fixed order (a norm: per
// block in order, then the blocks' sums in block order; a coordinate: peers
// in uid order), so the result is bit-identical on every node.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "crucible/kernels/error_feedback.h"

namespace crucible::kernels {

struct PeerUpdate {
  std::uint16_t uid = 0;
  const CompressedTensor* tensor = nullptr;  // all peers' layouts must be equal
};

// The median of the norms: the middle one, or the mean of the two middle ones.
double median_of(std::vector<double> values);

// Dense aggregate into `out` (the tensor's element count). Duplicate uids,
// mismatched layouts and malformed tensors are errors; no peers gives zeros.
// `threads` <= 0: the hardware's count; the same bytes for every count.
Status aggregate(std::vector<PeerUpdate> peers, std::span<float> out, int threads = 1);

}  // namespace crucible::kernels
