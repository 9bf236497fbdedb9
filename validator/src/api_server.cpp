#include "crucible/validator/api_server.h"

namespace crucible::validator {

struct ApiServer::Impl {
  std::unique_ptr<http::Server> server;
};

ApiServer::ApiServer() : impl_(std::make_unique<Impl>()) {}
ApiServer::~ApiServer() = default;
std::uint16_t ApiServer::port() const { return impl_->server->port(); }

Result<std::unique_ptr<ApiServer>> ApiServer::start(const ApiOptions& options, storage::StateStore& state,
                                                    const ScoringParams& scoring) {
  std::unique_ptr<ApiServer> s(new ApiServer());
  http::ServerOptions o;
  o.bind = options.bind;
  o.port = options.port;
  o.max_connections = options.max_connections;
  o.max_connections_per_client = options.max_connections_per_client;
  o.idle_timeout_s = options.idle_timeout_s;
  o.header_timeout_s = options.header_timeout_s;
  o.max_header_bytes = options.max_header_bytes;
  o.threads = options.threads;
  o.name = "crucible-validator";
  CRUCIBLE_ASSIGN_OR_RETURN(s->impl_->server, http::Server::start(o, [&state, scoring](const http::Request& r) {
                              return handle_get(state, scoring, r.target);
                            }));
  return s;
}

}  // namespace crucible::validator
