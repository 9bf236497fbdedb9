// Where a JSON-RPC node is and how long a call may take (RpcClient's
// options, chain/internal_include/crucible/chain/rpc_client.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace crucible::chain {

struct RpcOptions {
  std::string url = "http://127.0.0.1:8545";
  std::chrono::milliseconds call_timeout{10'000};  // whole call, retries included
  std::chrono::milliseconds connect_timeout{3'000};
  int max_attempts = 4;
  std::chrono::milliseconds backoff_initial{100};
  std::chrono::milliseconds backoff_max{2'000};
  std::size_t max_response_bytes = 32u << 20;
};

}  // namespace crucible::chain
