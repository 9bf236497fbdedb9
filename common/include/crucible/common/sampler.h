// Deterministic sample assignment (protocol.md §2): which samples a uid
// trains on in a window. Miner and validator must compute it bit for bit
// alike, so the generator and the draw are specified exactly here and in
// docs/protocol.md, with vectors.
#pragma once

#include <cstdint>
#include <vector>

#include "crucible/common/status.h"

namespace crucible {

// SplitMix64 (Steele, Lea, Flood 2014): state += 0x9E3779B97F4A7C15, then
// the two xor-shift-multiply rounds and a final xor-shift.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  // Uniform in [0, bound) by rejection (no modulo bias); bound > 0.
  std::uint64_t below(std::uint64_t bound);

 private:
  std::uint64_t state_;
};

// (uid * 1_000_003 XOR window) & 0xFFFFFFFF
std::uint64_t assignment_seed(std::uint16_t uid, std::uint64_t window);

// `count` distinct sample indices from [0, pool), in draw order: a partial
// Fisher–Yates shuffle of the virtual array 0..pool-1 (memory O(count)).
// invalid_argument when count > pool or pool is 0.
Result<std::vector<std::uint64_t>> assign_samples(std::uint16_t uid, std::uint64_t window, std::uint64_t pool,
                                                  std::uint64_t count);

}  // namespace crucible
