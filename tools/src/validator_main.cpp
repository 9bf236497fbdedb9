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
    cli::NodeArgs args;
    cli::NodeConfig config;
    if (auto rc = cli::start_node(app, cli::Role::kValidator, argc, argv, environ, args, config)) return *rc;
    int rc = cli::kExitOk;
    auto key = cli::open_node_wallet(args, rc);
    if (!key) return rc;
    if (Status data = cli::check_node_data(config, cli::Role::kValidator); !data.is_ok()) {
      log::error("the validator cannot start", {{"error", data.to_string()}});
      return cli::exit_code_of(data);
    }
    cli::stop_on_signals(&g_stop);

    validator::ValidatorNodeOptions options{config.protocol, config.chain,     config.storage,
                                            config.model,    config.validator, config.api};
    // Every call on a peer's store ends within validator.fetch_deadline_s.
    const auto peer_deadline =
        std::chrono::milliseconds(static_cast<std::int64_t>(config.validator.fetch_deadline_s * 1000));
    auto io = cli::make_node_io(config, *key, peer_deadline);
    if (!io.is_ok()) {
      log::error("the validator cannot start", {{"error", io.status().to_string()}});
      return cli::exit_code_of(io.status());
    }
    auto node = validator::ValidatorNode::create(options, *key, std::move(*io));
    if (!node.is_ok()) {
      log::error("the validator cannot start", {{"error", node.status().to_string()}});
      return cli::exit_code_of(node.status());
    }
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
    if (!st.is_ok()) {
      log::error("the validator stopped on an error", {{"error", st.to_string()}});
      return cli::exit_code_of(st);
    }
    return cli::kExitOk;
  });
}
