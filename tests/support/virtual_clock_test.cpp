// The in-process network's virtual time: it stands still while a counted
// thread works and jumps to the earliest wake-up when every one sleeps.
#include "support/virtual_clock.h"

#include <gtest/gtest.h>

#include <thread>

namespace crucible::testing {
namespace {

using std::chrono::milliseconds;

TEST(VirtualClock, StandsStillWhileACountedThreadWorksAndJumpsWhenAllSleep) {
  auto clock = VirtualClock::create(1000.0);
  Clock::Ticket me = clock->counted();
  const std::atomic<bool> never{false};
  std::atomic<double> woke_at{-1};
  std::thread sleeper([&, t = clock->counted()] {
    EXPECT_TRUE(clock->sleep(milliseconds(5000), never));
    woke_at = clock->elapsed_s();
  });
  std::this_thread::sleep_for(milliseconds(50));  // this thread works (real time passes)
  EXPECT_EQ(clock->elapsed_s(), 0.0);
  EXPECT_EQ(woke_at.load(), -1.0);

  EXPECT_TRUE(clock->sleep(milliseconds(10), never));  // both asleep: the earliest wake-up is this one
  EXPECT_DOUBLE_EQ(clock->elapsed_s(), 0.010);
  EXPECT_DOUBLE_EQ(clock->unix_seconds(), 1000.010);
  EXPECT_EQ(woke_at.load(), -1.0);
  me.reset();  // no longer counted: the sleeper is all time waits for
  sleeper.join();
  EXPECT_DOUBLE_EQ(woke_at.load(), 5.0);
  EXPECT_DOUBLE_EQ(clock->elapsed_s(), 5.0);
}

// The caller of run_threads is not counted while it waits, and counted
// again the instant the last thread ends: a thread that sleeps on alone
// (here the "chain", as the in-process network's block thread) cannot run
// time on in between.
TEST(VirtualClock, RunThreadsHandsTimeBackToItsCallerWhenTheLastThreadEnds) {
  auto clock = VirtualClock::create(0.0);
  Clock::Ticket me = clock->counted();
  std::atomic<bool> stop_chain{false};
  std::atomic<int> blocks{0};
  std::thread chain([&, t = clock->counted()] {
    while (clock->sleep(milliseconds(250), stop_chain)) ++blocks;
  });
  const std::atomic<bool> never{false};
  clock->run_threads(
      3, [&](std::size_t i) { EXPECT_TRUE(clock->sleep(milliseconds(1000 * static_cast<int>(i + 1)), never)); });
  const double at_return = clock->elapsed_s();
  EXPECT_DOUBLE_EQ(at_return, 3.0);               // the last thread's wake-up
  std::this_thread::sleep_for(milliseconds(50));  // the caller works: the chain waits
  EXPECT_DOUBLE_EQ(clock->elapsed_s(), at_return);
  EXPECT_EQ(blocks.load(), 12);
  stop_chain = true;
  chain.join();
}

TEST(VirtualClock, SleepersWakeInTheOrderOfTheirTimes) {
  auto clock = VirtualClock::create(0.0);
  const std::atomic<bool> never{false};
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::thread> threads;
  {
    Clock::Ticket starting = clock->counted();  // no time moves until all three sleep
    for (int ms : {300, 100, 200})
      threads.emplace_back([&, ms, t = clock->counted()] {
        EXPECT_TRUE(clock->sleep(milliseconds(ms), never));
        EXPECT_DOUBLE_EQ(clock->elapsed_s(), ms / 1000.0);
        std::lock_guard lk(mu);
        order.push_back(ms);
      });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(order, (std::vector<int>{100, 200, 300}));
}

TEST(VirtualClock, AStopWakesASleeperThatTimeWouldNeverReach) {
  auto clock = VirtualClock::create(0.0);
  Clock::Ticket me = clock->counted();  // this thread works throughout: time never moves
  std::atomic<bool> stop{false};
  std::atomic<int> result{-1};
  std::thread sleeper([&, t = clock->counted()] { result = clock->sleep(milliseconds(1000), stop) ? 1 : 0; });
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(result.load(), -1);
  stop = true;
  sleeper.join();
  EXPECT_EQ(result.load(), 0);
  EXPECT_EQ(clock->elapsed_s(), 0.0);
  EXPECT_FALSE(clock->sleep(milliseconds(1), stop));
}

TEST(VirtualClock, AThreadThatEndsLetsTimeMove) {
  auto clock = VirtualClock::create(0.0);
  const std::atomic<bool> never{false};
  std::atomic<bool> go{false};
  std::thread worker([&, t = clock->counted()] {
    while (!go.load()) std::this_thread::sleep_for(milliseconds(1));
  });
  std::thread sleeper([&, t = clock->counted()] { EXPECT_TRUE(clock->sleep(milliseconds(700), never)); });
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(clock->elapsed_s(), 0.0);  // the worker holds time
  go = true;
  worker.join();
  sleeper.join();
  EXPECT_DOUBLE_EQ(clock->elapsed_s(), 0.7);
}

}  // namespace
}  // namespace crucible::testing
