#include "crucible/cli/node_config.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "crucible/chain/keystore.h"
#include "crucible/cli/network_manifest.h"
#include "crucible/cli/password.h"
#include "crucible/common/http_server.h"
#include "crucible/common/log_options.h"
#include "crucible/common/metrics.h"
#include "crucible/common/version.h"
#include "crucible/protocol/network_data.h"

namespace crucible::cli {

std::string_view role_name(Role role) noexcept {
  switch (role) {
    case Role::kAny:
      return "any";
    case Role::kMiner:
      return "miner";
    case Role::kValidator:
      return "validator";
  }
  return "?";
}

config::Schema make_schema(Role role, NodeConfig& config) {
  config::Schema schema;
  log::bind_options(schema, config.log);
  schema.add_string("network.manifest", &config.network.manifest,
                    "A network manifest (crucible network init writes one): its values are the first config layer "
                    "and no other layer may change them.");
  schema.add_string("network.name", &config.network.name, "The network's name (its manifest sets it).");
  bind_options(schema, config.protocol);
  chain::bind_options(schema, config.chain);
  storage::bind_options(schema, config.storage);
  model::bind_options(schema, config.model);
  if (role == Role::kMiner || role == Role::kAny) miner::bind_options(schema, config.miner);
  if (role == Role::kValidator || role == Role::kAny) {
    validator::bind_options(schema, config.validator);
    validator::bind_options(schema, config.api);
  }
  return schema;
}

void add_common_flags(CLI::App& app, CommonFlags& flags) {
  app.add_option("-c,--config", flags.config_files,
                 "TOML config file; repeat to layer files (network, model, node), later ones win")
      ->check(CLI::ExistingFile);
  app.add_option("--set", flags.sets, "Override a config key: --set section.key=value (repeatable)")
      ->type_name("KEY=VALUE");
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error or off (log.level)");
  app.add_option("--log-format", flags.log_format, "auto, text or json (log.format)");
  app.add_option("--network", flags.network, "The network's manifest (network.manifest)")->check(CLI::ExistingFile);
}

void add_shortcut_flag(CLI::App& app, CommonFlags& flags, const ShortcutFlag& shortcut) {
  app.add_option_function<std::string>(
         shortcut.flag,
         [&flags, shortcut](const std::string& value) {
           flags.shortcuts.push_back({shortcut.key, value, shortcut.flag});
         },
         fmt::format("{} ({})", shortcut.description, shortcut.key))
      ->type_name("VALUE");
}

namespace {

Status load_layers(Role role, const CommonFlags& flags, char** envp, const std::string& manifest, NodeConfig& config,
                   config::Origins* origins) {
  config = NodeConfig{};
  config::Schema schema = make_schema(role, config);
  config::LoadInputs inputs;
  if (!manifest.empty()) inputs.files.push_back(manifest);
  inputs.files.insert(inputs.files.end(), flags.config_files.begin(), flags.config_files.end());
  inputs.environment = config::crucible_environment(envp);
  for (const std::string& set : flags.sets) {
    auto eq = set.find('=');
    if (eq == std::string::npos || eq == 0) {
      return invalid_argument("--set '{}': expected KEY=VALUE", set);
    }
    inputs.flags.push_back({set.substr(0, eq), set.substr(eq + 1), ""});
  }
  // Shortcut flags are --set under another name, applied last.
  if (!flags.log_level.empty()) inputs.flags.push_back({"log.level", flags.log_level, "--log-level"});
  if (!flags.log_format.empty()) inputs.flags.push_back({"log.format", flags.log_format, "--log-format"});
  if (!flags.network.empty()) inputs.flags.push_back({"network.manifest", flags.network, "--network"});
  for (const auto& s : flags.shortcuts) inputs.flags.push_back({s.key, s.value, s.flag});
  return config::load(schema, inputs, origins);
}

}  // namespace

Status load_node_config(Role role, const CommonFlags& flags, char** envp, NodeConfig& config,
                        config::Origins* origins) {
  config::Origins own;
  CRUCIBLE_RETURN_IF_ERROR(load_layers(role, flags, envp, "", config, &own));
  if (const std::string file = config.network.manifest; !file.empty()) {
    config::Origins manifest_origins;
    CRUCIBLE_ASSIGN_OR_RETURN(NetworkManifest manifest, load_manifest(file, &manifest_origins));
    CRUCIBLE_RETURN_IF_ERROR(load_layers(role, flags, envp, file, config, &own));
    config::Schema schema = make_schema(role, config);
    const auto conflicts = manifest_conflicts(manifest, manifest_origins, schema, own);
    if (!conflicts.empty()) {
      return invalid_argument(
          "this config differs from the network manifest {} (remove these keys or use the "
          "network's values):\n{}",
          file, fmt::join(conflicts, "\n"));
    }
  }
  if (origins != nullptr) *origins = own;
  // The rank keys hold together (miner_options.h); each alone the schema checks.
  if (role == Role::kMiner || role == Role::kAny) CRUCIBLE_RETURN_IF_ERROR(miner::check_ranks(config.miner));
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    auto take = [&](std::string_view name, std::string& field) {
      if (field.empty() && entry.starts_with(name) && entry.size() > name.size() && entry[name.size()] == '=') {
        field = std::string(entry.substr(name.size() + 1));
      }
    };
    take("AWS_ACCESS_KEY_ID", config.storage.write_access_key_id);
    take("AWS_SECRET_ACCESS_KEY", config.storage.write_secret_access_key);
  }
  return Status::ok();
}

int exit_code_of(const Status& st) {
  switch (st.code()) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists:
    case StatusCode::kPermissionDenied:
    case StatusCode::kUnauthenticated:
    case StatusCode::kUnimplemented:
    case StatusCode::kDataLoss:
      return kExitUsage;
    default:
      return kExitFailure;
  }
}

Status check_node_data(const NodeConfig& config, Role role) {
  if (role == Role::kAny) return Status::ok();
  const bool miner = role == Role::kMiner;
  return protocol::open_network_data(miner ? config.miner.data_dir : config.validator.data_dir,
                                     miner ? "miner.data_dir" : "validator.data_dir", config.model, config.protocol)
      .status();
}

void start_logging(const NodeConfig& config) { log::configure(config.log, isatty(STDERR_FILENO) == 1); }

int guarded_main(const std::function<int()>& body) {
  // A closed stdout (`| tee` stopped) is an EPIPE to handle, not a signal
  // that kills the process before it stops its children and says so.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return body();
  } catch (const std::exception& e) {
    log::error("fatal error", {{"what", e.what()}});
    return kExitFailure;
  }
}

}  // namespace crucible::cli

namespace crucible::cli {

namespace {

// A node's sockets (its HTTP endpoint's connections, peers' stores, the
// chain) and RocksDB's files share one descriptor limit, whose soft value is
// often 1,024: it is raised to the hard one, as servers do, and a limit
// still under what the endpoint may hold is said at start.
void raise_open_file_limit(Role role, const NodeConfig& config) {
  const std::uint64_t limit = http::raise_open_file_limit();
  if (limit == 0) return;
  const std::uint64_t endpoint = role == Role::kValidator
                                     ? (config.api.port != 0 ? config.api.max_connections : 0)
                                     : (config.miner.metrics_port != 0 ? config.miner.metrics_max_connections : 0);
  constexpr std::uint64_t kOwnUse = 512;  // RocksDB's files, stores, the chain
  if (endpoint + kOwnUse > limit) {
    log::warn("the open-file limit is below what the HTTP endpoint may hold beside the node's own files",
              {{"limit", limit}, {"wanted", endpoint + kOwnUse}});
  }
}

}  // namespace

std::optional<int> start_node(CLI::App& app, Role role, int argc, char** argv, char** envp, NodeArgs& args,
                              NodeConfig& config, std::span<const ShortcutFlag> shortcuts) {
  app.set_version_flag("-V,--version", version_line(app.get_name()));
  add_common_flags(app, args.common);
  for (const ShortcutFlag& s : shortcuts) add_shortcut_flag(app, args.common, s);
  app.add_option("-k,--key", args.key_file, "Keystore file (Ethereum keystore v3) of this node's wallet");
  app.add_option("--password-file", args.password_file,
                 "File holding the keystore password (else $CRUCIBLE_WALLET_PASSWORD, else a prompt)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  Status st = load_node_config(role, args.common, envp, config);
  if (!st.is_ok()) {
    fmt::print(stderr, "{}: invalid config\n{}\n", app.get_name(), st.message());
    return kExitUsage;
  }
  start_logging(config);
  auto& m = metrics::global();
  m.set(metrics::Gauge::kBuildInfo, 1,
        {{"version", std::string(project_version())}, {"role", std::string(role_name(role))}});
  m.set(metrics::Gauge::kStartTimeSeconds,
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  log::info("starting",
            {{"program", app.get_name()},
             {"version", version_line(app.get_name())},
             {"config", fmt::format("{}", fmt::join(args.common.config_files, ", "))},
             {"network", config.network.name.empty() ? std::string("(no manifest)") : config.network.name}});
  raise_open_file_limit(role, config);
  return std::nullopt;
}

}  // namespace crucible::cli

namespace crucible::cli {

namespace {
std::atomic<bool>* g_stop_flag = nullptr;
extern "C" void on_stop_signal(int) {
  if (g_stop_flag != nullptr) g_stop_flag->store(true);
}
}  // namespace

std::optional<chain::PrivateKey> open_node_wallet(const NodeArgs& args, int& exit_code) {
  exit_code = kExitUsage;
  if (args.key_file.empty()) {
    log::error("--key KEYFILE is required: the node signs what it publishes (crucible wallet new creates one)");
    return std::nullopt;
  }
  auto text = chain::read_secret_file(args.key_file);
  if (!text.is_ok()) {
    log::error("cannot read the key file", {{"error", text.status().to_string()}});
    return std::nullopt;
  }
  auto password = obtain_password(args.password_file, false);
  if (!password.is_ok()) {
    log::error("no keystore password", {{"error", password.status().to_string()}});
    return std::nullopt;
  }
  auto key = chain::decrypt_keystore(*text, *password);
  if (!key.is_ok()) {
    log::error("cannot decrypt the key file", {{"error", key.status().to_string()}});
    return std::nullopt;
  }
  exit_code = kExitOk;
  return std::move(*key);
}

void stop_on_signals(std::atomic<bool>* stop) {
  g_stop_flag = stop;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

std::optional<int> prepare_node(CLI::App& app, Role role, int argc, char** argv, char** envp, NodeConfig& config,
                                std::optional<chain::PrivateKey>& key, std::atomic<bool>* stop,
                                const NodeStartOptions& start) {
  NodeArgs args;
  if (auto rc = start_node(app, role, argc, argv, envp, args, config, start.shortcuts)) return rc;
  if (start.keyless && start.keyless(config)) return std::nullopt;
  int rc = kExitOk;
  key = open_node_wallet(args, rc);
  if (!key) return rc;
  if (Status data = check_node_data(config, role); !data.is_ok()) return node_failed(role, "cannot start", data);
  stop_on_signals(stop);
  return std::nullopt;
}

int node_failed(Role role, std::string_view what, const Status& st) {
  const char* name = role == Role::kMiner ? "miner" : role == Role::kValidator ? "validator" : "node";
  log::error(fmt::format("the {} {}", name, what), {{"error", st.to_string()}});
  return exit_code_of(st);
}

}  // namespace crucible::cli
