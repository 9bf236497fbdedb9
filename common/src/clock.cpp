#include "crucible/common/clock.h"

#include <thread>
#include <vector>

#include "crucible/common/retry.h"

namespace crucible {
namespace {

class SystemClock final : public Clock {
 public:
  double unix_seconds() override { return crucible::unix_seconds(); }
  bool sleep(std::chrono::milliseconds d, const std::atomic<bool>& stop) override {
    return sleep_unless_stopped(d, stop);
  }
};

}  // namespace

void Clock::run_threads(std::size_t n, const std::function<void(std::size_t)>& f) {
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (std::size_t i = 0; i < n; ++i) threads.emplace_back(f, i);
  for (auto& t : threads) t.join();
}

std::shared_ptr<Clock> system_clock() {
  static const auto clock = std::make_shared<SystemClock>();
  return clock;
}

}  // namespace crucible
