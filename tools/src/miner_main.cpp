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
    cli::NodeArgs args;
    cli::NodeConfig config;
    if (auto rc = cli::start_node(app, cli::Role::kMiner, argc, argv, environ, args, config)) return *rc;
    int rc = cli::kExitOk;
    auto key = cli::open_node_wallet(args, rc);
    if (!key) return rc;
    if (Status data = cli::check_node_data(config, cli::Role::kMiner); !data.is_ok()) {
      log::error("the miner cannot start", {{"error", data.to_string()}});
      return cli::exit_code_of(data);
    }
    cli::stop_on_signals(&g_stop);

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
    if (!io.is_ok()) {
      log::error("the miner cannot start", {{"error", io.status().to_string()}});
      return cli::exit_code_of(io.status());
    }
    auto node = miner::MinerNode::create(options, *key, std::move(*io));
    if (!node.is_ok()) {
      log::error("the miner cannot start", {{"error", node.status().to_string()}});
      return cli::exit_code_of(node.status());
    }
    if (metrics_server) metrics_server->set_uid((*node)->uid());
    Status st = (*node)->run(g_stop);
    if (!st.is_ok()) {
      log::error("the miner stopped on an error", {{"error", st.to_string()}});
      return cli::exit_code_of(st);
    }
    return cli::kExitOk;
  });
}
