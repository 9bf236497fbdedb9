#include "crucible/chain/eth.h"

#include "crucible/chain/rpc_client.h"

#include <algorithm>
#include <charconv>

namespace crucible::chain {
namespace {

using nlohmann::json;

Result<Hash32> parse_hash(const json& v) {
  if (!v.is_string()) return data_loss("expected a 32-byte hex hash");
  auto h = from_hex_fixed<32>(v.get<std::string>());
  if (!h.is_ok()) return data_loss("bad hash: {}", h.status().message());
  return *h;
}

Result<Bytes> parse_data(const json& v) {
  if (!v.is_string()) return data_loss("expected hex data");
  auto b = from_hex(v.get<std::string>());
  if (!b.is_ok()) return data_loss("bad hex data: {}", b.status().message());
  return b;
}

json call_object(const Address& to, ByteSpan data, const std::optional<Address>& from) {
  json o = {{"to", to.hex()}, {"data", to_hex(data)}};
  if (from) o["from"] = from->hex();
  return o;
}

}  // namespace

Result<std::uint64_t> parse_quantity(const json& v) {
  if (!v.is_string()) return data_loss("expected a hex quantity, got {}", v.dump().substr(0, 40));
  std::string s = v.get<std::string>();
  if (s.size() < 3 || s[0] != '0' || s[1] != 'x' || s.size() > 18)
    return data_loss("bad quantity '{}'", s.substr(0, 40));
  std::uint64_t out = 0;
  auto [end, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), out, 16);
  if (ec != std::errc() || end != s.data() + s.size()) return data_loss("bad quantity '{}'", s);
  return out;
}

std::string quantity(std::uint64_t v) { return U256(v).to_quantity(); }

Result<std::uint64_t> EthClient::chain_id() {
  CRUCIBLE_ASSIGN_OR_RETURN(json r, rpc_.call("eth_chainId"));
  return parse_quantity(r);
}

Result<std::uint64_t> EthClient::block_number() {
  CRUCIBLE_ASSIGN_OR_RETURN(json r, rpc_.call("eth_blockNumber"));
  return parse_quantity(r);
}

Result<BlockHeader> EthClient::block(std::uint64_t number) {
  CRUCIBLE_ASSIGN_OR_RETURN(json r, rpc_.call("eth_getBlockByNumber", json::array({quantity(number), false})));
  if (r.is_null()) return not_found("block {} does not exist yet", number);
  if (!r.is_object()) return data_loss("eth_getBlockByNumber: not an object");
  BlockHeader h;
  CRUCIBLE_ASSIGN_OR_RETURN(h.number, parse_quantity(r.value("number", json())));
  CRUCIBLE_ASSIGN_OR_RETURN(h.timestamp, parse_quantity(r.value("timestamp", json())));
  CRUCIBLE_ASSIGN_OR_RETURN(h.hash, parse_hash(r.value("hash", json())));
  if (r.contains("baseFeePerGas") && !r["baseFeePerGas"].is_null()) {
    CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t fee, parse_quantity(r["baseFeePerGas"]));
    h.base_fee = fee;
  }
  return h;
}

Result<U256> EthClient::balance(const Address& who) {
  CRUCIBLE_ASSIGN_OR_RETURN(json r, rpc_.call("eth_getBalance", json::array({who.hex(), "latest"})));
  if (!r.is_string()) return data_loss("eth_getBalance: not a quantity");
  return U256::parse(r.get<std::string>());
}

Result<std::uint64_t> EthClient::pending_nonce(const Address& who) {
  CRUCIBLE_ASSIGN_OR_RETURN(json r, rpc_.call("eth_getTransactionCount", json::array({who.hex(), "pending"})));
  return parse_quantity(r);
}

Result<std::uint64_t> EthClient::latest_nonce(const Address& who) {
  CRUCIBLE_ASSIGN_OR_RETURN(json r, rpc_.call("eth_getTransactionCount", json::array({who.hex(), "latest"})));
  return parse_quantity(r);
}

Result<Bytes> EthClient::call(const Address& to, ByteSpan data, const std::optional<Address>& from) {
  CRUCIBLE_ASSIGN_OR_RETURN(json r, rpc_.call("eth_call", json::array({call_object(to, data, from), "latest"})));
  return parse_data(r);
}

Result<std::uint64_t> EthClient::estimate_gas(const Address& from, const Address& to, ByteSpan data) {
  CRUCIBLE_ASSIGN_OR_RETURN(json r, rpc_.call("eth_estimateGas", json::array({call_object(to, data, from)})));
  return parse_quantity(r);
}

Result<FeeEstimate> EthClient::estimate_fees() {
  // eth_feeHistory: the next block's base fee and the median tip of recent blocks.
  auto history = rpc_.call("eth_feeHistory", json::array({quantity(5), "latest", json::array({50})}));
  if (history.is_ok() && history->is_object() && history->contains("baseFeePerGas") &&
      (*history)["baseFeePerGas"].is_array() && !(*history)["baseFeePerGas"].empty()) {
    CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t next_base, parse_quantity((*history)["baseFeePerGas"].back()));
    std::vector<std::uint64_t> tips;
    if (history->contains("reward") && (*history)["reward"].is_array()) {
      for (const auto& row : (*history)["reward"]) {
        if (row.is_array() && !row.empty()) {
          auto t = parse_quantity(row[0]);
          if (t.is_ok()) tips.push_back(*t);
        }
      }
    }
    std::sort(tips.begin(), tips.end());
    std::uint64_t tip = tips.empty() ? 0 : tips[tips.size() / 2];
    FeeEstimate f;
    f.max_priority_fee = tip;
    // Twice the base fee: room for six full blocks of base-fee growth.
    f.max_fee = next_base * 2 + tip;
    return f;
  }
  CRUCIBLE_ASSIGN_OR_RETURN(json gp, rpc_.call("eth_gasPrice"));
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t price, parse_quantity(gp));
  FeeEstimate f;
  f.eip1559 = false;
  f.max_fee = price;
  f.max_priority_fee = price;
  return f;
}

Result<Hash32> EthClient::send_raw(ByteSpan raw) {
  CRUCIBLE_ASSIGN_OR_RETURN(json r, rpc_.call("eth_sendRawTransaction", json::array({to_hex(raw)})));
  return parse_hash(r);
}

Result<std::optional<Receipt>> EthClient::receipt(const Hash32& tx) {
  CRUCIBLE_ASSIGN_OR_RETURN(json r, rpc_.call("eth_getTransactionReceipt", json::array({to_hex(tx)})));
  if (r.is_null()) return std::optional<Receipt>();
  if (!r.is_object()) return data_loss("eth_getTransactionReceipt: not an object");
  Receipt out;
  out.tx_hash = tx;
  CRUCIBLE_ASSIGN_OR_RETURN(out.block_number, parse_quantity(r.value("blockNumber", json())));
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t status, parse_quantity(r.value("status", json())));
  out.success = status == 1;
  CRUCIBLE_ASSIGN_OR_RETURN(out.gas_used, parse_quantity(r.value("gasUsed", json())));
  return std::optional<Receipt>(out);
}

Result<std::optional<TxInfo>> EthClient::transaction(const Hash32& tx) {
  CRUCIBLE_ASSIGN_OR_RETURN(json r, rpc_.call("eth_getTransactionByHash", json::array({to_hex(tx)})));
  if (r.is_null()) return std::optional<TxInfo>();
  if (!r.is_object()) return data_loss("eth_getTransactionByHash: not an object");
  TxInfo info;
  info.hash = tx;
  CRUCIBLE_ASSIGN_OR_RETURN(info.nonce, parse_quantity(r.value("nonce", json())));
  if (r.contains("blockNumber") && !r["blockNumber"].is_null()) {
    CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t b, parse_quantity(r["blockNumber"]));
    info.block_number = b;
  }
  return std::optional<TxInfo>(info);
}

}  // namespace crucible::chain
