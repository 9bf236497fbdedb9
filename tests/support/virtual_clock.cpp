#include "support/virtual_clock.h"

namespace crucible::testing {

std::shared_ptr<VirtualClock> VirtualClock::create(double start_unix_s) {
  return std::shared_ptr<VirtualClock>(new VirtualClock(start_unix_s));
}

double VirtualClock::unix_seconds() {
  std::lock_guard lk(mu_);
  return start_ + static_cast<double>(now_us_) * 1e-6;
}

double VirtualClock::elapsed_s() {
  std::lock_guard lk(mu_);
  return static_cast<double>(now_us_) * 1e-6;
}

bool VirtualClock::sleep(std::chrono::milliseconds d, const std::atomic<bool>& stop) {
  std::unique_lock lk(mu_);
  if (stop.load()) return false;
  if (d.count() <= 0) return true;
  Sleeper me;
  const std::pair<std::int64_t, std::uint64_t> key{now_us_ + d.count() * 1000, next_id_++};
  sleepers_.emplace(key, &me);
  advance_locked();
  while (!me.due) {
    if (stop.load()) {  // nobody signals a stop: look every few real milliseconds
      sleepers_.erase(key);
      return false;
    }
    me.cv.wait_for(lk, std::chrono::milliseconds(10));
  }
  return !stop.load();
}

void VirtualClock::advance_locked() {
  const auto asleep = static_cast<std::int64_t>(sleepers_.size());
  if (sleepers_.empty() || counted_ - waiting_ - asleep > 0) return;
  now_us_ = std::max(now_us_, sleepers_.begin()->first.first);
  // Everyone due at the new time is awake (working) from here, so the next
  // jump waits for them to sleep again.
  while (!sleepers_.empty() && sleepers_.begin()->first.first <= now_us_) {
    Sleeper* s = sleepers_.begin()->second;
    sleepers_.erase(sleepers_.begin());
    s->due = true;
    s->cv.notify_one();
  }
}

Clock::Ticket VirtualClock::counted() {
  std::lock_guard lk(mu_);
  ++counted_;
  return Ticket(static_cast<void*>(this), [self = shared_from_this()](void*) {
    std::lock_guard l(self->mu_);
    --self->counted_;
    self->advance_locked();
  });
}

void VirtualClock::run_threads(std::size_t n, const std::function<void(std::size_t)>& f) {
  if (n == 0) return;
  std::size_t running = n;
  {
    std::lock_guard lk(mu_);
    counted_ += static_cast<std::int64_t>(n);
    ++waiting_;
  }
  Clock::run_threads(n, [&](std::size_t i) {
    f(i);
    std::lock_guard lk(mu_);
    --counted_;
    if (--running == 0) --waiting_;  // the caller works again from this instant
    advance_locked();
  });
}

}  // namespace crucible::testing
