// Virtual time for in-process networks (PCCL's in-process end-to-end tests
// and Psyche's coordinator tests run on time they are handed, for the same
// reason): the clock stands still while any thread it counts is working,
// and when every counted thread sleeps in sleep() it jumps to the earliest
// wake-up. A window of the in-process network then takes as long as its
// nodes compute, not its length in seconds, and no result depends on how
// loaded the machine is.
//
// Threads are counted through Clock's counted() tickets and run_threads()
// (clock.h): the test counts each long-lived thread it starts (and itself
// while it sets up, so time waits for it), node code does the same for the
// threads it starts. A counted thread that blocks on anything but this
// clock, waiting for a thread that sleeps here, stops time: wait through
// run_threads() instead.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "crucible/common/clock.h"

namespace crucible::testing {

class VirtualClock final : public Clock, public std::enable_shared_from_this<VirtualClock> {
 public:
  // Time starts at `start_unix_s`, Unix seconds.
  static std::shared_ptr<VirtualClock> create(double start_unix_s);

  double unix_seconds() override;
  bool sleep(std::chrono::milliseconds d, const std::atomic<bool>& stop) override;
  Ticket counted() override;
  void run_threads(std::size_t n, const std::function<void(std::size_t)>& f) override;

  // Seconds moved since the start.
  double elapsed_s();

 private:
  explicit VirtualClock(double start_unix_s) : start_(start_unix_s) {}
  // Caller holds mu_: when no counted thread is working, the earliest
  // sleepers become due (time jumps to their wake-up) and are woken.
  void advance_locked();

  const double start_;
  std::mutex mu_;
  std::int64_t now_us_ = 0;
  std::int64_t counted_ = 0;
  std::int64_t waiting_ = 0;  // callers of run_threads, not counted while they wait
  std::uint64_t next_id_ = 0;
  struct Sleeper {
    std::condition_variable cv;
    bool due = false;
  };
  std::map<std::pair<std::int64_t, std::uint64_t>, Sleeper*> sleepers_;  // (wake-up, id): not due yet
};

}  // namespace crucible::testing
