// Subcommands of the `crucible` admin CLI, one registration function per group.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace crucible::cli {

// Each registers its subcommands on `app`; the chosen one writes its exit code.
void add_config_commands(CLI::App& app, int& exit_code, char** envp);
void add_network_commands(CLI::App& app, int& exit_code, char** envp);
void add_demo_command(CLI::App& app, int& exit_code);
void add_model_commands(CLI::App& app, int& exit_code);
void add_wallet_commands(CLI::App& app, int& exit_code);
void add_data_commands(CLI::App& app, int& exit_code);
void add_scores_command(CLI::App& app, int& exit_code);
void add_chain_commands(CLI::App& app, int& exit_code, char** envp);
void add_chain_ops_commands(CLI::App& chain_group, int& exit_code, char** envp);
void add_preflight_command(CLI::App& chain_group, int& exit_code, char** envp);
void add_status_command(CLI::App& app, int& exit_code, char** envp);

// The anvil binary: $CRUCIBLE_ANVIL, else the checkout's tools/node_modules/.bin/anvil.
std::string find_anvil();

}  // namespace crucible::cli
