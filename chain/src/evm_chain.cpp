#include "crucible/chain/evm_chain.h"

#include <sys/random.h>

#include "crucible/chain/abi.h"
#include "crucible/chain/rpc_client.h"
#include "crucible/chain/substrate.h"
#include "crucible/chain/tx_sender.h"
#include "crucible/common/log.h"

namespace crucible::chain {
namespace {

using abi::Value;
using nlohmann::json;

Result<abi::Value> decode_single(std::string_view returns, const Bytes& data) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto types, abi::parse_types(returns));
  CRUCIBLE_ASSIGN_OR_RETURN(auto values, abi::decode(types, data));
  if (values.size() == 1) return values[0];
  return Value::list(std::move(values));
}

Hash32 word_bytes(const Value& v) { return v.word().be(); }

Value byte_array(ByteSpan bytes) {
  std::vector<Value> items;
  items.reserve(bytes.size());
  for (std::uint8_t b : bytes) items.push_back(Value::uint(b));
  return Value::list(std::move(items));
}

std::string block_tag(std::optional<std::uint64_t> at_block) {
  return at_block ? U256(*at_block).to_quantity() : std::string("latest");
}

}  // namespace

PrivateKey commitment_proxy_key(const PrivateKey& node_key) {
  Keccak256 h;
  h.update(as_bytes("crucible/commitment-proxy/v1"));
  h.update(node_key.secret_bytes());
  Hash32 k = h.finish();
  // A hash is a valid secp256k1 key but with probability ~2^-128; hash again if not.
  while (true) {
    auto key = PrivateKey::from_bytes(k);
    if (key.is_ok()) return std::move(*key);
    Keccak256 again;
    again.update(k);
    k = again.finish();
  }
}

Hash32 Chain::hotkey_of(const Address& address) const { return substrate::mirror_account(address); }

Result<std::unique_ptr<EvmChain>> EvmChain::connect(EvmChainOptions options, std::optional<PrivateKey> key) {
  RpcClient probe(options.rpc);
  EthClient eth(probe);
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t id, eth.chain_id());
  if (options.expected_chain_id != 0 && id != options.expected_chain_id) {
    return failed_precondition("the node at {} is chain {}, but chain {} was configured", options.rpc.url, id,
                               options.expected_chain_id);
  }
  return std::unique_ptr<EvmChain>(new EvmChain(std::move(options), id, std::move(key)));
}

EvmChain::EvmChain(EvmChainOptions options, std::uint64_t chain_id, std::optional<PrivateKey> key)
    : options_(std::move(options)), rpc_(std::make_unique<RpcClient>(options_.rpc)), eth_(*rpc_), chain_id_(chain_id) {
  if (key) {
    proxy_sender_ = std::make_unique<TxSender>(eth_, commitment_proxy_key(*key), chain_id_, options_.tx);
    sender_ = std::make_unique<TxSender>(eth_, std::move(*key), chain_id_, options_.tx);
  }
}

EvmChain::~EvmChain() = default;

RpcClient& EvmChain::rpc() { return *rpc_; }

std::optional<Address> EvmChain::signer() const {
  if (!sender_) return std::nullopt;
  return sender_->address();
}

Result<std::uint64_t> EvmChain::chain_id() { return chain_id_; }
Result<std::uint64_t> EvmChain::block_number() { return eth_.block_number(); }
Result<BlockHeader> EvmChain::block(std::uint64_t number) { return eth_.block(number); }

Result<Value> EvmChain::view(const Address& to, std::string_view signature, const std::vector<Value>& args,
                             std::string_view returns) {
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes data, abi::encode_call(signature, args));
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes out, eth_.call(to, data));
  auto v = decode_single(returns, out);
  if (!v.is_ok()) return v.status().with_context(std::string(signature));
  return v;
}

Result<SentTx> EvmChain::transact(const Address& to, std::string_view signature, const std::vector<Value>& args) {
  if (!sender_) return failed_precondition("{}: this chain client has no key (read-only)", signature);
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes data, abi::encode_call(signature, args));
  auto sent = sender_->send(to, data);
  if (!sent.is_ok()) return sent.status().with_context(std::string(signature));
  return sent;
}

Result<Metagraph> EvmChain::metagraph(std::uint16_t netuid) {
  Metagraph mg;
  mg.netuid = netuid;
  CRUCIBLE_ASSIGN_OR_RETURN(mg.block, eth_.block_number());
  CRUCIBLE_ASSIGN_OR_RETURN(Value count,
                            view(options_.metagraph, "getUidCount(uint16)", {Value::uint(netuid)}, "uint16"));
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t n, count.as_u64());

  // Six getters per uid, sent as JSON-RPC batches (N*6 eth_calls otherwise).
  struct Getter {
    const char* signature;
    const char* returns;
  };
  static constexpr Getter kGetters[] = {
      {"getHotkey(uint16,uint16)", "bytes32"}, {"getColdkey(uint16,uint16)", "bytes32"},
      {"getStake(uint16,uint16)", "uint64"},   {"getValidatorStatus(uint16,uint16)", "bool"},
      {"getIsActive(uint16,uint16)", "bool"},  {"getLastUpdate(uint16,uint16)", "uint64"}};
  std::vector<RpcRequest> requests;
  for (std::uint64_t uid = 0; uid < n; ++uid) {
    for (const auto& g : kGetters) {
      CRUCIBLE_ASSIGN_OR_RETURN(Bytes data, abi::encode_call(g.signature, {Value::uint(netuid), Value::uint(uid)}));
      requests.push_back(
          {"eth_call", json::array({json{{"to", options_.metagraph.hex()}, {"data", to_hex(data)}}, "latest"})});
    }
  }
  std::vector<Result<json>> replies;
  for (std::size_t start = 0; start < requests.size(); start += options_.batch_size) {
    std::vector<RpcRequest> chunk(
        requests.begin() + static_cast<std::ptrdiff_t>(start),
        requests.begin() + static_cast<std::ptrdiff_t>(std::min(requests.size(), start + options_.batch_size)));
    CRUCIBLE_ASSIGN_OR_RETURN(auto part, rpc_->batch(chunk));
    for (auto& r : part) replies.push_back(std::move(r));
  }
  mg.neurons.resize(n);
  for (std::uint64_t uid = 0; uid < n; ++uid) {
    Neuron& nr = mg.neurons[uid];
    nr.uid = static_cast<std::uint16_t>(uid);
    std::vector<Value> values;
    for (std::size_t g = 0; g < std::size(kGetters); ++g) {
      const auto& reply = replies[uid * std::size(kGetters) + g];
      if (!reply.is_ok()) return reply.status().with_context(fmt::format("metagraph uid {}", uid));
      if (!reply->is_string()) return data_loss("metagraph uid {}: eth_call result is not hex", uid);
      CRUCIBLE_ASSIGN_OR_RETURN(Bytes raw, from_hex(reply->get<std::string>()));
      auto v = decode_single(kGetters[g].returns, raw);
      if (!v.is_ok()) return v.status().with_context(fmt::format("metagraph uid {} {}", uid, kGetters[g].signature));
      values.push_back(std::move(*v));
    }
    nr.hotkey = word_bytes(values[0]);
    nr.coldkey = word_bytes(values[1]);
    CRUCIBLE_ASSIGN_OR_RETURN(nr.stake, values[2].as_u64());
    CRUCIBLE_ASSIGN_OR_RETURN(nr.validator_permit, values[3].as_bool());
    CRUCIBLE_ASSIGN_OR_RETURN(nr.active, values[4].as_bool());
    CRUCIBLE_ASSIGN_OR_RETURN(nr.last_update, values[5].as_u64());
  }
  return mg;
}

Result<Bytes> EvmChain::storage(ByteSpan key, std::optional<std::uint64_t> at_block) {
  CRUCIBLE_ASSIGN_OR_RETURN(
      nlohmann::json r,
      rpc_->call("eth_call", json::array({json{{"to", options_.storage_query.hex()}, {"data", to_hex(key)}},
                                          block_tag(at_block)})));
  if (!r.is_string()) return data_loss("StorageQuery: the result is not hex");
  auto bytes = from_hex(r.get<std::string>());
  if (!bytes.is_ok()) return bytes.status().with_context("StorageQuery");
  return bytes;
}

Result<std::uint64_t> EvmChain::storage_uint(std::string_view item, std::uint16_t netuid, std::size_t width,
                                             std::uint64_t absent, std::optional<std::uint64_t> at_block) {
  const Bytes key = item == "StakeThreshold" ? substrate::subtensor_storage_key(item)
                                             : substrate::subtensor_storage_key(item, netuid);
  auto raw = storage(key, at_block);
  if (!raw.is_ok()) return raw.status().with_context(fmt::format("SubtensorModule.{}", item));
  auto v = substrate::decode_storage_uint(*raw, width, absent);
  if (!v.is_ok()) return v.status().with_context(fmt::format("SubtensorModule.{}", item));
  return v;
}

Result<SubnetParams> EvmChain::subnet_params(std::uint16_t netuid) {
  SubnetParams p;
  const std::vector<Value> args = {Value::uint(netuid)};
  CRUCIBLE_ASSIGN_OR_RETURN(Value cr, view(options_.subnet, "getCommitRevealWeightsEnabled(uint16)", args, "bool"));
  CRUCIBLE_ASSIGN_OR_RETURN(p.commit_reveal, cr.as_bool());
  CRUCIBLE_ASSIGN_OR_RETURN(Value vk, view(options_.subnet, "getWeightsVersionKey(uint16)", args, "uint64"));
  CRUCIBLE_ASSIGN_OR_RETURN(p.version_key, vk.as_u64());
  CRUCIBLE_ASSIGN_OR_RETURN(Value rl, view(options_.subnet, "getWeightsSetRateLimit(uint16)", args, "uint64"));
  CRUCIBLE_ASSIGN_OR_RETURN(p.rate_limit, rl.as_u64());
  CRUCIBLE_ASSIGN_OR_RETURN(Value rp, view(options_.subnet, "getCommitRevealWeightsInterval(uint16)", args, "uint64"));
  CRUCIBLE_ASSIGN_OR_RETURN(p.reveal_period, rp.as_u64());
  CRUCIBLE_ASSIGN_OR_RETURN(Value mw, view(options_.subnet, "getMinAllowedWeights(uint16)", args, "uint16"));
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t min_weights, mw.as_u64());
  p.min_allowed_weights = static_cast<std::uint16_t>(min_weights);
  CRUCIBLE_ASSIGN_OR_RETURN(Value ml, view(options_.subnet, "getMaxWeightLimit(uint16)", args, "uint16"));
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t max_limit, ml.as_u64());
  p.max_weight_limit = static_cast<std::uint16_t>(max_limit);
  // Tempo has no getter in the Subnet precompile; its storage has a value
  // from the subnet's creation (subnets/subnet.rs), 360 by default.
  CRUCIBLE_ASSIGN_OR_RETURN(p.tempo, storage_uint("Tempo", netuid, 2, 360));
  CRUCIBLE_ASSIGN_OR_RETURN(p.stake_threshold, storage_uint("StakeThreshold", netuid, 8, 0));
  return p;
}

Result<std::uint64_t> EvmChain::subnet_epoch(std::uint16_t netuid, std::optional<std::uint64_t> at_block) {
  return storage_uint("SubnetEpochIndex", netuid, 8, 0, at_block);
}

Result<std::uint64_t> EvmChain::registration_burn(std::uint16_t netuid) { return storage_uint("Burn", netuid, 8, 0); }

Result<SentTx> EvmChain::set_weights(std::uint16_t netuid, const std::vector<std::uint16_t>& uids,
                                     const std::vector<std::uint16_t>& values, std::uint64_t version_key) {
  if (uids.size() != values.size()) {
    return invalid_argument("set_weights: {} uids but {} weights", uids.size(), values.size());
  }
  CRUCIBLE_ASSIGN_OR_RETURN(SubnetParams p, subnet_params(netuid));
  if (p.commit_reveal) {
    return failed_precondition("set_weights: subnet {} has commit-reveal enabled; commit and reveal instead", netuid);
  }
  return transact(
      options_.neuron, "setWeights(uint16,uint16[],uint16[],uint64)",
      {Value::uint(netuid), Value::uint16_array(uids), Value::uint16_array(values), Value::uint(version_key)});
}

Result<WeightsCommit> EvmChain::make_commit(std::uint16_t netuid, std::vector<std::uint16_t> uids,
                                            std::vector<std::uint16_t> values, std::uint64_t version_key) {
  if (!sender_) return failed_precondition("make_commit: this chain client has no key");
  WeightsCommit c;
  c.netuid = netuid;
  c.uids = std::move(uids);
  c.values = std::move(values);
  c.version_key = version_key;
  c.salt.resize(8);
  if (getrandom(c.salt.data(), c.salt.size() * sizeof(std::uint16_t), 0) !=
      static_cast<ssize_t>(c.salt.size() * sizeof(std::uint16_t))) {
    return internal_error("getrandom failed");
  }
  c.hash = substrate::weights_commit_hash(substrate::mirror_account(sender_->address()), netuid, c.uids, c.values,
                                          c.salt, version_key);
  return c;
}

Result<SentTx> EvmChain::commit_weights(const WeightsCommit& c) {
  return transact(options_.neuron, "commitWeights(uint16,bytes32)", {Value::uint(c.netuid), Value::word(c.hash)});
}

Result<SentTx> EvmChain::reveal_weights(const WeightsCommit& c) {
  return transact(options_.neuron, "revealWeights(uint16,uint16[],uint16[],uint16[],uint64)",
                  {Value::uint(c.netuid), Value::uint16_array(c.uids), Value::uint16_array(c.values),
                   Value::uint16_array(c.salt), Value::uint(c.version_key)});
}

Result<SentTx> EvmChain::register_neuron(std::uint16_t netuid, const Hash32& hotkey) {
  return transact(options_.neuron, "burnedRegister(uint16,bytes32)", {Value::uint(netuid), Value::word(hotkey)});
}

Result<std::optional<std::string>> EvmChain::commitment(std::uint16_t netuid, std::uint16_t uid) {
  CRUCIBLE_ASSIGN_OR_RETURN(Value hk, view(options_.metagraph, "getHotkey(uint16,uint16)",
                                           {Value::uint(netuid), Value::uint(uid)}, "bytes32"));
  const Hash32 hotkey = word_bytes(hk);
  Bytes scale;
  if (options_.commitments == CommitmentSource::kContract) {
    CRUCIBLE_ASSIGN_OR_RETURN(Value v, view(options_.commitments_contract, "commitmentOf(uint16,bytes32)",
                                            {Value::uint(netuid), Value::word(hotkey)}, "bytes"));
    scale = v.data();
  } else {
    Bytes key = substrate::commitment_storage_key(netuid, hotkey);
    CRUCIBLE_ASSIGN_OR_RETURN(json r, rpc_->call("state_getStorage", json::array({to_hex(key)})));
    if (r.is_null()) return std::optional<std::string>();
    if (!r.is_string()) return data_loss("state_getStorage: result is not hex");
    CRUCIBLE_ASSIGN_OR_RETURN(scale, from_hex(r.get<std::string>()));
  }
  if (scale.empty()) return std::optional<std::string>();
  auto text = substrate::decode_commitment(scale);
  if (!text.is_ok()) return text.status().with_context(fmt::format("the commitment of uid {}", uid));
  return std::optional<std::string>(std::move(*text));
}

Result<std::vector<ProxyEntry>> EvmChain::proxies(const Hash32& account) {
  CRUCIBLE_ASSIGN_OR_RETURN(
      Value v, view(options_.proxy, "getProxies(bytes32)", {Value::word(account)}, "(bytes32,uint256,uint256)[]"));
  std::vector<ProxyEntry> out;
  for (const Value& item : v.items()) {
    if (item.items().size() != 3) return data_loss("getProxies: an entry of {} members", item.items().size());
    ProxyEntry e;
    e.delegate = word_bytes(item.items()[0]);
    CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t type, item.items()[1].as_u64());
    CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t delay, item.items()[2].as_u64());
    if (type > 255 || delay > 0xFFFFFFFFu) return data_loss("getProxies: type {} delay {} out of range", type, delay);
    e.proxy_type = static_cast<std::uint8_t>(type);
    e.delay = static_cast<std::uint32_t>(delay);
    out.push_back(e);
  }
  return out;
}

Result<Address> EvmChain::commitment_proxy_address() const {
  if (!sender_) return failed_precondition("this chain client has no key");
  return proxy_sender_->address();
}

Result<std::vector<std::string>> EvmChain::ensure_commitment_proxy(std::uint64_t gas_funds_wei) {
  if (!sender_) return failed_precondition("the commitment proxy needs the node's key");
  std::vector<std::string> done;
  const Hash32 real = substrate::mirror_account(sender_->address());
  const Hash32 delegate = substrate::mirror_account(proxy_sender_->address());
  CRUCIBLE_ASSIGN_OR_RETURN(auto list, proxies(real));
  bool present = false;
  for (const auto& e : list)
    present = present || (e.delegate == delegate && e.proxy_type == kCommitmentProxyType && e.delay == 0);
  if (!present) {
    auto sent = transact(options_.proxy, "addProxy(bytes32,uint8,uint32)",
                         {Value::word(delegate), Value::uint(kCommitmentProxyType), Value::uint(0)});
    if (!sent.is_ok()) return sent.status().with_context("adding the commitment proxy");
    done.push_back(fmt::format("added {} ({}) as a NonTransfer proxy of {}, tx {}", proxy_sender_->address().checksum(),
                               substrate::ss58(delegate), substrate::ss58(real), to_hex(sent->receipt.tx_hash)));
  }
  CRUCIBLE_ASSIGN_OR_RETURN(U256 balance, eth_.balance(proxy_sender_->address()));
  if (balance < U256(gas_funds_wei / 2)) {
    auto sent = sender_->send(proxy_sender_->address(), {}, 21'000, U256(gas_funds_wei));
    if (!sent.is_ok()) return sent.status().with_context("funding the commitment key's gas");
    done.push_back(fmt::format("sent {} wei for gas to the commitment key {}, tx {}", gas_funds_wei,
                               proxy_sender_->address().checksum(), to_hex(sent->receipt.tx_hash)));
  }
  return done;
}

Result<SentTx> EvmChain::remove_commitment_proxy() {
  if (!sender_) return failed_precondition("removing the commitment proxy needs the node's key");
  const Hash32 delegate = substrate::mirror_account(proxy_sender_->address());
  return transact(options_.proxy, "removeProxy(bytes32,uint8,uint32)",
                  {Value::word(delegate), Value::uint(kCommitmentProxyType), Value::uint(0)});
}

Result<SentTx> EvmChain::add_stake(const Hash32& hotkey, std::uint64_t rao, std::uint16_t netuid) {
  return transact(options_.staking, "addStake(bytes32,uint256,uint256)",
                  {Value::word(hotkey), Value::uint(rao), Value::uint(netuid)});
}

// Commitments.set_commitment can only come from a Substrate origin (it is
// Pays::No, which the Dispatch precompile refuses), so the node's
// commitment key calls Proxy.proxy(hotkey, NonTransfer, call) through the
// Proxy precompile's proxyCall; the pallet then sees the hotkey as origin.
Result<SentTx> EvmChain::set_commitment(std::uint16_t netuid, const std::string& data) {
  if (!sender_) return failed_precondition("set_commitment: this chain client has no key (read-only)");
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes call, substrate::set_commitment_call(netuid, data));
  auto ready = ensure_commitment_proxy(kCommitmentGasFundsWei);
  if (!ready.is_ok()) return ready.status().with_context("set_commitment");
  for (const auto& line : *ready) log::info("commitment key: " + line);
  const Hash32 real = substrate::mirror_account(sender_->address());
  CRUCIBLE_ASSIGN_OR_RETURN(
      Bytes input, abi::encode_call("proxyCall(bytes32,uint8[],uint8[])",
                                    {Value::word(real), byte_array(Bytes{kCommitmentProxyType}), byte_array(call)}));
  auto sent = proxy_sender_->send(options_.proxy, input);
  if (!sent.is_ok()) {
    return sent.status().with_context(
        fmt::format("set_commitment through the commitment key {} (`crucible chain "
                    "proxy` sets it up; `crucible chain preflight` checks it)",
                    proxy_sender_->address().checksum()));
  }
  return sent;
}

}  // namespace crucible::chain
