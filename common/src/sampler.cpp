#include "crucible/common/sampler.h"

#include <unordered_map>

namespace crucible {

std::uint64_t SplitMix64::next() {
  state_ += 0x9E3779B97F4A7C15ULL;
  std::uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::uint64_t SplitMix64::below(std::uint64_t bound) {
  const std::uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
  for (;;) {
    std::uint64_t r = next();
    if (r >= threshold) return r % bound;
  }
}

std::uint64_t assignment_seed(std::uint16_t uid, std::uint64_t window) {
  return ((static_cast<std::uint64_t>(uid) * 1'000'003ULL) ^ window) & 0xFFFFFFFFULL;
}

Result<std::vector<std::uint64_t>> assign_samples(std::uint16_t uid, std::uint64_t window, std::uint64_t pool,
                                                  std::uint64_t count) {
  if (pool == 0) return invalid_argument("sampler: the pool is empty");
  if (count > pool) return invalid_argument("sampler: {} samples asked from a pool of {}", count, pool);
  if (count > (std::uint64_t{1} << 24))
    return invalid_argument("sampler: {} samples is more than a window uses", count);
  SplitMix64 rng(assignment_seed(uid, window));
  std::unordered_map<std::uint64_t, std::uint64_t> moved;  // positions whose value is not their own index
  auto at = [&](std::uint64_t i) {
    auto it = moved.find(i);
    return it == moved.end() ? i : it->second;
  };
  std::vector<std::uint64_t> out;
  out.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t j = i + rng.below(pool - i);
    std::uint64_t vi = at(i), vj = at(j);
    moved[i] = vj;
    moved[j] = vi;
    out.push_back(vj);
  }
  return out;
}

}  // namespace crucible
