// The read-only HTTP score API (Boost.Beast, asynchronous, one thread):
//   GET /v1/scores            every uid: final score, rating mu/sigma, BMA, sync, weight, last evaluated window
//   GET /v1/miners/{uid}      one uid's score and its per-window history
//   GET /v1/windows/{w}       a window: evaluated uids, losses, rejections, aggregate members
//   GET /v1/weights           the last weights post (tx hash)
//   GET /healthz, GET /metrics (Prometheus)
// JSON errors: 404 unknown path, 400 bad parameter, and the server's own
// (common/http_server.h: 405, 413, 431, 503; ETag and If-None-Match on every
// route). It never writes the state.
#pragma once

#include <cstdint>
#include <memory>

#include "crucible/common/http_server.h"
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

// The JSON body, status and caching for a GET of `target`: the routing, apart
// from the network, for tests.
using ApiResponse = http::Response;
ApiResponse handle_get(storage::StateStore& state, const ScoringParams& scoring, std::string_view target);

}  // namespace crucible::validator
