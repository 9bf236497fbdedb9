#include "crucible/chain/evm_chain.h"

#include <sys/random.h>

#include "crucible/chain/substrate.h"

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

}  // namespace

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
    : options_(std::move(options)), rpc_(options_.rpc), eth_(rpc_), chain_id_(chain_id) {
  if (key) sender_ = std::make_unique<TxSender>(eth_, std::move(*key), chain_id_, options_.tx);
}

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
    CRUCIBLE_ASSIGN_OR_RETURN(auto part, rpc_.batch(chunk));
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

Result<SubnetParams> EvmChain::subnet_params(std::uint16_t netuid) {
  SubnetParams p;
  CRUCIBLE_ASSIGN_OR_RETURN(
      Value cr, view(options_.subnet, "getCommitRevealWeightsEnabled(uint16)", {Value::uint(netuid)}, "bool"));
  CRUCIBLE_ASSIGN_OR_RETURN(p.commit_reveal, cr.as_bool());
  CRUCIBLE_ASSIGN_OR_RETURN(Value vk,
                            view(options_.subnet, "getWeightsVersionKey(uint16)", {Value::uint(netuid)}, "uint64"));
  CRUCIBLE_ASSIGN_OR_RETURN(p.version_key, vk.as_u64());
  CRUCIBLE_ASSIGN_OR_RETURN(Value rl,
                            view(options_.subnet, "getWeightsSetRateLimit(uint16)", {Value::uint(netuid)}, "uint64"));
  CRUCIBLE_ASSIGN_OR_RETURN(p.rate_limit, rl.as_u64());
  return p;
}

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
  if (options_.commitments == CommitmentSource::kContract) {
    CRUCIBLE_ASSIGN_OR_RETURN(Value v, view(options_.commitments_contract, "getCommitment(uint16,uint16)",
                                            {Value::uint(netuid), Value::uint(uid)}, "bytes"));
    if (v.data().empty()) return std::optional<std::string>();
    return std::optional<std::string>(v.as_string());
  }
  CRUCIBLE_ASSIGN_OR_RETURN(Value hk, view(options_.metagraph, "getHotkey(uint16,uint16)",
                                           {Value::uint(netuid), Value::uint(uid)}, "bytes32"));
  Bytes key = substrate::commitment_storage_key(netuid, word_bytes(hk));
  CRUCIBLE_ASSIGN_OR_RETURN(json r, rpc_.call("state_getStorage", json::array({to_hex(key)})));
  if (r.is_null()) return std::optional<std::string>();
  if (!r.is_string()) return data_loss("state_getStorage: result is not hex");
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes scale, from_hex(r.get<std::string>()));
  CRUCIBLE_ASSIGN_OR_RETURN(std::string text, substrate::decode_commitment(scale));
  return std::optional<std::string>(std::move(text));
}

Result<SentTx> EvmChain::set_commitment(std::uint16_t netuid, const std::string& data) {
  if (options_.commitments != CommitmentSource::kContract) {
    return unimplemented(
        "set_commitment: on Bittensor a commitment is a Substrate extrinsic (Commitments.set_commitment) signed "
        "by the hotkey; see docs/chain.md");
  }
  return transact(options_.commitments_contract, "setCommitment(uint16,bytes)",
                  {Value::uint(netuid), Value::bytes(Bytes(data.begin(), data.end()))});
}

}  // namespace crucible::chain
