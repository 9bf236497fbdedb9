// crucible-miner --config F [--config F2 ...] --key KEYFILE [--password-file P]
#include <csignal>

#include <CLI/CLI.hpp>

#include "crucible/chain/keystore.h"
#include "crucible/cli/node_config.h"
#include "crucible/cli/password.h"
#include "crucible/common/log.h"
#include "crucible/miner/metrics_server.h"
#include "crucible/miner/node.h"

extern char** environ;

namespace {
std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop.store(true); }
}  // namespace

int main(int argc, char** argv) {
  using namespace crucible;
  return cli::guarded_main([&] {
    CLI::App app{"crucible-miner: trains on its assigned data and publishes compressed pseudo-gradients",
                 "crucible-miner"};
    cli::NodeArgs args;
    cli::NodeConfig config;
    std::string password_file;
    app.add_option("--password-file", password_file,
                   "File holding the keystore password (else $CRUCIBLE_WALLET_PASSWORD, else a prompt)");
    if (auto rc = cli::start_node(app, cli::Role::kMiner, argc, argv, environ, args, config)) return *rc;
    if (args.key_file.empty()) {
      log::error("--key KEYFILE is required: the miner signs its uploads (crucible wallet new creates one)");
      return cli::kExitUsage;
    }
    auto text = chain::read_secret_file(args.key_file);
    if (!text.is_ok()) {
      log::error("cannot read the key file", {{"error", text.status().to_string()}});
      return cli::kExitUsage;
    }
    auto password = cli::obtain_password(password_file, false);
    if (!password.is_ok()) {
      log::error("no keystore password", {{"error", password.status().to_string()}});
      return cli::kExitUsage;
    }
    auto key = chain::decrypt_keystore(*text, *password);
    if (!key.is_ok()) {
      log::error("cannot decrypt the key file", {{"error", key.status().to_string()}});
      return cli::kExitUsage;
    }

    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);

    std::unique_ptr<miner::MetricsServer> metrics_server;
    if (config.miner.metrics_port != 0) {
      auto s = miner::MetricsServer::start(config.miner.metrics_bind, config.miner.metrics_port);
      if (!s.is_ok()) {
        log::error("metrics endpoint", {{"error", s.status().to_string()}});
        return cli::kExitFailure;
      }
      metrics_server = std::move(*s);
      log::info("metrics endpoint listening",
                {{"url", fmt::format("http://{}:{}/metrics", config.miner.metrics_bind, metrics_server->port())}});
    }

    miner::MinerNodeOptions options{config.protocol, config.chain, config.storage, config.model, config.miner};
    auto node = miner::MinerNode::create(options, *key);
    if (!node.is_ok()) {
      log::error("the miner cannot start", {{"error", node.status().to_string()}});
      return node.status().code() == StatusCode::kInvalidArgument ? cli::kExitUsage : cli::kExitFailure;
    }
    Status st = (*node)->run(g_stop);
    if (!st.is_ok()) {
      log::error("the miner stopped on an error", {{"error", st.to_string()}});
      return cli::kExitFailure;
    }
    return cli::kExitOk;
  });
}
