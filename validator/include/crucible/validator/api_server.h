// The read-only HTTP score API (Boost.Beast, asynchronous, one thread):
//   GET /v1/scores            every uid: final score, rating mu/sigma, BMA, sync, weight, last evaluated window
//   GET /v1/miners/{uid}      one uid's score and its per-window history
//   GET /v1/windows/{w}       a window: evaluated uids, losses, rejections, aggregate members
//   GET /v1/weights           the last weights post (tx hash)
//   GET /healthz, GET /metrics (Prometheus)
// JSON errors: 404 unknown path, 400 bad parameter, 405 other methods, 413
// a request with a body, 503 over the connection limit. Limits on the
// request head, connections and idle time. It never writes the state.
#pragma once

#include <cstdint>
#include <memory>

#include "crucible/common/status.h"
#include "crucible/storage/state_store.h"
#include "crucible/validator/gauntlet.h"
#include "crucible/validator/validator_options.h"

namespace crucible::validator {

class ApiServer {
 public:
  // `scoring`: the node's [protocol] scoring parameters (weights are derived
  // from the stored scores with them).
  static Result<std::unique_ptr<ApiServer>> start(const ApiOptions& options, storage::StateStore& state,
                                                  const ScoringParams& scoring);
  ~ApiServer();  // stops and joins
  std::uint16_t port() const;

 private:
  ApiServer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The JSON body and status for a GET of `target`: the routing, apart from the
// network, for tests.
struct ApiResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};
ApiResponse handle_get(storage::StateStore& state, const ScoringParams& scoring, std::string_view target);

}  // namespace crucible::validator
