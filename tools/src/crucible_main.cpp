// The `crucible` admin CLI: config, demo, and (as they are built) wallet,
// chain, data and scores.
#include <CLI/CLI.hpp>

#include "crucible/cli/commands.h"
#include "crucible/cli/node_config.h"
#include "crucible/common/version.h"

extern char** environ;

int main(int argc, char** argv) {
  using namespace crucible;
  return cli::guarded_main([&] {
    CLI::App app{"crucible: tools for a permissionless LLM-training network", "crucible"};
    app.set_version_flag("-V,--version", version_line("crucible"));
    app.require_subcommand(1);
    int exit_code = cli::kExitOk;
    cli::add_config_commands(app, exit_code, environ);
    cli::add_network_commands(app, exit_code, environ);
    cli::add_demo_command(app, exit_code);
    cli::add_model_commands(app, exit_code);
    cli::add_wallet_commands(app, exit_code);
    cli::add_data_commands(app, exit_code);
    cli::add_scores_command(app, exit_code);
    cli::add_chain_commands(app, exit_code, environ);
    cli::add_status_command(app, exit_code, environ);
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      int rc = app.exit(e);
      return rc == 0 ? cli::kExitOk : cli::kExitUsage;
    }
    return exit_code;
  });
}
