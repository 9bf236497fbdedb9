#include "crucible/miner/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace crucible::miner {
namespace {

TEST(LrSchedule, WarmsUpLinearlyThenDecaysByCosineToTheFloor) {
  MinerOptions o;
  o.lr = 1e-3;
  o.warmup_steps = 10;
  o.decay_steps = 100;
  o.min_lr_ratio = 0.1;
  LrSchedule s(o);
  EXPECT_DOUBLE_EQ(s.at(0), 1e-4);   // (0 + 1) / 10 of the peak
  EXPECT_DOUBLE_EQ(s.at(9), 1e-3);   // the peak at the end of warmup
  EXPECT_DOUBLE_EQ(s.at(10), 1e-3);  // cosine starts at the peak
  EXPECT_NEAR(s.at(60), 1e-4 + 0.9e-3 * 0.5 * (1 + std::cos(std::numbers::pi * 0.5)), 1e-15);
  EXPECT_DOUBLE_EQ(s.at(110), 1e-4);     // the floor
  EXPECT_DOUBLE_EQ(s.at(10'000), 1e-4);  // and it stays there
  for (std::uint64_t i = 10; i < 110; ++i) EXPECT_GE(s.at(i), s.at(i + 1));
}

TEST(LrSchedule, NoWarmupStartsAtThePeak) {
  MinerOptions o;
  o.lr = 2e-3;
  o.warmup_steps = 0;
  EXPECT_DOUBLE_EQ(LrSchedule(o).at(0), 2e-3);
}

}  // namespace
}  // namespace crucible::miner
