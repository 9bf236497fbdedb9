// `crucible wallet new|import|address|check`: Ethereum keystore v3 files.
#include <algorithm>
#include <cctype>
#include <memory>

#include <fmt/format.h>

#include "crucible/chain/keystore.h"
#include "crucible/chain/substrate.h"
#include "crucible/cli/commands.h"
#include "crucible/cli/node_config.h"
#include "crucible/cli/password.h"

namespace crucible::cli {
namespace {

struct WalletArgs {
  std::string out;
  std::string file;
  std::string password_file;
  std::string private_key_file;
  std::uint64_t scrypt_n = chain::KeystoreParams{}.scrypt_n;
  bool force = false;
  bool mirror = false;
};

int fail(const Status& st) {
  fmt::print(stderr, "crucible wallet: {}\n", st.message());
  return exit_code_of(st);
}

int save(const chain::PrivateKey& key, const WalletArgs& args) {
  auto password = obtain_password(args.password_file, /*confirm=*/true);
  if (!password.is_ok()) return fail(password.status());
  if (password->empty()) fmt::print(stderr, "warning: the keystore has an empty password\n");
  chain::KeystoreParams params;
  params.scrypt_n = args.scrypt_n;
  auto json = chain::encrypt_keystore(key, *password, params);
  if (!json.is_ok()) return fail(json.status());
  if (Status st = chain::write_secret_file(args.out, *json, args.force); !st.is_ok()) return fail(st);
  fmt::print("{}\n", key.address().checksum());
  fmt::print(stderr, "keystore written to {} (mode 0600)\n", args.out);
  return kExitOk;
}

int cmd_new(const WalletArgs& args) {
  auto key = chain::PrivateKey::generate();
  if (!key.is_ok()) return fail(key.status());
  return save(*key, args);
}

int cmd_import(const WalletArgs& args) {
  auto text = chain::read_secret_file(args.private_key_file, 1024);
  if (!text.is_ok()) return fail(text.status());
  std::string hex;
  for (char c : *text) {
    if (!std::isspace(static_cast<unsigned char>(c))) hex += c;
  }
  auto bytes = from_hex(hex);
  Secret wipe(std::move(hex));
  if (!bytes.is_ok() || bytes->size() != 32) {
    return fail(invalid_argument("{}: expected 32 bytes of hex (64 digits, optional 0x)", args.private_key_file));
  }
  auto key = chain::PrivateKey::from_bytes(*bytes);
  std::fill(bytes->begin(), bytes->end(), 0);
  if (!key.is_ok()) return fail(key.status());
  return save(*key, args);
}

int cmd_address(const WalletArgs& args) {
  auto text = chain::read_secret_file(args.file);
  if (!text.is_ok()) return fail(text.status());
  auto addr = chain::keystore_address(*text);
  if (!addr.is_ok()) return fail(addr.status().with_context(args.file));
  fmt::print("{}\n", addr->checksum());
  if (args.mirror) {
    auto account = chain::substrate::mirror_account(*addr);
    fmt::print("mirror account {}\nmirror ss58    {}\n", to_hex(account), chain::substrate::ss58(account));
  }
  return kExitOk;
}

int cmd_check(const WalletArgs& args) {
  auto key = open_keystore(args.file, args.password_file);
  if (!key.is_ok()) return fail(key.status());
  fmt::print("{}\n", key->address().checksum());
  fmt::print(stderr, "{}: password ok\n", args.file);
  return kExitOk;
}

void add_password_option(CLI::App* cmd, WalletArgs& a) {
  cmd->add_option("--password-file", a.password_file,
                  "File holding the password (mode 0600); else $CRUCIBLE_WALLET_PASSWORD, else a prompt");
}

}  // namespace

void add_wallet_commands(CLI::App& app, int& exit_code) {
  CLI::App* group = app.add_subcommand("wallet", "Create, import and inspect keystore files");
  group->require_subcommand(1);
  auto args = std::make_shared<WalletArgs>();

  CLI::App* create = group->add_subcommand("new", "Generate a key and write it as an encrypted keystore");
  create->add_option("--out", args->out, "Keystore file to write")->required();
  add_password_option(create, *args);
  create->add_option("--scrypt-n", args->scrypt_n, "scrypt cost (power of two; default 262144)");
  create->add_flag("--force", args->force, "Overwrite an existing file");
  create->callback([args, &exit_code] { exit_code = cmd_new(*args); });

  CLI::App* import = group->add_subcommand("import", "Encrypt an existing private key into a keystore");
  import->add_option("--private-key-file", args->private_key_file, "File with the key as hex (mode 0600)")->required();
  import->add_option("--out", args->out, "Keystore file to write")->required();
  add_password_option(import, *args);
  import->add_option("--scrypt-n", args->scrypt_n, "scrypt cost (power of two; default 262144)");
  import->add_flag("--force", args->force, "Overwrite an existing file");
  import->callback([args, &exit_code] { exit_code = cmd_import(*args);
});

CLI::App* address = group->add_subcommand("address", "Print a keystore's address (no password needed)");
address->add_option("file", args->file, "Keystore file")->required();
address->add_flag("--mirror", args->mirror,
                  "Also print the Substrate mirror account (hex and SS58) that acts for this address on Bittensor");
address->callback([args, &exit_code] { exit_code = cmd_address(*args); });

CLI::App* check = group->add_subcommand("check", "Decrypt a keystore to check its password; prints the address");
check->add_option("file", args->file, "Keystore file")->required();
add_password_option(check, *args);
check->callback([args, &exit_code] { exit_code = cmd_check(*args); });
}  // namespace crucible::cli

}  // namespace crucible::cli
