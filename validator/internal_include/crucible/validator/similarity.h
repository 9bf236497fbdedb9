// Similarity of updates across uids and windows, at bounded cost (protocol.md
// §6 "Similarity"). Each update, and each applied aggregate, is summarised
// by a count sketch of its decoded values: every coordinate (tensor t,
// element e) is hashed to one of kSketchBuckets buckets with a random sign,
// and its value added there. The inner product of two sketches estimates
// the inner product of the updates (Charikar, Chen, Farach-Colton 2002), so
// their cosine estimates the updates' cosine (error about 1/sqrt(buckets)):
// a copy that was rescaled, sign-flipped, re-quantised or had some of its
// coordinates moved keeps a cosine near ±1, whatever its index overlap.
// Sketches are kept in RocksDB for `history_windows` windows, so a replay
// of an update or an aggregate from several windows back is found after a
// restart too. Pure: no I/O, no torch.
#pragma once

#include <cstdint>
#include <vector>

#include "crucible/common/bytes.h"
#include "crucible/common/status.h"
#include "crucible/common/tensor_spec.h"
#include "crucible/kernels/error_feedback.h"

namespace crucible::validator {

inline constexpr std::size_t kSketchBuckets = 4096;

struct Sketch {
  std::vector<float> buckets;  // kSketchBuckets, or empty for "nothing to compare"
  bool empty() const { return buckets.empty(); }
};

// Of a compressed update (the kept coordinates, dequantised).
Sketch sketch_of(const std::vector<kernels::CompressedTensor>& update);
// Of dense tensors (an aggregate): their non-zero coordinates.
Sketch sketch_of(const model::TensorValues& dense);

// The L2 norm of a compressed update's dense form, from the compressed form
// alone: decoding puts each kept value (dequantised) at its own index
// (distinct within a block, checked when the packet was read) and zeros
// elsewhere, so the dense norm is that of the kept values.
double norm_of(const std::vector<kernels::CompressedTensor>& update);

// Estimated cosine of the two updates, in [-1, 1]; 0 when either is empty or zero.
double cosine(const Sketch& a, const Sketch& b);

// Sketches scaled to unit length, one row each, for comparing many with
// many: each cosine is then one dot product over the row (cosine() above
// takes both norms again for every pair). A zero, empty or non-finite
// sketch is a row of zeros: cosine 0, as cosine() says.
class UnitSketches {
 public:
  void add(const Sketch& s);
  std::size_t size() const { return rows_.size() / kSketchBuckets; }
  // Estimated cosine of rows i and j, in [-1, 1] (float arithmetic).
  double cosine(std::size_t i, const UnitSketches& other, std::size_t j) const;

 private:
  std::vector<float> rows_;
};

// For RocksDB: kSketchBuckets little-endian float32. decode refuses any other size.
Bytes encode_sketch(const Sketch& s);
Result<Sketch> decode_sketch(ByteSpan bytes);

}  // namespace crucible::validator
