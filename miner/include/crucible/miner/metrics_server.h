// The miner's HTTP endpoint, on the codebase's one server
// (common/http_server.h), read-only on 127.0.0.1 by default:
//   GET /metrics  the process's metrics, Prometheus text format
//   GET /healthz  JSON: role, version, uid, window, global step, last
//                 revealed window, last loss and throughput, uploads by result
//   GET /         the same facts as a small page for a person (refreshes itself)
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "crucible/common/http_server.h"
#include "crucible/common/status.h"

namespace crucible::miner {

class MetricsServer {
 public:
  // Listens on bind:port (port 0: any free port) with the limits of
  // `options` (its name and threads are the endpoint's own) and serves on
  // its own thread.
  static Result<std::unique_ptr<MetricsServer>> start(http::ServerOptions options);
  ~MetricsServer();  // stops and joins
  std::uint16_t port() const;
  // The uid, once the node has found it on the chain (null before).
  void set_uid(std::uint16_t uid);

 private:
  MetricsServer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace crucible::miner
