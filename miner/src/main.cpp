// crucible-miner --config F --key KEYFILE
#include <CLI/CLI.hpp>

#include "crucible/cli/node_config.h"
#include "crucible/common/log.h"

extern char** environ;

int main(int argc, char** argv) {
  using namespace crucible;
  return cli::guarded_main([&] {
    CLI::App app{"crucible-miner: trains on its assigned data and publishes compressed pseudo-gradients",
                 "crucible-miner"};
    cli::NodeArgs args;
    cli::NodeConfig config;
    if (auto rc = cli::start_node(app, cli::Role::kMiner, argc, argv, environ, args, config)) return *rc;
    log::error("the miner node is not built yet: only configuration and logging work in this version");
    return cli::kExitFailure;
  });
}
