// The miner's inner loop on its own: H AdamW steps on the window's samples
// give a pseudo-gradient that lowers the loss on them, the replica goes
// back to where it started, bf16 autocast (miner.autocast) trains about as
// f32 does, and a window out of time ends after the steps it took.
#include "crucible/miner/inner_loop.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>

#include "support/in_process.h"

namespace crucible::miner {
namespace {

std::vector<std::int64_t> tokens(std::int64_t n, std::int64_t L) {
  std::vector<std::int64_t> t(static_cast<std::size_t>(n * L));
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = static_cast<std::int64_t>((i * 7 + i / 5) % 48);
  return t;
}

struct Trained {
  double mean_loss = 0, before = 0, after = 0;
};

// H steps of 4 samples at lr 0.003, no warm-up, one thread.
MinerOptions loop_options(std::uint32_t inner_steps) {
  MinerOptions o;
  o.inner_steps = inner_steps;
  o.micro_batch = 4;
  o.lr = 0.003;
  o.warmup_steps = 0;
  o.threads = 1;
  return o;
}

// Trains one window on a fresh replica (seed 1) and measures the loss on
// the window's samples before and after the outer step of the delta.
Trained train(const std::string& autocast, const std::string& device = "cpu") {
  const model::ModelConfig config = testing::tiny_model();
  auto replica = model::Replica::create(config, model::ReplicaOptions{device, 1, autocast}, 1);
  EXPECT_TRUE(replica.is_ok()) << replica.status();
  if (!replica.is_ok()) return {};
  auto loop = InnerLoop::create(**replica, loop_options(4));
  EXPECT_TRUE(loop.is_ok()) << loop.status();
  const auto samples = tokens(8, config.seq_len);
  Trained out;
  out.before = (*replica)->loss(samples, 8).value();
  int steps = 0;
  auto r = (*loop)->train_window(
      samples, 8, [&](const StepInfo&) { ++steps; }, nullptr);
  EXPECT_TRUE(r.is_ok()) << r.status();
  if (!r.is_ok()) return out;
  EXPECT_EQ(steps, 4);
  EXPECT_EQ((*replica)->loss(samples, 8).value(), out.before);  // back at theta_start, exactly
  double sq = 0;
  for (const auto& t : r->delta)
    for (float v : t) {
      EXPECT_TRUE(std::isfinite(v));
      sq += double(v) * v;
    }
  EXPECT_GT(sq, 0.0);
  EXPECT_TRUE((*replica)->apply_update(r->delta, 1.0).is_ok());
  out.after = (*replica)->loss(samples, 8).value();
  out.mean_loss = r->mean_loss;
  return out;
}

TEST(InnerLoop, ItsDeltaLowersTheLossAndBf16TrainsLikeF32) {
  const Trained f32 = train("off");
  EXPECT_LT(f32.after, f32.before);
  const Trained bf16 = train("bf16");
  EXPECT_LT(bf16.after, bf16.before);
  EXPECT_NEAR(bf16.mean_loss, f32.mean_loss, 0.02 * f32.mean_loss);
  EXPECT_NE(bf16.mean_loss, f32.mean_loss);  // autocast took effect
  EXPECT_NEAR(bf16.after, f32.after, 0.02 * f32.after);
}

// On a GPU (skipped where there is none), in bf16 autocast as a miner runs
// there by default: the delta lowers the loss, and training is close to
// the CPU's f32.
TEST(InnerLoopOnCuda, TrainsInBf16LikeTheCpu) {
  if (!model::Replica::create(testing::tiny_model(), model::ReplicaOptions{"cuda", 1, "auto"}, 1).is_ok()) {
    GTEST_SKIP() << "no GPU here";
  }
  const Trained cpu = train("off");
  const Trained gpu = train("auto", "cuda");
  EXPECT_LT(gpu.after, gpu.before);
  EXPECT_NEAR(gpu.before, cpu.before, 1e-3 * cpu.before);
  EXPECT_NEAR(gpu.mean_loss, cpu.mean_loss, 0.02 * cpu.mean_loss);
  EXPECT_NEAR(gpu.after, cpu.after, 0.02 * cpu.after);
}

// Out of time (the miner's train_deadline: the slot would close first):
// the loop ends after the steps it had taken, the first always, and its
// delta is theirs: the same as a loop of that many steps, and still a
// step down on the window's samples. The replica is back at its start.
TEST(InnerLoop, OutOfTimeEndsTheWindowAfterTheStepsTakenAndTheirDeltaStands) {
  const model::ModelConfig config = testing::tiny_model();
  const auto samples = tokens(8, config.seq_len);
  auto run = [&](std::uint32_t inner_steps, std::function<bool()> out_of_time) -> std::optional<WindowResult> {
    auto replica = model::Replica::create(config, model::ReplicaOptions{"cpu", 1, "off"}, 1);
    EXPECT_TRUE(replica.is_ok()) << replica.status();
    if (!replica.is_ok()) return std::nullopt;
    auto loop = InnerLoop::create(**replica, loop_options(inner_steps));
    EXPECT_TRUE(loop.is_ok()) << loop.status();
    const double before = (*replica)->loss(samples, 8).value();
    auto r = (*loop)->train_window(samples, 8, nullptr, nullptr, std::move(out_of_time));
    EXPECT_TRUE(r.is_ok()) << r.status();
    if (!r.is_ok()) return std::nullopt;
    EXPECT_EQ((*replica)->loss(samples, 8).value(), before);
    EXPECT_TRUE((*replica)->apply_update(r->delta, 1.0).is_ok());
    EXPECT_LT((*replica)->loss(samples, 8).value(), before);
    return std::move(*r);
  };
  int asked = 0;
  auto cut = run(6, [&] { return ++asked > 2; });  // time runs out before the fourth step
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->steps, 3u);
  EXPECT_EQ(asked, 3);  // asked before steps 2, 3 and 4, not before the first
  EXPECT_EQ(cut->tokens, 3u * 4u * static_cast<std::uint64_t>(config.seq_len));
  auto three = run(3, nullptr);
  ASSERT_TRUE(three.has_value());
  EXPECT_EQ(three->steps, 3u);
  EXPECT_EQ(cut->delta, three->delta);  // the steps taken, exactly
  EXPECT_EQ(cut->mean_loss, three->mean_loss);
  // Out of time from the start: the first step is still taken.
  auto first_only = run(6, [] { return true; });
  ASSERT_TRUE(first_only.has_value());
  EXPECT_EQ(first_only->steps, 1u);
  // Never out of time: all six.
  auto all = run(6, [] { return false; });
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->steps, 6u);
}

}  // namespace
}  // namespace crucible::miner
