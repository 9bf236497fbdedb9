// The inner learning rate (protocol.md §3): linear warmup over warmup_steps
// inner steps, then cosine decay over decay_steps down to min_lr_ratio * lr,
// counted across windows. Pure.
#pragma once

#include <cstdint>

#include "crucible/miner/miner_options.h"

namespace crucible::miner {

class LrSchedule {
 public:
  explicit LrSchedule(const MinerOptions& o)
      : peak_(o.lr), warmup_(o.warmup_steps), decay_(o.decay_steps), min_ratio_(o.min_lr_ratio) {}
  double at(std::uint64_t step) const;

 private:
  double peak_;
  std::uint32_t warmup_;
  std::uint64_t decay_;
  double min_ratio_;
};

}  // namespace crucible::miner
