// Time as a node sees it, passed in rather than read from the system, so
// tests can run nodes on a clock of their own (the Psyche coordinator takes
// its timestamp as an argument for the same reason).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>

namespace crucible {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall time, Unix seconds.
  virtual double unix_seconds() = 0;
  // Waits d, waking within a quarter second of *stop turning true; false
  // when stopped before the time was up.
  virtual bool sleep(std::chrono::milliseconds d, const std::atomic<bool>& stop) = 0;
};

// The system's clock (std::chrono::system_clock, real sleeps).
std::shared_ptr<Clock> system_clock();

}  // namespace crucible
