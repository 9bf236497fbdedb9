// `crucible chain preflight --config F (--key K | --uid N)`: read-only checks
// of a chain endpoint and of one node's standing on its subnet, printed as
// a checklist with what to do for each failure. Nothing is sent.
#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "crucible/chain/evm_chain.h"
#include "crucible/chain/keystore.h"
#include "crucible/chain/local_chain.h"
#include "crucible/chain/substrate.h"
#include "crucible/cli/commands.h"
#include "crucible/cli/node_config.h"
#include "crucible/cli/node_io.h"
#include "crucible/cli/password.h"
#include "crucible/protocol/peers.h"
#include "crucible/storage/peer_location.h"

namespace crucible::cli {
namespace {

struct PreflightArgs {
  CommonFlags common;
  std::string key_file;
  std::string password_file;
  int uid = -1;
};

class Checklist {
 public:
  void ok(std::string_view what, const std::string& detail) { fmt::print("  [ok]   {:<22} {}\n", what, detail); }
  void info(std::string_view what, const std::string& detail) { fmt::print("  [--]   {:<22} {}\n", what, detail); }
  void warn(std::string_view what, const std::string& detail, const std::string& todo) {
    fmt::print("  [warn] {:<22} {}\n         {:<22} what to do: {}\n", what, detail, "", todo);
  }
  void fail(std::string_view what, const std::string& detail, const std::string& todo) {
    ++failures_;
    fmt::print("  [FAIL] {:<22} {}\n         {:<22} what to do: {}\n", what, detail, "", todo);
  }
  int failures() const { return failures_; }

 private:
  int failures_ = 0;
};

std::string chain_name(std::uint64_t id) {
  switch (id) {
    case 964:
      return "Bittensor mainnet";
    case 945:
      return "Bittensor testnet";
    case chain::kLocalChainId:
      return "the local chain (anvil)";
    default:
      return "not a Bittensor chain id";
  }
}

std::string tao(std::uint64_t rao) { return fmt::format("{:.9f} TAO", static_cast<double>(rao) / 1e9); }

// The node's key when its password comes without a prompt (--password-file
// or CRUCIBLE_WALLET_PASSWORD): only then can the commitment key be derived.
std::optional<chain::PrivateKey> key_without_prompt(const PreflightArgs& a) {
  const char* env = std::getenv(kPasswordEnv);
  if (a.password_file.empty() && (env == nullptr || *env == '\0')) return std::nullopt;
  auto key = open_keystore(a.key_file, a.password_file);
  if (!key.is_ok()) return std::nullopt;
  return std::move(*key);
}

// The endpoint: its chain id against the config's, and its head.
void check_endpoint(Checklist& c, const NodeConfig& config, std::uint64_t id, const Result<std::uint64_t>& head) {
  if (config.chain.chain_id != 0 && id != config.chain.chain_id) {
    c.fail("chain id", fmt::format("{} ({}), but the config expects {}", id, chain_name(id), config.chain.chain_id),
           "point chain.rpc_url at the chain chain.chain_id names, or fix chain.chain_id");
  } else {
    c.ok("chain id", fmt::format("{} ({})", id, chain_name(id)));
  }
  if (head.is_ok()) c.ok("head", fmt::format("block {}", *head));
}

struct SubnetView {
  chain::Metagraph metagraph;
  chain::SubnetParams params;
};

// The precompiles and the subnet, or nothing when they do not answer. On
// Bittensor getUidCount answers 0 for a subnet that does not exist;
// elsewhere nothing answers at 0x802.
std::optional<SubnetView> check_subnet(Checklist& c, chain::EvmChain& ch, std::uint16_t netuid) {
  auto mg = ch.metagraph(netuid);
  if (!mg.is_ok()) {
    c.fail("precompiles", fmt::format("the Metagraph precompile (0x802) does not answer: {}", mg.status().message()),
           "this endpoint is not a Bittensor EVM: point chain.rpc_url at a subtensor node (port 9944) or at "
           "`crucible chain up`");
    return std::nullopt;
  }
  auto tempo_raw = ch.storage(chain::substrate::subtensor_storage_key("Tempo", netuid));
  if (!tempo_raw.is_ok()) {
    c.fail("precompiles", fmt::format("StorageQuery (0x807) does not answer: {}", tempo_raw.status().message()),
           "a subtensor runtime with the StorageQuery precompile (precompiles/src/storage_query.rs)");
    return std::nullopt;
  }
  if (tempo_raw->empty()) {
    c.fail("subnet", fmt::format("netuid {} does not exist (no Tempo in storage)", netuid),
           "set chain.netuid to the subnet you registered on");
    return std::nullopt;
  }
  c.ok("precompiles", "Metagraph 0x802, Subnet 0x803, StorageQuery 0x807 answer");
  c.ok("subnet", fmt::format("netuid {}: {} uids", netuid, mg->neurons.size()));
  auto sp = ch.subnet_params(netuid);
  if (!sp.is_ok()) {
    c.fail("hyperparameters", sp.status().message(), "the Subnet precompile (0x803) did not answer: retry later");
    return std::nullopt;
  }
  return SubnetView{std::move(*mg), *sp};
}

// The subnet's rules as they bear on a node of this network.
void report_rules(Checklist& c, chain::EvmChain& ch, const NodeConfig& config, const chain::SubnetParams& sp) {
  c.info("commit-reveal", sp.commit_reveal ? fmt::format("on: a commit is revealed {} epoch(s) later", sp.reveal_period)
                                           : "off: weights are set directly");
  c.info("tempo", fmt::format("{} blocks per epoch", sp.tempo));
  if (sp.commit_reveal && sp.tempo > 0 && config.protocol.blocks_per_window > sp.tempo) {
    c.warn("reveal timing",
           fmt::format("windows of {} blocks are longer than an epoch of {}: a validator checks reveals once a "
                       "window and may miss an epoch",
                       config.protocol.blocks_per_window, sp.tempo),
           "a network whose windows are at most one tempo long");
  }
  c.info("weights rate limit", fmt::format("{} blocks", sp.rate_limit));
  c.info("weights rules", fmt::format("min allowed weights {}, max weight limit {}/65535, version key {}",
                                      sp.min_allowed_weights, sp.max_weight_limit, sp.version_key));
  c.info("stake threshold", tao(sp.stake_threshold));
  if (auto burn = ch.registration_burn(config.chain.netuid); burn.is_ok()) c.info("registration burn", tao(*burn));
}

// The node's uid: --uid, or the one its key's hotkey holds (its address in
// `address`); nothing when it is not registered.
std::optional<std::uint16_t> check_registration(Checklist& c, chain::EvmChain& ch, const PreflightArgs& a,
                                                std::uint16_t netuid, const chain::Metagraph& mg,
                                                std::optional<chain::Address>& address) {
  std::optional<std::uint16_t> uid;
  if (a.uid >= 0) uid = static_cast<std::uint16_t>(a.uid);
  if (!a.key_file.empty()) {
    auto text = chain::read_secret_file(a.key_file);
    auto addr = text.is_ok() ? chain::keystore_address(*text) : Result<chain::Address>(text.status());
    if (!addr.is_ok()) {
      c.fail("key", addr.status().message(), "give the node's keystore file (crucible wallet new)");
      return std::nullopt;
    }
    address = *addr;
    const chain::Hash32 hotkey = chain::substrate::mirror_account(*address);
    for (const auto& n : mg.neurons)
      if (n.hotkey == hotkey) uid = n.uid;
    auto balance = ch.eth().balance(*address);
    if (balance.is_ok()) c.info("balance", fmt::format("{} wei at {}", balance->to_decimal(), address->checksum()));
    if (!uid) {
      c.fail("registration",
             fmt::format("{} (hotkey {}) is not registered on netuid {}", address->checksum(),
                         chain::substrate::ss58(hotkey), netuid),
             fmt::format("crucible chain register --key {} (it burns the registration cost)", a.key_file));
      return std::nullopt;
    }
  }
  if (*uid >= mg.neurons.size()) {
    c.fail("registration", fmt::format("uid {} is not in the metagraph of {} uids", *uid, mg.neurons.size()),
           "pick a registered uid");
    return std::nullopt;
  }
  c.ok("registration", fmt::format("uid {}, hotkey {}", *uid, chain::substrate::ss58(mg.neurons[*uid].hotkey)));
  return uid;
}

// Stake, validator permit and the weights rate limit of the node's neuron.
void check_standing(Checklist& c, const chain::Neuron& me, const chain::SubnetParams& sp, std::uint64_t id,
                    const Result<std::uint64_t>& head) {
  const std::string stake_todo = id == chain::kLocalChainId
                                     ? fmt::format("crucible chain stake --uid {} --amount TAO --permit", me.uid)
                                     : "stake TAO to the hotkey (btcli stake add), then wait an epoch for the permit";
  if (me.stake < sp.stake_threshold) {
    c.warn("stake",
           fmt::format("{} is below the threshold {}: a validator's weights are refused", tao(me.stake),
                       tao(sp.stake_threshold)),
           stake_todo);
  } else {
    c.ok("stake", tao(me.stake) + " (all subnets, as getStake reports it)");
  }
  if (me.validator_permit) {
    c.ok("validator permit", "yes");
  } else {
    c.warn("validator permit", "no: as a validator its weights would be refused (NeuronNoValidatorPermit)", stake_todo);
  }
  if (sp.rate_limit > 0 && head.is_ok() && *head + 1 < me.last_update + sp.rate_limit) {
    c.info("next weights", fmt::format("after block {} (rate limit from the last update at {})",
                                       me.last_update + sp.rate_limit, me.last_update));
  }
}

// The commitment proxy: a NonTransfer (or wider) proxy of the hotkey with
// no delay, the node's own commitment key when its password is at hand.
void check_proxy(Checklist& c, chain::EvmChain& ch, const PreflightArgs& a, const chain::Neuron& me,
                 const std::optional<chain::Address>& address) {
  auto proxies = ch.proxies(me.hotkey);
  if (!proxies.is_ok()) {
    c.fail("commitment proxy",
           fmt::format("the Proxy precompile (0x80b) does not answer: {}", proxies.status().message()),
           "an endpoint whose runtime has the Proxy precompile (subtensor with precompiles/src/proxy.rs)");
    return;
  }
  std::optional<chain::PrivateKey> key = address ? key_without_prompt(a) : std::nullopt;
  std::optional<chain::Hash32> ours;
  std::optional<chain::Address> proxy_address;
  if (key) {
    proxy_address = chain::commitment_proxy_key(*key).address();
    ours = chain::substrate::mirror_account(*proxy_address);
  }
  bool found = false;
  for (const auto& p : *proxies) {
    const bool lets_commit = p.delay == 0 && (p.proxy_type == 0 || p.proxy_type == 2 || p.proxy_type == 3);
    if (lets_commit && (!ours || p.delegate == *ours)) found = true;
  }
  const std::string todo = a.key_file.empty() ? "crucible chain proxy --key KEYFILE (the node's key)"
                                              : fmt::format("crucible chain proxy --key {}", a.key_file);
  if (!found) {
    c.fail(
        "commitment proxy",
        ours ? fmt::format("the commitment key {} is not a NonTransfer proxy of the hotkey", proxy_address->checksum())
             : "the hotkey has no proxy that may write its commitment",
        todo + " (a node also sets it up when it first publishes its location)");
  } else if (proxy_address) {
    auto balance = ch.eth().balance(*proxy_address);
    if (balance.is_ok() && *balance < chain::U256(chain::kCommitmentGasFundsWei / 2)) {
      c.warn("commitment proxy",
             fmt::format("{} is a proxy but holds {} wei for gas", proxy_address->checksum(), balance->to_decimal()),
             todo + " (it tops the key up)");
    } else {
      c.ok("commitment proxy", fmt::format("{} (NonTransfer)", proxy_address->checksum()));
    }
  } else {
    c.ok("commitment proxy",
         a.key_file.empty() ? "a proxy may write the commitment"
                            : "a proxy may write the commitment (give --password-file to check it is this node's)");
  }
}

// The commitment: a store location, and that store answering as peers
// would read it.
void check_commitment(Checklist& c, chain::EvmChain& ch, const NodeConfig& config, std::uint16_t uid) {
  auto committed = ch.commitment(config.chain.netuid, uid);
  if (!committed.is_ok()) {
    c.fail("commitment", fmt::format("unreadable: {}", committed.status().message()),
           "start the node: it writes its location again");
    return;
  }
  if (!*committed) {
    c.warn("commitment", "none yet", "start the node: it publishes its store location at start-up");
    return;
  }
  auto location = storage::decode_location(**committed);
  if (!location.is_ok()) {
    c.fail("commitment", fmt::format("not a store location: {}", location.status().message()),
           "start the node: it writes its location again");
    return;
  }
  c.ok("commitment", fmt::format("{} ({} bytes)", location->url, (*committed)->size()));
  auto store = protocol::default_store_opener(peer_policy(config, config.storage.retry_policy().deadline))(*location);
  auto answer = store.is_ok() ? (*store)->list("v1/", std::nullopt, 1).status() : store.status();
  if (answer.is_ok()) {
    c.ok("store", "reachable with the published read key");
  } else {
    c.fail("store", fmt::format("not reachable as peers would read it: {}", answer.message()),
           "check the bucket, its endpoint and the read key pair in [storage]");
  }
}

int preflight(const PreflightArgs& a, char** envp) {
  NodeConfig config;
  if (Status st = load_node_config(Role::kAny, a.common, envp, config); !st.is_ok()) {
    fmt::print(stderr, "crucible chain preflight: {}\n", st.message());
    return kExitUsage;
  }
  if ((a.uid < 0) == a.key_file.empty()) {
    fmt::print(stderr, "crucible chain preflight: give --key or --uid (one of them)\n");
    return kExitUsage;
  }
  const std::uint16_t netuid = config.chain.netuid;
  Checklist c;
  fmt::print("preflight of {} for netuid {}\n", config.chain.rpc_url, netuid);
  chain::EvmChainOptions eo = chain::to_evm_options(config.chain);
  eo.expected_chain_id = 0;  // reported below rather than refused
  auto connected = chain::EvmChain::connect(eo, std::nullopt);
  if (!connected.is_ok()) {
    c.fail("endpoint", connected.status().message(), "check chain.rpc_url (Bittensor: the node's port 9944)");
    return kExitFailure;
  }
  chain::EvmChain& ch = **connected;
  const std::uint64_t id = *ch.chain_id();
  const auto head = ch.block_number();
  check_endpoint(c, config, id, head);
  const auto subnet = check_subnet(c, ch, netuid);
  if (!subnet) return kExitFailure;
  report_rules(c, ch, config, subnet->params);
  std::optional<chain::Address> address;
  const auto uid = check_registration(c, ch, a, netuid, subnet->metagraph, address);
  if (!uid) return kExitFailure;
  const chain::Neuron& me = subnet->metagraph.neurons[*uid];
  check_standing(c, me, subnet->params, id, head);
  check_proxy(c, ch, a, me, address);
  check_commitment(c, ch, config, *uid);
  fmt::print("{}\n", c.failures() == 0 ? "preflight passed" : fmt::format("preflight: {} failed", c.failures()));
  return c.failures() == 0 ? kExitOk : kExitFailure;
}

}  // namespace

void add_preflight_command(CLI::App& chain_group, int& exit_code, char** envp) {
  auto args = std::make_shared<PreflightArgs>();
  CLI::App* p = chain_group.add_subcommand(
      "preflight", "Read-only checks of the chain endpoint and one node's registration, stake, proxy and commitment");
  add_common_flags(*p, args->common);
  p->add_option("-k,--key", args->key_file, "The node's keystore (its address is read; no password needed)");
  p->add_option("--password-file", args->password_file,
                "Its password (or CRUCIBLE_WALLET_PASSWORD): also checks the commitment key and its gas");
  p->add_option("--uid", args->uid, "Or a uid")->check(CLI::Range(0, 65535));
  p->callback([args, &exit_code, envp] { exit_code = preflight(*args, envp); });
}

}  // namespace crucible::cli
