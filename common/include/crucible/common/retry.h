// Waiting and retrying in a node's loop: sleeps that notice a stop request
// within a quarter second, and retries of transient failures
// (Status::is_transient) with jittered, doubling backoff, logged, until
// success, a permanent error, the deadline or a stop.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <string_view>
#include <thread>

#include "crucible/common/clock.h"
#include "crucible/common/log.h"
#include "crucible/common/status.h"

namespace crucible {

// false when stopped before the time was up.
inline bool sleep_unless_stopped(std::chrono::milliseconds d, const std::atomic<bool>& stop) {
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + d;
  while (Clock::now() < end) {
    if (stop.load()) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(250), end - Clock::now()));
  }
  return !stop.load();
}

inline double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct RetryOptions {
  std::chrono::milliseconds deadline{60'000};  // all attempts of one call together
  std::chrono::milliseconds initial{250};
  std::chrono::milliseconds max_delay{10'000};
  double jitter = 0.25;  // each delay is scaled by a factor drawn in [1 - jitter, 1 + jitter]
};

// Retries f() while it fails with a transient error, until the deadline.
// Time is the node's `clock` (protocol::NodeIo::clock): its wall time for
// the deadline and its sleeps between attempts, so that a test on a clock
// of its own retries without waiting in real time.
template <typename F>
auto retry_transient(std::string_view what, Clock& clock, const std::atomic<bool>& stop, F&& f,
                     const RetryOptions& o = {}) -> decltype(f()) {
  const double deadline = clock.unix_seconds() + std::chrono::duration<double>(o.deadline).count();
  thread_local std::minstd_rand rng{std::random_device{}()};
  std::uniform_real_distribution<double> spread(1.0 - o.jitter, 1.0 + o.jitter);
  auto delay = o.initial;
  for (int attempt = 1;; ++attempt) {
    auto r = f();
    if (r.is_ok() || stop.load() || !r.status().is_transient()) return r;
    const auto wait =
        std::chrono::milliseconds(static_cast<std::int64_t>(static_cast<double>(delay.count()) * spread(rng)));
    if (clock.unix_seconds() + std::chrono::duration<double>(wait).count() > deadline) {
      log::warn("giving up after retries", {{"what", what}, {"attempts", attempt}, {"error", r.status().to_string()}});
      return r;
    }
    log::warn("retrying", {{"what", what}, {"attempt", attempt}, {"error", r.status().to_string()}});
    if (!clock.sleep(wait, stop)) return r;
    delay = std::min(delay * 2, o.max_delay);
  }
}

}  // namespace crucible
