// JSON-RPC 2.0 over HTTP (libcurl): single calls and batches, a deadline
// per call covering every retry, bounded retries with jittered exponential
// backoff on transport errors, 429 and 5xx, a cap on response size, and
// revert data decoded into a readable error.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "crucible/chain/rpc_options.h"
#include "crucible/common/status.h"

namespace crucible::chain {

struct RpcRequest {
  std::string method;
  nlohmann::json params = nlohmann::json::array();
};

// An RPC-level error from the node, kept for callers that branch on it.
struct RpcErrorInfo {
  std::int64_t code = 0;
  std::string message;
};

class RpcClient {
 public:
  explicit RpcClient(RpcOptions options);
  ~RpcClient();
  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;

  // The "result" of one call. Errors: unavailable / deadline_exceeded for
  // transport trouble (after the retries), failed_precondition for a revert
  // ("execution reverted: <reason>"), and a code matching the RPC error otherwise.
  Result<nlohmann::json> call(std::string_view method, nlohmann::json params = nlohmann::json::array());

  // One HTTP round trip for many calls; each gets its own Result. The outer
  // Result fails only when the round trip itself fails.
  Result<std::vector<Result<nlohmann::json>>> batch(const std::vector<RpcRequest>& requests);

  const RpcOptions& options() const noexcept { return options_; }

  // Maps a JSON-RPC error object to a Status (exposed for tests).
  static Status error_status(std::string_view method, const nlohmann::json& error);

 private:
  Result<std::string> post(std::string_view what, const std::string& body);

  RpcOptions options_;
  std::mutex mu_;  // one curl handle, reused (keep-alive); calls are serialised
  void* curl_ = nullptr;
  std::uint64_t next_id_ = 1;
};

}  // namespace crucible::chain
