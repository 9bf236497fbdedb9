#include "crucible/common/clock.h"

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

std::shared_ptr<Clock> system_clock() {
  static const auto clock = std::make_shared<SystemClock>();
  return clock;
}

}  // namespace crucible
