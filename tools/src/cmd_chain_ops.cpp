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
#include "crucible/protocol/peers.h"

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
  bool remove = false;      // proxy: remove it instead
  std::string name;         // set: the hyperparameter
  std::uint64_t value = 0;  // set: its value
};

int fail(std::string_view what, const Status& st) {
  fmt::print(stderr, "crucible chain {}: {}\n", what, st.message());
  return exit_code_of(st);
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

Result<chain::PrivateKey> open_key(const OpsArgs& args) { return open_keystore(args.key_file, args.password_file); }

int register_neuron(const OpsArgs& args, char** envp) {
  auto opts = chain_options(args, envp);
  if (!opts.is_ok()) return fail("register", opts.status());
  auto key = open_key(args);
  if (!key.is_ok()) return fail("register", key.status());
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

// The commitment key: a NonTransfer proxy of the node's hotkey that writes
// its commitment through the Proxy precompile (docs/chain.md).
int proxy(const OpsArgs& args, char** envp) {
  auto opts = chain_options(args, envp);
  if (!opts.is_ok()) return fail("proxy", opts.status());
  auto key = open_key(args);
  if (!key.is_ok()) return fail("proxy", key.status());
  const chain::Hash32 hotkey = chain::substrate::mirror_account(key->address());
  auto chain = chain::EvmChain::connect(chain::to_evm_options(*opts), std::move(*key));
  if (!chain.is_ok()) return fail("proxy", chain.status());
  auto address = (*chain)->commitment_proxy_address();
  if (!address.is_ok()) return fail("proxy", address.status());
  if (args.remove) {
    auto sent = (*chain)->remove_commitment_proxy();
    if (!sent.is_ok()) return fail("proxy", sent.status());
    fmt::print("removed the commitment key {} as a proxy of {} (its deposit is returned), tx {}\n", address->checksum(),
               chain::substrate::ss58(hotkey), to_hex(sent->receipt.tx_hash));
    return kExitOk;
  }
  auto done = (*chain)->ensure_commitment_proxy(chain::kCommitmentGasFundsWei);
  if (!done.is_ok()) return fail("proxy", done.status());
  for (const auto& line : *done) fmt::print("{}\n", line);
  auto balance = (*chain)->eth().balance(*address);
  fmt::print("commitment key {} ({}) is a NonTransfer proxy of hotkey {}; it holds {} wei for gas\n",
             address->checksum(), chain::substrate::ss58(chain::substrate::mirror_account(*address)),
             chain::substrate::ss58(hotkey), balance.is_ok() ? balance->to_decimal() : std::string("?"));
  return kExitOk;
}

// What a node does at start: publish its [storage] location (with the read
// key pair) as its commitment, when the chain holds another.
int commit(const OpsArgs& args, char** envp) {
  NodeConfig config;
  if (Status st = load_node_config(Role::kAny, args.common, envp, config); !st.is_ok()) return fail("commit", st);
  auto key = open_key(args);
  if (!key.is_ok()) return fail("commit", key.status());
  chain::PrivateKey signer = *key;
  auto chain = chain::EvmChain::connect(chain::to_evm_options(config.chain), std::move(*key));
  if (!chain.is_ok()) return fail("commit", chain.status());
  auto uid = protocol::join_subnet(**chain, config.chain.netuid, signer, config.storage);
  if (!uid.is_ok()) return fail("commit", uid.status());
  auto committed = (*chain)->commitment(config.chain.netuid, *uid);
  if (!committed.is_ok()) return fail("commit", committed.status());
  fmt::print("uid {} on netuid {} commits {} ({} bytes)\n", *uid, config.chain.netuid, config.storage.url,
             committed->value_or("").size());
  return kExitOk;
}

int set_hyperparameter(const OpsArgs& args, char** envp) {
  auto opts = chain_options(args, envp);
  if (!opts.is_ok()) return fail("set", opts.status());
  if (Status st = chain::local_set_hyperparameter(opts->rpc_url, opts->netuid, args.name, args.value); !st.is_ok()) {
    return fail("set", st);
  }
  fmt::print("netuid {}: {} = {}\n", opts->netuid, args.name, args.value);
  return kExitOk;
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
  if ((args.uid < 0) == args.key_file.empty())
    return fail("stake", invalid_argument("give --key or --uid (one of them)"));
  if (!args.key_file.empty()) {
    // Any chain: the key's own TAO, staked to its hotkey (Staking V2 addStake).
    auto key = open_key(args);
    if (!key.is_ok()) return fail("stake", key.status());
    const chain::Hash32 hotkey = chain::substrate::mirror_account(key->address());
    auto chain = chain::EvmChain::connect(chain::to_evm_options(*opts), std::move(*key));
    if (!chain.is_ok()) return fail("stake", chain.status());
    auto sent = (*chain)->add_stake(hotkey, rao, opts->netuid);
    if (!sent.is_ok()) return fail("stake", sent.status());
    fmt::print(
        "staked {} TAO to hotkey {} on netuid {}, tx {}; a validator permit follows at the next epoch if "
        "the stake is among the subnet's top\n",
        args.stake, chain::substrate::ss58(hotkey), opts->netuid, to_hex(sent->receipt.tx_hash));
    if (!args.permit) return kExitOk;
    if (Status st = chain::local_mine_to_next_epoch(opts->rpc_url, opts->netuid); !st.is_ok()) return fail("stake", st);
    fmt::print("mined to the next epoch (local chain)\n");
    return kExitOk;
  }
  Status st =
      chain::local_set_stake(opts->rpc_url, opts->netuid, static_cast<std::uint16_t>(args.uid), rao, args.permit);
  if (!st.is_ok()) return fail("stake", st);
  fmt::print("uid {} on netuid {}: stake {} TAO{}\n", args.uid, opts->netuid, args.stake,
             args.permit ? "; mined to the next epoch, which hands permits to the top stakes" : "");
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
      "stake",
      "Stake TAO: --key K stakes the key's own TAO to its hotkey (any chain); --uid N sets a uid's stake "
      "as the local chain's admin");
  add_common_flags(*st, args->common);
  st->add_option("-k,--key", args->key_file, "Keystore: stake its TAO to its own hotkey (Staking V2 addStake)");
  st->add_option("--password-file", args->password_file, "File with the keystore password (mode 0600)");
  st->add_option("--uid", args->uid, "Local chain only: the uid whose stake the admin sets")
      ->check(CLI::Range(0, 65535));
  st->add_option("--amount", args->stake, "Stake in TAO")->capture_default_str()->check(CLI::Range(0.0, 1e9));
  st->add_flag("--permit", args->permit,
               "Local chain only: mine blocks to the next epoch, when validator permits go to the top stakes (as on "
               "subtensor)");
  st->callback([args, &exit_code, envp] { exit_code = stake(*args, envp); });

  CLI::App* px = chain_group.add_subcommand(
      "proxy", "Set up (or --remove) the commitment key: a NonTransfer proxy of the node's hotkey, with gas");
  add_common_flags(*px, args->common);
  px->add_option("-k,--key", args->key_file, "The node's keystore file")->required();
  px->add_option("--password-file", args->password_file, "File with the keystore password (mode 0600)");
  px->add_flag("--remove", args->remove, "Remove the proxy (the chain returns its deposit)");
  px->callback([args, &exit_code, envp] { exit_code = proxy(*args, envp); });

  CLI::App* cm = chain_group.add_subcommand(
      "commit", "Publish the [storage] location of --config as the key's commitment (what a node does at start)");
  add_common_flags(*cm, args->common);
  cm->add_option("-k,--key", args->key_file, "The node's keystore file")->required();
  cm->add_option("--password-file", args->password_file, "File with the keystore password (mode 0600)");
  cm->callback([args, &exit_code, envp] { exit_code = commit(*args, envp); });

  CLI::App* set = chain_group.add_subcommand(
      "set",
      "Local chain only: set a subnet hyperparameter (tempo, commit_reveal, rate_limit, reveal_period, "
      "min_allowed_weights, max_weights_limit, max_validators, stake_threshold, burn, version_key, ...)");
  add_common_flags(*set, args->common);
  set->add_option("name", args->name, "Hyperparameter")->required();
  set->add_option("value", args->value, "Value")->required();
  set->callback([args, &exit_code, envp] { exit_code = set_hyperparameter(*args, envp); });
}

}  // namespace crucible::cli
