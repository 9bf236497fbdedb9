// crucible-miner --config F [--config F2 ...] --key KEYFILE [--password-file P]
#include <CLI/CLI.hpp>

#include "crucible/cli/node_config.h"
#include "crucible/cli/node_io.h"
#include "crucible/common/log.h"
#include "crucible/miner/metrics_server.h"
#include "crucible/miner/node.h"

extern char** environ;

namespace {
std::atomic<bool> g_stop{false};
}  // namespace

int main(int argc, char** argv) {
  using namespace crucible;
  return cli::guarded_main([&] {
    CLI::App app{"crucible-miner: trains on its assigned data and publishes compressed pseudo-gradients",
                 "crucible-miner"};
    constexpr auto kRole = cli::Role::kMiner;
    cli::NodeConfig config;
    std::optional<chain::PrivateKey> key;
    if (auto rc = cli::prepare_node(app, kRole, argc, argv, environ, config, key, &g_stop)) return *rc;

    std::unique_ptr<miner::MetricsServer> metrics_server;
    if (config.miner.metrics_port != 0) {
      http::ServerOptions o;
      o.bind = config.miner.metrics_bind;
      o.port = config.miner.metrics_port;
      o.max_connections = config.miner.metrics_max_connections;
      o.max_connections_per_client = config.miner.metrics_max_connections_per_client;
      o.header_timeout_s = config.miner.metrics_header_timeout_s;
      auto s = miner::MetricsServer::start(o);
      if (!s.is_ok()) {
        log::error("metrics endpoint", {{"error", s.status().to_string()}});
        return cli::kExitFailure;
      }
      metrics_server = std::move(*s);
      log::info("metrics endpoint listening",
                {{"url", fmt::format("http://{}:{}/metrics", config.miner.metrics_bind, metrics_server->port())}});
    }

    miner::MinerNodeOptions options{config.protocol, config.chain, config.storage, config.model, config.miner};
    auto io = cli::make_node_io(config, *key, config.storage.retry_policy().deadline);
    if (!io.is_ok()) return cli::node_failed(kRole, "cannot start", io.status());
    auto node = miner::MinerNode::create(options, *key, std::move(*io));
    if (!node.is_ok()) return cli::node_failed(kRole, "cannot start", node.status());
    if (metrics_server) metrics_server->set_uid((*node)->uid());
    Status st = (*node)->run(g_stop);
    return st.is_ok() ? cli::kExitOk : cli::node_failed(kRole, "stopped on an error", st);
  });
}
