// `crucible chain metagraph` and `crucible chain register`: the chain as an
// operator sees it, through the same EvmChain the nodes use; and, for the
// local chain only, `chain fund` and `chain stake`.
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "crucible/chain/chain_options.h"
#include "crucible/chain/keystore.h"
#include "crucible/chain/local_chain.h"
#include "crucible/chain/substrate.h"
#include "crucible/cli/commands.h"
#include "crucible/cli/node_config.h"
#include "crucible/cli/password.h"

namespace crucible::cli {
namespace {

struct OpsArgs {
  CommonFlags common;
  std::string key_file;
  std::string password_file;
  std::string hotkey;
  std::string to;              // fund: an address
  std::uint64_t tokens = 100;  // fund: whole tokens (TAO on Bittensor's EVM), 18 decimals
  double stake = 1000;         // stake: TAO
  int uid = -1;
  bool permit = false;
};

int fail(std::string_view what, const Status& st) {
  fmt::print(stderr, "crucible chain {}: {}\n", what, st.message());
  return kExitFailure;
}

Result<chain::ChainOptions> chain_options(const OpsArgs& args, char** envp) {
  NodeConfig config;
  CRUCIBLE_RETURN_IF_ERROR(load_node_config(Role::kAny, args.common, envp, config));
  return config.chain;
}

int metagraph(const OpsArgs& args, char** envp) {
  auto opts = chain_options(args, envp);
  if (!opts.is_ok()) return fail("metagraph", opts.status());
  auto chain = chain::EvmChain::connect(chain::to_evm_options(*opts), std::nullopt);
  if (!chain.is_ok()) return fail("metagraph", chain.status());
  auto mg = (*chain)->metagraph(opts->netuid);
  if (!mg.is_ok()) return fail("metagraph", mg.status());
  fmt::print("netuid {} at block {}: {} uids\n", mg->netuid, mg->block, mg->neurons.size());
  fmt::print("{:>5}  {:<48}  {:>16}  {:>6}  {:>11}\n", "uid", "hotkey (ss58)", "stake (TAO)", "permit", "last update");
  for (const auto& n : mg->neurons) {
    fmt::print("{:>5}  {:<48}  {:>16.9f}  {:>6}  {:>11}\n", n.uid, chain::substrate::ss58(n.hotkey),
               static_cast<double>(n.stake) / 1e9, n.validator_permit ? "yes" : "no", n.last_update);
  }
  return kExitOk;
}

int register_neuron(const OpsArgs& args, char** envp) {
  auto opts = chain_options(args, envp);
  if (!opts.is_ok()) return fail("register", opts.status());
  auto text = chain::read_secret_file(args.key_file);
  if (!text.is_ok()) return fail("register", text.status());
  auto password = obtain_password(args.password_file, false);
  if (!password.is_ok()) return fail("register", password.status());
  auto key = chain::decrypt_keystore(*text, *password);
  if (!key.is_ok()) return fail("register", key.status().with_context(args.key_file));
  chain::Address address = key->address();
  chain::Hash32 hotkey = chain::substrate::mirror_account(address);
  if (!args.hotkey.empty()) {
    auto parsed = from_hex_fixed<32>(args.hotkey);
    if (!parsed.is_ok()) return fail("register", parsed.status().with_context("--hotkey"));
    hotkey = *parsed;
  }
  auto chain = chain::EvmChain::connect(chain::to_evm_options(*opts), std::move(*key));
  if (!chain.is_ok()) return fail("register", chain.status());
  auto sent = (*chain)->register_neuron(opts->netuid, hotkey);
  if (!sent.is_ok()) return fail("register", sent.status());
  auto mg = (*chain)->metagraph(opts->netuid);
  if (!mg.is_ok()) return fail("register", mg.status());
  for (const auto& n : mg->neurons) {
    if (n.hotkey == hotkey) {
      fmt::print("registered {} on netuid {} as uid {} (hotkey {}), tx {}\n", address.checksum(), opts->netuid, n.uid,
                 chain::substrate::ss58(hotkey), to_hex(sent->receipt.tx_hash));
      return kExitOk;
    }
  }
  return fail("register", data_loss("the transaction was mined but the hotkey is not in the metagraph"));
}

// The address to fund: --to, or the key file's (its keystore names it; no password needed).
Result<chain::Address> fund_target(const OpsArgs& args) {
  if (!args.to.empty()) return chain::Address::parse(args.to);
  if (args.key_file.empty()) return invalid_argument("give --to ADDRESS or --key KEYSTORE");
  CRUCIBLE_ASSIGN_OR_RETURN(std::string text, chain::read_secret_file(args.key_file));
  return chain::keystore_address(text);
}

int fund(const OpsArgs& args, char** envp) {
  auto opts = chain_options(args, envp);
  if (!opts.is_ok()) return fail("fund", opts.status());
  auto to = fund_target(args);
  if (!to.is_ok()) return fail("fund", to.status());
  auto wei = chain::U256::parse(std::to_string(args.tokens) + "000000000000000000");
  if (!wei.is_ok()) return fail("fund", wei.status());
  if (Status st = chain::local_fund(opts->rpc_url, *to, *wei); !st.is_ok()) return fail("fund", st);
  fmt::print("{} now holds {} tokens on the local chain {}\n", to->checksum(), args.tokens, opts->rpc_url);
  return kExitOk;
}

int stake(const OpsArgs& args, char** envp) {
  auto opts = chain_options(args, envp);
  if (!opts.is_ok()) return fail("stake", opts.status());
  const auto rao = static_cast<std::uint64_t>(std::llround(args.stake * 1e9));
  Status st =
      chain::local_set_stake(opts->rpc_url, opts->netuid, static_cast<std::uint16_t>(args.uid), rao, args.permit);
  if (!st.is_ok()) return fail("stake", st);
  fmt::print("uid {} on netuid {}: stake {} TAO, validator permit {}\n", args.uid, opts->netuid, args.stake,
             args.permit ? "yes" : "no");
  return kExitOk;
}

}  // namespace

void add_chain_ops_commands(CLI::App& chain_group, int& exit_code, char** envp) {
  auto args = std::make_shared<OpsArgs>();
  CLI::App* mg = chain_group.add_subcommand("metagraph", "Print the subnet's uids, hotkeys, stake and permits");
  add_common_flags(*mg, args->common);
  mg->callback([args, &exit_code, envp] { exit_code = metagraph(*args, envp); });

  CLI::App* reg = chain_group.add_subcommand(
      "register", "Register this key's mirror account as a hotkey on the subnet (burnedRegister)");
  add_common_flags(*reg, args->common);
  reg->add_option("-k,--key", args->key_file, "Keystore file")->required();
  reg->add_option("--password-file", args->password_file, "File with the keystore password (mode 0600)");
  reg->add_option("--hotkey", args->hotkey, "Hotkey account (32-byte hex) instead of the key's mirror account");
  reg->callback([args, &exit_code, envp] { exit_code = register_neuron(*args, envp); });

  CLI::App* f =
      chain_group.add_subcommand("fund", "Local chain only: give an account tokens for gas (anvil_setBalance)");
  add_common_flags(*f, args->common);
  f->add_option("--to", args->to, "The address (0x...)");
  f->add_option("-k,--key", args->key_file, "Or a keystore file: its address");
  f->add_option("--amount", args->tokens, "Whole tokens")->capture_default_str()->check(CLI::Range(1, 1'000'000'000));
  f->callback([args, &exit_code, envp] { exit_code = fund(*args, envp); });

  CLI::App* st = chain_group.add_subcommand(
      "stake", "Local chain only: set a uid's stake and validator permit (the stand-ins' admin call)");
  add_common_flags(*st, args->common);
  st->add_option("--uid", args->uid, "The uid")->required()->check(CLI::Range(0, 65535));
  st->add_option("--amount", args->stake, "Stake in TAO")->capture_default_str()->check(CLI::Range(0.0, 1e9));
  st->add_flag("--permit", args->permit, "Give it a validator permit");
  st->callback([args, &exit_code, envp] { exit_code = stake(*args, envp); });
}

}  // namespace crucible::cli
