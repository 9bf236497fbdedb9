// Typed Ethereum JSON-RPC calls on top of RpcClient.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "crucible/chain/keccak.h"
#include "crucible/chain/keys.h"
#include "crucible/chain/uint256.h"

namespace crucible::chain {

struct BlockHeader {
  std::uint64_t number = 0;
  std::uint64_t timestamp = 0;  // seconds since the epoch
  Hash32 hash{};
  std::optional<std::uint64_t> base_fee;  // absent before London
};

struct Receipt {
  Hash32 tx_hash{};
  std::uint64_t block_number = 0;
  bool success = false;
  std::uint64_t gas_used = 0;
};

// A transaction as eth_getTransactionByHash reports it.
struct TxInfo {
  Hash32 hash{};
  std::uint64_t nonce = 0;
  std::optional<std::uint64_t> block_number;  // none while pending
};

struct FeeEstimate {
  std::uint64_t max_fee = 0;
  std::uint64_t max_priority_fee = 0;
  bool eip1559 = true;  // false: the node has no fee market; use gas_price = max_fee
};

// How a transaction is sent and waited for (TxSender, internal).
struct TxOptions {
  std::chrono::milliseconds receipt_timeout{60'000};
  std::chrono::milliseconds poll_interval{200};
  std::chrono::milliseconds stuck_after{24'000};  // pending this long: replace with higher fees
  int max_replacements = 3;
  std::uint32_t fee_bump_percent = 25;  // nodes want >= 10 % on both fee fields
  std::uint32_t gas_margin_percent = 25;
  bool verify_chain_id = true;  // compare with eth_chainId before the first send
};

// A transaction as it was mined, with every version of it that was sent.
struct SentTx {
  Receipt receipt;
  std::uint64_t nonce = 0;
  std::vector<Hash32> hashes;  // every version sent; the mined one is receipt.tx_hash
};

// Parses a JSON-RPC quantity ("0x1a") into a uint64; strict.
Result<std::uint64_t> parse_quantity(const nlohmann::json& v);
std::string quantity(std::uint64_t v);

class RpcClient;  // chain/internal_include: the JSON-RPC transport

class EthClient {
 public:
  explicit EthClient(RpcClient& rpc) : rpc_(rpc) {}
  RpcClient& rpc() { return rpc_; }

  Result<std::uint64_t> chain_id();
  Result<std::uint64_t> block_number();
  Result<BlockHeader> block(std::uint64_t number);
  Result<U256> balance(const Address& who);
  Result<std::uint64_t> pending_nonce(const Address& who);
  Result<std::uint64_t> latest_nonce(const Address& who);
  Result<Bytes> call(const Address& to, ByteSpan data, const std::optional<Address>& from = std::nullopt);
  Result<std::uint64_t> estimate_gas(const Address& from, const Address& to, ByteSpan data);
  Result<FeeEstimate> estimate_fees();
  Result<Hash32> send_raw(ByteSpan raw);
  Result<std::optional<Receipt>> receipt(const Hash32& tx);
  Result<std::optional<TxInfo>> transaction(const Hash32& tx);

 private:
  RpcClient& rpc_;
};

}  // namespace crucible::chain
