#include "crucible/miner/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace crucible::miner {

double LrSchedule::at(std::uint64_t step) const {
  if (step < warmup_) return peak_ * static_cast<double>(step + 1) / warmup_;
  const double t = std::min(1.0, static_cast<double>(step - warmup_) / static_cast<double>(decay_));
  const double floor = peak_ * min_ratio_;
  return floor + (peak_ - floor) * 0.5 * (1 + std::cos(std::numbers::pi * t));
}

}  // namespace crucible::miner
