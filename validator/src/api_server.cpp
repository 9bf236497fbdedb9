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
  CRUCIBLE_ASSIGN_OR_RETURN(s->impl_->server, http::Server::start(options, [&state, scoring](const http::Request& r) {
                              return handle_get(state, scoring, r.target);
                            }));
  return s;
}

}  // namespace crucible::validator
