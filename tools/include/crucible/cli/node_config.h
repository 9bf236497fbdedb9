// What a node's config file holds, and how a binary fills it: one place per
// binary (architecture.md), defaults < file < environment < flags.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "crucible/chain/chain_options.h"
#include "crucible/chain/keys.h"
#include "crucible/common/config.h"
#include "crucible/common/log.h"
#include "crucible/common/model_config.h"
#include "crucible/miner/miner_options.h"
#include "crucible/protocol/options.h"
#include "crucible/storage/storage_options.h"
#include "crucible/validator/validator_options.h"

namespace crucible::cli {

enum class Role { kAny, kMiner, kValidator };
std::string_view role_name(Role role) noexcept;

// Which network the node joins (docs/network.md).
struct NetworkOptions {
  std::string manifest;  // a network manifest, loaded as the first config layer
  std::string name;      // the network's name (the manifest sets it)
};

struct NodeConfig {
  log::LogOptions log;
  NetworkOptions network;
  protocol::Options protocol;
  chain::ChainOptions chain;
  storage::StorageOptions storage;
  model::ModelConfig model;  // miners and validators
  miner::MinerOptions miner;
  validator::ValidatorOptions validator;
  validator::ApiOptions api;
};

// Binds every section that `role` reads; kAny binds the union (for `config check`).
config::Schema make_schema(Role role, NodeConfig& config);

// Flags every binary shares.
struct CommonFlags {
  std::vector<std::string> config_files;
  std::vector<std::string> sets;  // "key=value"
  std::string log_level;
  std::string log_format;
  std::string network;  // --network FILE: network.manifest
  // A binary's own shortcut flags (ShortcutFlag): --set under another
  // name, applied last, checked by the schema like any other layer.
  struct Shortcut {
    std::string key, value, flag;
  };
  std::vector<Shortcut> shortcuts;
};
void add_common_flags(CLI::App& app, CommonFlags& flags);

// A binary's own flag that sets one config key: `--ranks N` is `--set miner.ranks=N`.
struct ShortcutFlag {
  std::string flag, key, description;
};
void add_shortcut_flag(CLI::App& app, CommonFlags& flags, const ShortcutFlag& shortcut);

// Loads config for `role` from flags, the CRUCIBLE_* variables of `envp` and
// the file named by --config, in that precedence. With a network manifest
// (network.manifest, --network), the manifest is the first file, and a
// later layer that sets one of its keys to another value is an error
// naming each such key. Storage credentials left
// empty by all of those fall back to AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.
Status load_node_config(Role role, const CommonFlags& flags, char** envp, NodeConfig& config,
                        config::Origins* origins = nullptr);

// Applies config.log to the process logger (text on a terminal, JSON otherwise).
void start_logging(const NodeConfig& config);

// Runs `body`, turning an escaped exception into a logged error and exit code
// 1. Every binary runs under it, with SIGPIPE ignored.
int guarded_main(const std::function<int()>& body);

// Exit codes shared by the binaries (docs/quickstart.md, "Exit codes"):
// 2 is what the operator must fix before another try can succeed, so a
// service manager stops restarting (systemd's RestartPreventExitStatus=2);
// 1 is a failure outside the command that a later try may not meet.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;  // bad flags, config, files or password

// The exit code for a command that ends with `st`: 0 when ok; kExitUsage
// for invalid_argument, out_of_range, not_found, already_exists,
// permission_denied, unauthenticated (a wrong password), unimplemented (an
// unsupported format) and data_loss (a corrupt file of the operator's);
// kExitFailure otherwise (the chain or a store unavailable, a deadline, a
// transaction refused, a key not registered yet).
int exit_code_of(const Status& st);

// What a node checks of its data before anything else (and `config check`
// with a role): the data folder of `role` opens, fits the model (vocabulary,
// samples) and, when pinned, is the network's (protocol.dataset_sha256).
// The error names the key.
Status check_node_data(const NodeConfig& config, Role role);

}  // namespace crucible::cli

namespace crucible::cli {

// The flags of crucible-miner and crucible-validator.
struct NodeArgs {
  CommonFlags common;
  std::string key_file;  // keystore file of the node's wallet
  std::string password_file;
};

// The node's key: the keystore file --key, its password from
// --password-file, $CRUCIBLE_WALLET_PASSWORD or a prompt. Logs what went
// wrong and returns kExitUsage as the error's exit code.
std::optional<chain::PrivateKey> open_node_wallet(const NodeArgs& args, int& exit_code);
// SIGTERM and SIGINT set *stop (a clean stop between steps).
void stop_on_signals(std::atomic<bool>* stop);

// Sets up `app` for a node binary (--version, common flags, --key), parses
// argv, loads the config and starts logging. Returns an exit code when the
// process should stop now (--help, --version, bad flags or config).
std::optional<int> start_node(CLI::App& app, Role role, int argc, char** argv, char** envp, NodeArgs& args,
                              NodeConfig& config, std::span<const ShortcutFlag> shortcuts = {});

// What one node binary adds to the common start-up.
struct NodeStartOptions {
  std::span<const ShortcutFlag> shortcuts;
  // True when this process signs nothing (a miner's worker rank): it skips
  // the wallet, the data check and the signal handlers.
  std::function<bool(const NodeConfig&)> keyless;
};

// All a node binary does before it builds its node: start_node, the
// wallet, check_node_data, and SIGTERM/SIGINT to *stop. Returns the exit
// code when the process must end now (having logged why); else `config`
// is set, and `key` too unless start.keyless(config).
std::optional<int> prepare_node(CLI::App& app, Role role, int argc, char** argv, char** envp, NodeConfig& config,
                                std::optional<chain::PrivateKey>& key, std::atomic<bool>* stop,
                                const NodeStartOptions& start = {});

// Logs "the <role> <what>" with the error and returns its exit code
// (exit_code_of): how a node binary ends on a failed step.
int node_failed(Role role, std::string_view what, const Status& st);

}  // namespace crucible::cli
