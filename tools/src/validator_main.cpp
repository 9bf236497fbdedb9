// crucible-validator --config F [--config F2 ...] --key KEYFILE [--password-file P]
#include <CLI/CLI.hpp>

#include "crucible/cli/node_config.h"
#include "crucible/cli/node_io.h"
#include "crucible/common/log.h"
#include "crucible/validator/api_server.h"
#include "crucible/validator/node.h"

extern char** environ;

namespace {
std::atomic<bool> g_stop{false};
}  // namespace

int main(int argc, char** argv) {
  using namespace crucible;
  return cli::guarded_main([&] {
    CLI::App app{"crucible-validator: scores miners' updates, aggregates them and posts weights", "crucible-validator"};
    constexpr auto kRole = cli::Role::kValidator;
    cli::NodeConfig config;
    std::optional<chain::PrivateKey> key;
    if (auto rc = cli::prepare_node(app, kRole, argc, argv, environ, config, key, &g_stop)) return *rc;

    validator::ValidatorNodeOptions options{config.protocol, config.chain,     config.storage,
                                            config.model,    config.validator, config.api};
    // Every call on a peer's store ends within validator.fetch_deadline_s.
    const auto peer_deadline =
        std::chrono::milliseconds(static_cast<std::int64_t>(config.validator.fetch_deadline_s * 1000));
    auto io = cli::make_node_io(config, *key, peer_deadline);
    if (!io.is_ok()) return cli::node_failed(kRole, "cannot start", io.status());
    auto node = validator::ValidatorNode::create(options, *key, std::move(*io));
    if (!node.is_ok()) return cli::node_failed(kRole, "cannot start", node.status());
    std::unique_ptr<validator::ApiServer> api;
    if (config.api.port != 0) {
      auto s = validator::ApiServer::start(config.api, (*node)->state(), config.protocol.scoring);
      if (!s.is_ok()) {
        log::error("score API", {{"error", s.status().to_string()}});
        return cli::kExitFailure;
      }
      api = std::move(*s);
      log::info("score API listening", {{"url", fmt::format("http://{}:{}/v1/scores", config.api.bind, api->port())}});
    }
    Status st = (*node)->run(g_stop);
    return st.is_ok() ? cli::kExitOk : cli::node_failed(kRole, "stopped on an error", st);
  });
}
