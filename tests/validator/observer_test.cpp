// The observer (validator/observer.h): the intervals in which each value of
// a commitment appeared, by the validator's clock; what a store claims plays
// no part. LocalStores on disk, a clock the test moves.
#include "crucible/validator/observer.h"

#include <gtest/gtest.h>

#include <thread>

#include "crucible/common/retry.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/storage/fault_store.h"
#include "crucible/storage/local_store.h"
#include "support/temp_dir.h"

namespace crucible::validator {
namespace {

namespace keys = protocol::keys;

// Reads `now`; each read then moves it on by `step` (a poll takes time).
class TestClock final : public Clock {
 public:
  double unix_seconds() override {
    std::lock_guard lk(mu);
    const double t = now;
    now += step;
    return t;
  }
  bool sleep(std::chrono::milliseconds d, const std::atomic<bool>& stop) override {
    return sleep_unless_stopped(d, stop);
  }
  void set(double t, double s = 0) {
    std::lock_guard lk(mu);
    now = t;
    step = s;
  }
  std::mutex mu;
  double now = 0, step = 0;
};

chain::Hash32 value(std::uint8_t fill) {
  chain::Hash32 h;
  h.fill(fill);
  return h;
}

class ObserverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = storage::LocalStore::open(dir_.path() / "miner");
    ASSERT_TRUE(s.is_ok()) << s.status();
    store_ = std::move(*s);
  }
  Observer make(ObserverOptions o = {}) { return Observer(o, clock_); }
  void poll_at(Observer& ob, double t, double step = 0) {
    clock_->set(t, step);
    ob.poll_round();
  }
  // Reads every second around a slot, every 10 s before it.
  static ObserverOptions scheduled() {
    ObserverOptions o;
    o.interval_s = 1;
    o.idle_interval_s = 10;
    return o;
  }
  // Whether window w's key of uid 5 was read at t (its last answered read began then).
  bool read_at(Observer& ob, double t, std::uint64_t w) {
    clock_->set(t);
    ob.poll_due();
    return ob.observed(5, w).last_poll == t;
  }
  void put(std::uint64_t w, std::uint8_t fill, std::size_t n = 32) {
    ASSERT_TRUE(store_->put(keys::commitment(w), Bytes(n, fill)).is_ok());
  }

  testing::TempDir dir_;
  std::shared_ptr<storage::ObjectStore> store_;
  std::shared_ptr<TestClock> clock_ = std::make_shared<TestClock>();
};

TEST_F(ObserverTest, EachVersionGetsTheIntervalInWhichItAppeared) {
  Observer ob = make();
  ob.watch(4, 5, {Watched{7, store_}});
  poll_at(ob, 100);  // nothing yet
  put(4, 1);
  poll_at(ob, 101);
  poll_at(ob, 102);  // the same version: nothing new
  put(4, 2);         // replaced
  poll_at(ob, 103);
  put(4, 1);  // the first bytes again: already known, keeps its first sighting
  poll_at(ob, 104);
  const Observation seen = ob.observed(7, 4);
  ASSERT_EQ(seen.sightings.size(), 2u);
  EXPECT_EQ(seen.sightings[0].object, value(1));
  EXPECT_EQ(seen.sightings[0].absent_at, 100);
  EXPECT_EQ(seen.sightings[0].seen_at, 101);
  EXPECT_EQ(seen.sightings[1].object, value(2));
  EXPECT_EQ(seen.sightings[1].absent_at, 102);
  EXPECT_EQ(seen.sightings[1].seen_at, 103);
  EXPECT_EQ(seen.first_poll, 100);
  EXPECT_EQ(seen.last_poll, 104);
  EXPECT_TRUE(ob.observed(7, 5).sightings.empty());  // window 5's key: polled, never there
  EXPECT_EQ(ob.observed(7, 5).last_poll, 104);
  EXPECT_FALSE(ob.observed(8, 4).first_poll);  // a uid not watched
  // Forgetting: windows before the new first are dropped.
  ob.watch(5, 6, {Watched{7, store_}});
  EXPECT_TRUE(ob.observed(7, 4).sightings.empty());
}

TEST_F(ObserverTest, AnObjectThereAtTheFirstPollHasNoLowerBound) {
  Observer ob = make();
  put(3, 9);
  ob.watch(3, 3, {Watched{1, store_}});
  poll_at(ob, 50);
  const auto s = ob.observed(1, 3).sightings;
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(std::isinf(s[0].absent_at) && s[0].absent_at < 0);
  EXPECT_EQ(s[0].seen_at, 50);
}

TEST_F(ObserverTest, OtherSizesAreNoCommitmentAndSlowPollsProveNothing) {
  ObserverOptions o;
  o.max_latency_s = 1;
  Observer ob = make(o);
  ob.watch(0, 0, {Watched{2, store_}});
  poll_at(ob, 10);
  put(0, 5, 1000);  // not 32 bytes: read as nothing (and never more than 32 bytes read)
  poll_at(ob, 11);
  EXPECT_TRUE(ob.observed(2, 0).sightings.empty());
  put(0, 6);
  poll_at(ob, 12, 2.0);  // every clock read moves 2 s on: the poll took longer than max_latency_s
  EXPECT_TRUE(ob.observed(2, 0).sightings.empty());
  poll_at(ob, 20);  // a prompt poll: seen, and it appeared after the poll before the slow one
  const auto s = ob.observed(2, 0).sightings;
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].absent_at, 11);
  EXPECT_EQ(s[0].seen_at, 20);
}

TEST_F(ObserverTest, AStoreThatFailsIsNotAskedAgainThatWindow) {
  storage::FaultOptions f;
  f.error_rate = 1.0;
  storage::RetryPolicy once;
  once.max_attempts = 1;
  auto failing = std::make_shared<storage::FaultInjectingStore>(store_, f, once);
  Observer ob = make();
  ob.watch(0, 0, {Watched{3, failing}, Watched{4, store_}});
  put(0, 1);
  poll_at(ob, 1);
  const int errors = failing->counts().errors;
  EXPECT_GT(errors, 0);
  EXPECT_TRUE(ob.observed(3, 0).gave_up);
  poll_at(ob, 2);
  poll_at(ob, 3);
  EXPECT_EQ(failing->counts().errors, errors);
  EXPECT_EQ(ob.observed(4, 0).sightings.size(), 1u);  // the other store is unaffected
}

TEST_F(ObserverTest, AScheduledWindowIsReadOftenOnlyAroundItsSlot) {
  Observer ob = make(scheduled());
  ob.watch(2, 3, {Watched{5, store_}});
  ob.schedule(2, 100, 110);  // window 3 is never scheduled: read every interval
  auto read_at = [&](double t, std::uint64_t w) { return this->read_at(ob, t, w); };
  EXPECT_TRUE(read_at(50, 2));  // never read: due at once
  EXPECT_TRUE(ob.observed(5, 3).last_poll == 50);
  EXPECT_FALSE(read_at(51, 2));  // before its busy time: every idle interval
  EXPECT_TRUE(ob.observed(5, 3).last_poll == 51);
  EXPECT_FALSE(read_at(59, 2));
  EXPECT_TRUE(read_at(60, 2));
  EXPECT_TRUE(read_at(100, 2));  // busy: every interval
  EXPECT_FALSE(read_at(100.5, 2));
  EXPECT_TRUE(read_at(101, 2));
  put(2, 4);
  EXPECT_TRUE(read_at(102, 2));
  const auto s = ob.observed(5, 2).sightings;
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].absent_at, 101);  // the interval it appeared in is an interval wide
  EXPECT_EQ(s[0].seen_at, 102);
  EXPECT_TRUE(read_at(110, 2));
  EXPECT_FALSE(read_at(111.5, 2));  // past its busy time: never again
  EXPECT_FALSE(read_at(200, 2));
  ob.schedule(2, 100, std::numeric_limits<double>::infinity());  // until not known: every interval
  EXPECT_TRUE(read_at(201, 2));
}

// Following the chain's time, the observer estimates when slots to come
// open, and watches windows the node has not named yet (it may be busy
// with a long window): a commitment made in such a slot is seen in time.
TEST_F(ObserverTest, FollowingTheChainItWatchesTheSlotsToComeOnItsOwn) {
  Observer ob = make(scheduled());
  ob.watch(2, 3, {Watched{5, store_}});
  // Block 20 at t = 100, a block a second, 10 a window: window w's slot
  // opens at t = 100 + (10 (w + 1) - 20), 4 s long; busy from 2 s before
  // (less 2 blocks and a tenth of the time ahead) to 3 s after (plus as much).
  ob.follow(ChainTime{20, 100, 1.0, 10, 4, 2, 3});
  auto read_at = [&](double t, std::uint64_t w) { return this->read_at(ob, t, w); };
  EXPECT_TRUE(read_at(100, 3));                // never read: due at once
  EXPECT_FALSE(read_at(109, 3));               // window 3's slot opens at 120: idle, every 10 s
  EXPECT_TRUE(read_at(115, 3));                // busy from 120 - 2 - (2 + 2) = 114
  EXPECT_FALSE(ob.observed(5, 5).first_poll);  // window 5's slot (t = 140) is not watched yet
  EXPECT_TRUE(read_at(129, 3));                // until 120 + 4 + 3 + 4 = 131
  EXPECT_FALSE(read_at(132, 3));               // then idle: 139 next
  // Nobody named window 5, yet it is watched as its slot comes (first read
  // at 129), and read every second from 140 - 2 - (2 + 4) = 132.
  EXPECT_TRUE(ob.observed(5, 5).first_poll);
  EXPECT_TRUE(read_at(133, 5));
  put(5, 7);
  EXPECT_TRUE(read_at(134, 5));
  const auto s = ob.observed(5, 5).sightings;
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].absent_at, 133);
  EXPECT_EQ(s[0].seen_at, 134);
  EXPECT_TRUE(read_at(153, 5));   // until 140 + 4 + 3 + 6 = 153
  EXPECT_FALSE(read_at(154, 5));  // past an estimated slot: idle (the estimate may be wrong)...
  EXPECT_TRUE(read_at(163, 5));
  EXPECT_FALSE(read_at(175, 5));  // and for a window's length (10 s) only
  // An exact schedule (the slot's block is out) overrides the estimate: over is over.
  ob.schedule(5, 130, 160);
  EXPECT_FALSE(read_at(180, 5));
  ob.schedule(3, 114, 131);
  EXPECT_FALSE(read_at(300, 3));
}

TEST_F(ObserverTest, ItsThreadPollsOnItsOwn) {
  ObserverOptions o;
  o.interval_s = 0.05;
  Observer ob(o, system_clock());
  ob.watch(0, 0, {Watched{1, store_}});
  ob.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double before = unix_seconds();
  put(0, 3);
  for (int i = 0; i < 100 && ob.observed(1, 0).sightings.empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto s = ob.observed(1, 0).sightings;
  ASSERT_EQ(s.size(), 1u);
  EXPECT_LE(s[0].absent_at, s[0].seen_at);
  EXPECT_GE(s[0].seen_at, before);
  EXPECT_GT(s[0].absent_at, before - 1);  // polled before it appeared: a finite lower bound
}

}  // namespace
}  // namespace crucible::validator
