// crucible-validator --config F [--config F2 ...] --key KEYFILE [--password-file P]
#include <csignal>

#include <CLI/CLI.hpp>

#include "crucible/chain/keystore.h"
#include "crucible/cli/node_config.h"
#include "crucible/cli/password.h"
#include "crucible/common/log.h"
#include "crucible/validator/api_server.h"
#include "crucible/validator/node.h"

extern char** environ;

namespace {
std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop.store(true); }
}  // namespace

int main(int argc, char** argv) {
  using namespace crucible;
  return cli::guarded_main([&] {
    CLI::App app{"crucible-validator: scores miners' updates, aggregates them and posts weights", "crucible-validator"};
    cli::NodeArgs args;
    cli::NodeConfig config;
    std::string password_file;
    app.add_option("--password-file", password_file,
                   "File holding the keystore password (else $CRUCIBLE_WALLET_PASSWORD, else a prompt)");
    if (auto rc = cli::start_node(app, cli::Role::kValidator, argc, argv, environ, args, config)) return *rc;
    if (args.key_file.empty()) {
      log::error("--key KEYFILE is required: the validator signs its weights (crucible wallet new creates one)");
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

    validator::ValidatorNodeOptions options{config.protocol, config.chain,     config.storage,
                                            config.model,    config.validator, config.api};
    auto node = validator::ValidatorNode::create(options, *key);
    if (!node.is_ok()) {
      log::error("the validator cannot start", {{"error", node.status().to_string()}});
      return node.status().code() == StatusCode::kInvalidArgument ? cli::kExitUsage : cli::kExitFailure;
    }
    std::unique_ptr<validator::ApiServer> api;
    if (config.api.port != 0) {
      auto s = validator::ApiServer::start(config.api, (*node)->state());
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
      return cli::kExitFailure;
    }
    return cli::kExitOk;
  });
}
