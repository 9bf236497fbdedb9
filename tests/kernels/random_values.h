// Normally distributed test values from a fixed seed, for the kernel tests.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace crucible::kernels::testing {

inline std::vector<float> random_values(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace crucible::kernels::testing
