// Waiting and retrying in a node's loop: sleeps that notice a stop request
// within a quarter second, and retries of transient failures (unavailable,
// deadline_exceeded) with doubling backoff, logged, until success, a
// permanent error or a stop.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string_view>
#include <thread>

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

template <typename F>
auto retry_transient(std::string_view what, const std::atomic<bool>& stop, F&& f) -> decltype(f()) {
  auto delay = std::chrono::milliseconds(250);
  for (;;) {
    auto r = f();
    if (r.is_ok() || stop.load()) return r;
    if (r.status().code() != StatusCode::kUnavailable && r.status().code() != StatusCode::kDeadlineExceeded) return r;
    log::warn("retrying", {{"what", what}, {"error", r.status().to_string()}});
    if (!sleep_unless_stopped(delay, stop)) return r;
    delay = std::min<std::chrono::milliseconds>(delay * 2, std::chrono::milliseconds(10'000));
  }
}

}  // namespace crucible
