// A miner of two ranks over c10d/Gloo (issue #27), as threads of one
// process on loopback: the same update as one rank on the same samples,
// every rank holding the same model, and a rank that is missing or goes
// away an error within the timeout, never a hang.
#include "crucible/miner/rank_group.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <thread>

#include "crucible/miner/inner_loop.h"
#include "support/in_process.h"
#include "support/scripted_http.h"
#include "support/temp_dir.h"

namespace crucible::miner {
namespace {

using ::testing::HasSubstr;

std::vector<std::int64_t> tokens(std::int64_t n, std::int64_t L, std::size_t salt = 0) {
  std::vector<std::int64_t> t(static_cast<std::size_t>(n * L));
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::size_t j = i + salt * 131;
    t[i] = static_cast<std::int64_t>((j * 7 + j / 5 + j * j % 11) % 48);
  }
  return t;
}

MinerOptions options() {
  MinerOptions o;
  o.inner_steps = 3;
  o.micro_batch = 4;
  o.lr = 0.003;
  o.warmup_steps = 0;
  o.threads = 1;
  return o;
}

// What one rank of a run does: optionally load a saved state (rank 0) and
// share it, train `windows` windows (each on its own samples), and
// optionally save after the first (rank 0).
struct RunPlan {
  std::string device = "cpu";
  bool shard = false;
  std::uint32_t micro_batch = 4;
  std::uint32_t windows = 2;
  std::size_t first_window = 0;
  std::optional<std::filesystem::path> load_from, save_to;  // save_to: after the last window
};

Result<std::vector<WindowResult>> train(RankGroup* ranks, const RunPlan& run) {
  const model::ModelConfig config = testing::tiny_model();
  CRUCIBLE_ASSIGN_OR_RETURN(auto replica,
                            model::Replica::create(config, model::ReplicaOptions{run.device, 1, "off"}, 1));
  MinerOptions o = options();
  o.shard_optimizer = run.shard;
  o.micro_batch = run.micro_batch;
  CRUCIBLE_ASSIGN_OR_RETURN(auto loop, InnerLoop::create(*replica, o, ranks));
  const bool rank0 = ranks == nullptr || ranks->rank() == 0;
  if (run.load_from && rank0) {
    CRUCIBLE_RETURN_IF_ERROR(loop->load(*run.load_from, std::uint64_t{o.inner_steps} * run.first_window));
  }
  CRUCIBLE_RETURN_IF_ERROR(loop->share_state());
  std::vector<WindowResult> results;
  for (std::uint32_t w = 0; w < run.windows; ++w) {
    const auto samples = tokens(8, config.seq_len, run.first_window + w);
    CRUCIBLE_ASSIGN_OR_RETURN(WindowResult r, loop->train_window(samples, 8, nullptr, nullptr));
    results.push_back(std::move(r));
    if (w + 1 == run.windows && run.save_to && rank0) CRUCIBLE_RETURN_IF_ERROR(loop->save(*run.save_to));
  }
  return results;
}

RankLayout layout(std::uint32_t rank, std::uint16_t port, double timeout_s = 60, std::uint32_t world = 2) {
  return RankLayout{rank, world, fmt::format("127.0.0.1:{}", port), timeout_s};
}

// `run` on `world` ranks (threads, on loopback): each rank's windows.
std::vector<Result<std::vector<WindowResult>>> train_on_ranks(std::uint32_t world, const RunPlan& run) {
  const std::uint16_t port = testing::free_port();
  std::vector<Result<std::vector<WindowResult>>> out(world, internal_error("not run"));
  std::vector<std::thread> threads;
  for (std::uint32_t r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      auto group = RankGroup::join(layout(r, port, 60, world));
      out[r] = group.is_ok() ? train(group->get(), run) : Result<std::vector<WindowResult>>(group.status());
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

// b against a: the relative L2 difference of their updates, printed with the largest difference.
double relative_difference(const WindowResult& a, const WindowResult& b, const std::string& what) {
  double diff2 = 0, norm2 = 0, max_abs = 0, max_diff = 0;
  EXPECT_EQ(a.delta.size(), b.delta.size());
  for (std::size_t t = 0; t < a.delta.size() && t < b.delta.size(); ++t) {
    for (std::size_t i = 0; i < a.delta[t].size(); ++i) {
      const double x = a.delta[t][i], y = b.delta[t][i];
      diff2 += (x - y) * (x - y);
      norm2 += x * x;
      max_abs = std::max(max_abs, std::abs(x));
      max_diff = std::max(max_diff, std::abs(x - y));
    }
  }
  std::printf("%s: relative L2 difference %.3g, largest difference %.3g (largest value %.3g)\n", what.c_str(),
              std::sqrt(diff2 / norm2), max_diff, max_abs);
  EXPECT_GT(norm2, 0.0);
  return std::sqrt(diff2 / norm2);
}

// `world` ranks against one, over two windows (AdamW's state carries from
// the first to the second): the same update on every rank to the bit, and
// the one-rank update up to float rounding (the mean of half-batch means
// is the batch mean, summed in another order).
void expect_ranks_train_what_one_trains(const std::string& device, std::uint32_t world, bool shard) {
  RunPlan run;
  run.device = device;
  run.shard = shard;
  run.micro_batch = 2 * world;
  auto one = train(nullptr, run);
  ASSERT_TRUE(one.is_ok()) << one.status();
  auto many = train_on_ranks(world, run);
  for (const auto& r : many) ASSERT_TRUE(r.is_ok()) << r.status();
  for (std::uint32_t w = 0; w < run.windows; ++w) {
    for (std::uint32_t r = 1; r < world; ++r) EXPECT_EQ((*many[0])[w].delta, (*many[r])[w].delta) << "rank " << r;
    EXPECT_NEAR((*many[0])[w].mean_loss, (*one)[w].mean_loss, 1e-5 * std::abs((*one)[w].mean_loss));
    const std::string what =
        fmt::format("{}: {} ranks{} against one, window {}", device, world, shard ? " (optimizer sharded)" : "", w + 1);
    EXPECT_LT(relative_difference((*one)[w], (*many[0])[w], what), 1e-5) << what;
  }
}

TEST(RankGroup, TwoRanksTrainTheUpdateOneRankTrains) {
  if (!RankGroup::available()) GTEST_SKIP() << "this libtorch has no c10d with Gloo";
  expect_ranks_train_what_one_trains("cpu", 2, false);
}

// ZeRO-1: each rank steps its slice of AdamW's state, then the ranks
// gather the parameters. Three ranks, so the slices are uneven (the
// parameters do not divide by three) and a slice ends inside a tensor.
TEST(RankGroup, ShardedOptimizerOnThreeRanksTrainsTheUpdateOneRankTrains) {
  if (!RankGroup::available()) GTEST_SKIP() << "this libtorch has no c10d with Gloo";
  auto replica = model::Replica::create(testing::tiny_model(), model::ReplicaOptions{"cpu", 1}, 1);
  ASSERT_TRUE(replica.is_ok());
  std::int64_t params = 0;
  for (const auto& spec : (*replica)->specs()) params += spec.numel();
  ASSERT_NE(params % 3, 0) << "the test wants slices of unequal length";
  expect_ranks_train_what_one_trains("cpu", 3, true);
}

// The sharded state persists as the whole model's: rank 0 gathers every
// rank's slice into the optimizer.pt it saves (after two windows, so the
// second gather writes over the first), which a one-rank miner resumes
// from, and sharded ranks take their slices of a state a one-rank miner
// saved. Both resume to the update of an uninterrupted run.
TEST(RankGroup, ShardedOptimizerStateSavesAndResumesAsTheWholeState) {
  if (!RankGroup::available()) GTEST_SKIP() << "this libtorch has no c10d with Gloo";
  RunPlan all;  // windows 1 to 3, one rank
  all.windows = 3;
  auto whole = train(nullptr, all);
  ASSERT_TRUE(whole.is_ok()) << whole.status();
  testing::TempDir sharded_save, whole_save;
  RunPlan first;  // windows 1 and 2, saved
  first.save_to = sharded_save.path();
  RunPlan sharded_first = first;
  sharded_first.shard = true;
  for (const auto& r : train_on_ranks(2, sharded_first)) ASSERT_TRUE(r.is_ok()) << r.status();
  first.save_to = whole_save.path();
  ASSERT_TRUE(train(nullptr, first).is_ok());

  RunPlan third;  // window 3, resumed
  third.windows = 1;
  third.first_window = 2;
  third.load_from = sharded_save.path();
  auto one_from_sharded = train(nullptr, third);
  ASSERT_TRUE(one_from_sharded.is_ok()) << one_from_sharded.status();
  EXPECT_LT(relative_difference((*whole)[2], (*one_from_sharded)[0], "one rank resumed from sharded ranks' save"),
            1e-5);
  third.load_from = whole_save.path();
  third.shard = true;
  auto sharded_from_one = train_on_ranks(2, third);
  for (const auto& r : sharded_from_one) ASSERT_TRUE(r.is_ok()) << r.status();
  EXPECT_LT(relative_difference((*whole)[2], (*sharded_from_one[0])[0], "sharded ranks resumed from one rank's save"),
            1e-5);
  // And not by chance: resuming without the saved moments trains another update.
  third.load_from.reset();
  third.shard = false;
  auto fresh = train(nullptr, third);
  ASSERT_TRUE(fresh.is_ok()) << fresh.status();
  EXPECT_GT(relative_difference((*whole)[2], (*fresh)[0], "one rank without the saved state"), 1e-3);
}

// The GPU machine's smoke test (bench/gpu.sh): two ranks sharing one GPU,
// reducing through host buffers over Gloo, with and without sharding.
TEST(RankGroupOnCuda, TwoRanksTrainTheUpdateOneRankTrains) {
  if (!RankGroup::available()) GTEST_SKIP() << "this libtorch has no c10d with Gloo";
  if (!model::Replica::create(testing::tiny_model(), model::ReplicaOptions{"cuda", 1, "off"}, 1).is_ok()) {
    GTEST_SKIP() << "no GPU here";
  }
  expect_ranks_train_what_one_trains("cuda", 2, false);
  expect_ranks_train_what_one_trains("cuda", 2, true);
}

// A rank that goes away half way through a window (here: rank 1 trains one
// step of the three and leaves) makes rank 0's window an error, never an
// update from a partial world.
TEST(RankGroup, ARankLeavingMidWindowFailsTheWindowNotPartOfIt) {
  if (!RankGroup::available()) GTEST_SKIP() << "this libtorch has no c10d with Gloo";
  const std::uint16_t port = testing::free_port();
  Result<WindowResult> zero(internal_error("not run"));
  std::thread rank0([&] {
    auto group = RankGroup::join(layout(0, port, 10));
    if (!group.is_ok()) {
      zero = group.status();
      return;
    }
    RunPlan one_window;
    one_window.windows = 1;
    auto windows = train(group->get(), one_window);
    zero = windows.is_ok() ? Result<WindowResult>(std::move((*windows)[0])) : Result<WindowResult>(windows.status());
  });
  {
    auto group = RankGroup::join(layout(1, port, 10));
    ASSERT_TRUE(group.is_ok()) << group.status();
    auto replica = model::Replica::create(testing::tiny_model(), model::ReplicaOptions{"cpu", 1}, 1);
    ASSERT_TRUE(replica.is_ok());
    MinerOptions one_step = options();
    one_step.inner_steps = 1;
    auto loop = InnerLoop::create(**replica, one_step, group->get());
    ASSERT_TRUE(loop.is_ok());
    ASSERT_TRUE((*loop)->share_state().is_ok());
    const auto samples = tokens(8, testing::tiny_model().seq_len);
    EXPECT_TRUE((*loop)->train_window(samples, 8, nullptr, nullptr).is_ok());
  }  // rank 1 leaves after its first step
  rank0.join();
  ASSERT_FALSE(zero.is_ok());
  EXPECT_THAT(zero.status().message(), HasSubstr("a rank has gone")) << zero.status();
}

TEST(RankGroup, AMicroBatchThatDoesNotSplitOverTheRanksIsRefused) {
  if (!RankGroup::available()) GTEST_SKIP() << "this libtorch has no c10d with Gloo";
  const std::uint16_t port = testing::free_port();
  std::vector<std::unique_ptr<RankGroup>> groups(2);
  std::vector<std::thread> ranks;
  for (std::uint32_t r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      auto g = RankGroup::join(layout(r, port));
      if (g.is_ok()) groups[r] = std::move(*g);
    });
  }
  for (auto& t : ranks) t.join();
  ASSERT_TRUE(groups[0] && groups[1]);
  auto replica = model::Replica::create(testing::tiny_model(), model::ReplicaOptions{"cpu", 1}, 1);
  ASSERT_TRUE(replica.is_ok());
  MinerOptions o = options();
  o.micro_batch = 3;
  auto loop = InnerLoop::create(**replica, o, groups[0].get());
  ASSERT_FALSE(loop.is_ok());
  EXPECT_THAT(loop.status().message(), HasSubstr("miner.micro_batch 3 is not a multiple of the 2 ranks"));
}

TEST(RankGroup, ARankThatNeverComesIsAnErrorWithinTheTimeout) {
  if (!RankGroup::available()) GTEST_SKIP() << "this libtorch has no c10d with Gloo";
  auto g = RankGroup::join(layout(0, testing::free_port(), 2.0));
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kDeadlineExceeded) << g.status();
  EXPECT_THAT(g.status().message(), HasSubstr("rank 0 of 2 could not meet the others"));
}

TEST(RankGroup, ARankThatGoesAwayFailsTheOthersAllReduceInsteadOfHangingIt) {
  if (!RankGroup::available()) GTEST_SKIP() << "this libtorch has no c10d with Gloo";
  const std::uint16_t port = testing::free_port();
  std::unique_ptr<RankGroup> zero;
  Status zero_status = Status::ok();
  std::thread rank0([&] {
    auto g = RankGroup::join(layout(0, port, 3.0));
    if (!g.is_ok()) {
      zero_status = g.status();
      return;
    }
    zero = std::move(*g);
  });
  {
    auto one = RankGroup::join(layout(1, port, 3.0));
    rank0.join();
    ASSERT_TRUE(one.is_ok()) << one.status();
    ASSERT_TRUE(zero) << zero_status;
    std::vector<float> v{1, 2, 3};
    std::vector<float> w{3, 4, 5};
    std::thread other([&] { EXPECT_TRUE((*one)->all_reduce_mean(w).is_ok()); });
    ASSERT_TRUE(zero->all_reduce_mean(v).is_ok());
    other.join();
    EXPECT_EQ(v, (std::vector<float>{2, 3, 4}));
    EXPECT_EQ(w, v);
  }  // rank 1 leaves
  std::vector<float> v{1, 2, 3};
  const Status s = zero->all_reduce_mean(v);
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded) << s;
  // The group is not used again after a failure.
  const Status again = zero->all_reduce_mean(v);
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition) << again;
}

}  // namespace
}  // namespace crucible::miner
