// retry_transient on the node's clock: its deadline and its waits are the
// clock's, so a clock of the test's own runs the whole backoff at once.
#include "crucible/common/retry.h"

#include <gtest/gtest.h>

#include <vector>

namespace crucible {
namespace {

// Time moves only when someone sleeps on it.
class FakeClock final : public Clock {
 public:
  double unix_seconds() override { return now; }
  bool sleep(std::chrono::milliseconds d, const std::atomic<bool>& stop) override {
    if (stop.load()) return false;
    sleeps.push_back(d);
    now += std::chrono::duration<double>(d).count();
    return true;
  }
  double now = 1'000'000;
  std::vector<std::chrono::milliseconds> sleeps;
};

TEST(RetryTransient, BacksOffOnTheNodesClockAndGivesUpAtItsDeadline) {
  FakeClock clock;
  std::atomic<bool> stop{false};
  int calls = 0;
  const double start = clock.now;
  Result<int> r = retry_transient("flaky", clock, stop, [&]() -> Result<int> {
    ++calls;
    return unavailable("down");
  });
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  // 60 s of the clock's time (the default deadline), never past it.
  EXPECT_LE(clock.now - start, 60.0);
  EXPECT_GE(clock.now - start, 40.0);
  // Doubling from 250 ms (±25 % jitter) up to 10 s: 250, 500, ... 8 s, then 10 s.
  ASSERT_GE(clock.sleeps.size(), 7u);
  EXPECT_EQ(calls, static_cast<int>(clock.sleeps.size()) + 1);
  EXPECT_GE(clock.sleeps[0].count(), 187);
  EXPECT_LE(clock.sleeps[0].count(), 313);
  for (std::size_t i = 1; i < 6; ++i) EXPECT_GT(clock.sleeps[i], clock.sleeps[i - 1]) << i;
  for (auto d : clock.sleeps) EXPECT_LE(d.count(), 12'500);
}

TEST(RetryTransient, ReturnsTheFirstSuccessAndNeverRetriesAPermanentError) {
  FakeClock clock;
  std::atomic<bool> stop{false};
  int calls = 0;
  auto r = retry_transient("twice down", clock, stop, [&]() -> Result<int> {
    return ++calls < 3 ? Result<int>(unavailable("down")) : Result<int>(7);
  });
  ASSERT_TRUE(r.is_ok()) << r.status();
  EXPECT_EQ(*r, 7);
  EXPECT_EQ(clock.sleeps.size(), 2u);

  calls = 0;
  auto bad = retry_transient("refused", clock, stop, [&]() -> Result<int> {
    ++calls;
    return invalid_argument("no");
  });
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(calls, 1);
}

TEST(RetryTransient, AStopEndsTheRetries) {
  FakeClock clock;
  std::atomic<bool> stop{false};
  int calls = 0;
  auto r = retry_transient("stopping", clock, stop, [&]() -> Result<int> {
    if (++calls == 2) stop = true;
    return unavailable("down");
  });
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace crucible
