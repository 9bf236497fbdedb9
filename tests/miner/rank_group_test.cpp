// A miner of two ranks over c10d/Gloo (issue #27), as threads of one
// process on loopback: the same update as one rank on the same samples,
// every rank holding the same model, and a rank that is missing or goes
// away an error within the timeout, never a hang.
#include "crucible/miner/rank_group.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "crucible/miner/inner_loop.h"
#include "support/in_process.h"
#include "support/scripted_http.h"

namespace crucible::miner {
namespace {

using ::testing::HasSubstr;

std::vector<std::int64_t> tokens(std::int64_t n, std::int64_t L) {
  std::vector<std::int64_t> t(static_cast<std::size_t>(n * L));
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = static_cast<std::int64_t>((i * 7 + i / 5 + i * i % 11) % 48);
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

// One window of training on a fresh genesis replica; with `ranks`, as one rank of them.
Result<WindowResult> train(RankGroup* ranks, const std::string& device = "cpu") {
  const model::ModelConfig config = testing::tiny_model();
  CRUCIBLE_ASSIGN_OR_RETURN(auto replica, model::Replica::create(config, model::ReplicaOptions{device, 1, "off"}, 1));
  CRUCIBLE_ASSIGN_OR_RETURN(auto loop, InnerLoop::create(*replica, options(), ranks));
  const auto samples = tokens(8, config.seq_len);
  return loop->train_window(samples, 8, nullptr, nullptr);
}

RankLayout layout(std::uint32_t rank, std::uint16_t port, double timeout_s = 60) {
  return RankLayout{rank, 2, fmt::format("127.0.0.1:{}", port), timeout_s};
}

TEST(RankStore, ParsesHostAndPort) {
  auto a = parse_store_address("10.0.0.2:29500");
  ASSERT_TRUE(a.is_ok()) << a.status();
  EXPECT_EQ(a->first, "10.0.0.2");
  EXPECT_EQ(a->second, 29500);
  for (const char* bad : {"10.0.0.2", ":29500", "host:", "host:0", "host:65536", "host:12x"}) {
    EXPECT_FALSE(parse_store_address(bad).is_ok()) << bad;
  }
}

// Two ranks (threads) on `device` against one: the same update on every
// rank to the bit, and the one-rank update up to float rounding (the mean
// of two half-batch means is the batch mean, summed in another order).
void expect_two_ranks_train_what_one_trains(const std::string& device) {
  auto one = train(nullptr, device);
  ASSERT_TRUE(one.is_ok()) << one.status();
  const std::uint16_t port = testing::free_port();
  std::vector<Result<WindowResult>> two(2, Result<WindowResult>(internal_error("not run")));
  std::vector<std::thread> ranks;
  for (std::uint32_t r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      auto group = RankGroup::join(layout(r, port));
      if (!group.is_ok()) {
        two[r] = group.status();
        return;
      }
      two[r] = train(group->get(), device);
    });
  }
  for (auto& t : ranks) t.join();
  ASSERT_TRUE(two[0].is_ok()) << two[0].status();
  ASSERT_TRUE(two[1].is_ok()) << two[1].status();
  ASSERT_EQ(two[0]->delta.size(), one->delta.size());
  EXPECT_EQ(two[0]->delta, two[1]->delta);
  EXPECT_NEAR(two[0]->mean_loss, one->mean_loss, 1e-5 * std::abs(one->mean_loss));
  double diff2 = 0, norm2 = 0, max_abs = 0, max_diff = 0;
  for (std::size_t t = 0; t < one->delta.size(); ++t) {
    for (std::size_t i = 0; i < one->delta[t].size(); ++i) {
      const double a = one->delta[t][i], b = two[0]->delta[t][i];
      diff2 += (a - b) * (a - b);
      norm2 += a * a;
      max_abs = std::max(max_abs, std::abs(a));
      max_diff = std::max(max_diff, std::abs(a - b));
    }
  }
  std::printf("%s: two ranks against one: relative L2 difference %.3g, largest difference %.3g (largest value %.3g)\n",
              device.c_str(), std::sqrt(diff2 / norm2), max_diff, max_abs);
  EXPECT_GT(norm2, 0.0);
  EXPECT_LT(std::sqrt(diff2 / norm2), 1e-5);
}

TEST(RankGroup, TwoRanksTrainTheUpdateOneRankTrains) {
  if (!RankGroup::available()) GTEST_SKIP() << "this libtorch has no c10d with Gloo";
  expect_two_ranks_train_what_one_trains("cpu");
}

// The GPU machine's smoke test (bench/gpu.sh): two ranks sharing one GPU,
// reducing through host buffers over Gloo.
TEST(RankGroupOnCuda, TwoRanksTrainTheUpdateOneRankTrains) {
  if (!RankGroup::available()) GTEST_SKIP() << "this libtorch has no c10d with Gloo";
  if (!model::Replica::create(testing::tiny_model(), model::ReplicaOptions{"cuda", 1, "off"}, 1).is_ok()) {
    GTEST_SKIP() << "no GPU here";
  }
  expect_two_ranks_train_what_one_trains("cuda");
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
    zero = group.is_ok() ? train(group->get()) : Result<WindowResult>(group.status());
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
