// A small HTTP endpoint (Boost.Beast) serving the process's metrics in the
// Prometheus text format at GET /metrics, and GET /healthz. Read-only; one
// request per connection; bounded request size and idle time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "crucible/common/status.h"

namespace crucible::miner {

class MetricsServer {
 public:
  // Listens on bind:port (port 0: any free port) and serves on its own thread.
  static Result<std::unique_ptr<MetricsServer>> start(const std::string& bind, std::uint16_t port);
  ~MetricsServer();  // stops and joins
  std::uint16_t port() const;

 private:
  MetricsServer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace crucible::miner
