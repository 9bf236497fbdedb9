// `crucible demo`: the local network (chain, store, miners, validator).
#include <fmt/format.h>

#include "crucible/cli/commands.h"
#include "crucible/cli/node_config.h"

namespace crucible::cli {

void add_demo_command(CLI::App& app, int& exit_code) {
  CLI::App* cmd = app.add_subcommand("demo", "Run the local network demo: chain, object store, miners, validator");
  cmd->callback([&exit_code] {
    // Placeholder until the network issue lands; it says plainly what is missing.
    fmt::print(
        "crucible demo: the local network is not built yet.\n"
        "Built so far: the foundation (config, logging, metrics, error type, CLI).\n"
        "Not built yet: the local chain (chain/), object and state stores (storage/),\n"
        "the miner node (miner/) and the validator node (validator/).\n"
        "Try: build/bin/crucible config check configs/miner.example.toml\n");
    exit_code = kExitOk;
  });
}

}  // namespace crucible::cli
