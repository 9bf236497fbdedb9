// `crucible config check FILE` and `crucible config show`.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "crucible/chain/keystore.h"
#include "crucible/cli/commands.h"
#include "crucible/cli/node_config.h"
#include "crucible/cli/password.h"

namespace crucible::cli {
namespace {

const std::map<std::string, Role> kRoles = {
    {"any", Role::kAny}, {"miner", Role::kMiner}, {"validator", Role::kValidator}};

struct CheckArgs {
  std::string file;
  Role role = Role::kAny;
  std::string key_file;
  std::string password_file;
};

// What a node does with --key at start, without a prompt: the file's mode
// and format, and, when a password is given (--password-file or
// CRUCIBLE_WALLET_PASSWORD), that it opens the keystore. The text says what
// was checked.
Result<std::string> check_key(const CheckArgs& a) {
  CRUCIBLE_ASSIGN_OR_RETURN(std::string text, chain::read_secret_file(a.key_file));
  auto address = chain::keystore_address(text);
  if (!address.is_ok()) return address.status().with_context(a.key_file);
  if (a.password_file.empty() && std::getenv(kPasswordEnv) == nullptr) {
    return fmt::format("key {} readable, its password not checked (give --password-file)", address->checksum());
  }
  CRUCIBLE_ASSIGN_OR_RETURN(chain::PrivateKey key, open_keystore(a.key_file, a.password_file));
  return fmt::format("key {} opens", key.address().checksum());
}

// The file alone (no environment, no flags), with the network manifest it
// names; for a node's role, also its data folder as the node checks it at
// start, and its key when given.
int check(const CheckArgs& a) {
  const std::string& file = a.file;
  const Role role = a.role;
  NodeConfig config;
  CommonFlags flags;
  flags.config_files = {file};
  char* no_env[] = {nullptr};
  config::Origins origins;
  Status st = load_node_config(role, flags, no_env, config, &origins);
  if (!st.is_ok()) {
    fmt::print(stderr, "{}: invalid config for role {}\n{}\n", file, role_name(role), st.message());
    return kExitUsage;
  }
  if (Status data = check_node_data(config, role); !data.is_ok()) {
    fmt::print(stderr, "{}: the {} could not start on it\n{}\n", file, role_name(role), data.message());
    return exit_code_of(data);
  }
  std::string key_text;
  if (!a.key_file.empty()) {
    auto checked = check_key(a);
    if (!checked.is_ok()) {
      fmt::print(stderr, "{}: the key cannot be used\n{}\n", a.key_file, checked.status().message());
      return exit_code_of(checked.status());
    }
    key_text = "; " + *checked;
  }
  std::size_t from_file = 0;
  for (const auto& [key, origin] : origins) from_file += origin.kind == config::Origin::Kind::kFile;
  fmt::print("{}: ok ({} keys set, the rest default{}{}{})\n", file, from_file,
             config.network.name.empty() ? "" : "; network " + config.network.name,
             role == Role::kAny ? "" : "; data checked", key_text);
  return kExitOk;
}

int show(const CommonFlags& flags, Role role, char** envp) {
  NodeConfig config;
  config::Origins origins;
  Status st = load_node_config(role, flags, envp, config, &origins);
  if (!st.is_ok()) {
    fmt::print(stderr, "invalid config:\n{}\n", st.message());
    return kExitUsage;
  }
  config::Schema schema = make_schema(role, config);  // binds the loaded struct, for rendering
  std::string section;
  for (const config::Field& f : schema.fields()) {
    auto dot = f.key.rfind('.');
    std::string sec = f.key.substr(0, dot);
    if (sec != section) {
      fmt::print("{}[{}]\n", section.empty() ? "" : "\n", sec);
      section = sec;
    }
    std::string value = f.secret ? "\"<redacted>\"" : f.render();
    fmt::print("{} = {}  # {}\n", f.key.substr(dot + 1), value, origins[f.key].describe());
  }
  return kExitOk;
}

}  // namespace

void add_config_commands(CLI::App& app, int& exit_code, char** envp) {
  CLI::App* group = app.add_subcommand("config", "Validate or print configuration");
  group->require_subcommand(1);

  auto check_args = std::make_shared<CheckArgs>();
  CLI::App* check_cmd = group->add_subcommand(
      "check", "Validate a config file: unknown keys, wrong types and out-of-range values are errors");
  check_cmd->add_option("file", check_args->file, "TOML file to check")->required();
  check_cmd->add_option("--role", check_args->role, "Which node reads it: any, miner or validator")
      ->transform(CLI::CheckedTransformer(kRoles, CLI::ignore_case));
  check_cmd->add_option("--key", check_args->key_file,
                        "The node's keystore: its mode and format are checked, and that it opens when a password "
                        "is given");
  check_cmd->add_option("--password-file", check_args->password_file,
                        "File holding the keystore's password (else CRUCIBLE_WALLET_PASSWORD; never a prompt)");
  check_cmd->callback([check_args, &exit_code] { exit_code = check(*check_args); });

  struct ShowArgs {
    CommonFlags flags;
    Role role = Role::kAny;
  };
  auto show_args = std::make_shared<ShowArgs>();
  CLI::App* show_cmd =
      group->add_subcommand("show", "Print the effective configuration and where each value came from");
  add_common_flags(*show_cmd, show_args->flags);
  show_cmd->add_option("--role", show_args->role, "Which node reads it: any, miner or validator")
      ->transform(CLI::CheckedTransformer(kRoles, CLI::ignore_case));
  show_cmd->callback([show_args, &exit_code, envp] { exit_code = show(show_args->flags, show_args->role, envp); });
}

}  // namespace crucible::cli
