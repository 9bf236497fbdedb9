// Time as a node sees it, passed in rather than read from the system, so
// tests can run nodes on a clock of their own (the Psyche coordinator takes
// its timestamp as an argument for the same reason).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>

namespace crucible {

class Clock {
 public:
  // Held by a thread while the clock counts it (below); empty for the
  // system clock.
  using Ticket = std::shared_ptr<void>;

  virtual ~Clock() = default;
  // Wall time, Unix seconds.
  virtual double unix_seconds() = 0;
  // Waits d, waking within a quarter second of *stop turning true; false
  // when stopped before the time was up.
  virtual bool sleep(std::chrono::milliseconds d, const std::atomic<bool>& stop) = 0;

  // For a clock on virtual time (the tests' VirtualClock), which moves only
  // while every thread it counts sleeps in sleep(). A thread that starts a
  // long-lived thread sleeping on this clock takes a counted() ticket for
  // it (the new thread keeps it until it ends: time waits for it while it
  // works). The system clock counts nothing and returns an empty ticket.
  virtual Ticket counted() { return nullptr; }
  // Runs f(0) .. f(n - 1), each on a thread of its own, and returns when
  // all have ended. A clock on virtual time counts those threads and not
  // the caller while it waits for them, and counts the caller again in the
  // same instant the last one ends.
  virtual void run_threads(std::size_t n, const std::function<void(std::size_t)>& f);
};

// The system's clock (std::chrono::system_clock, real sleeps).
std::shared_ptr<Clock> system_clock();

}  // namespace crucible
