// Sends signed transactions for one key and sees them through: gas
// estimation (a revert surfaces before anything is sent), fees from
// eth_feeHistory (fallback eth_gasPrice), nonce management, receipt polling
// with a deadline, replacement of a stuck transaction with bumped fees, and
// detection of a transaction the node dropped (anvil silently drops one
// signed for the wrong chain id).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "crucible/chain/eth.h"
#include "crucible/chain/rpc_client.h"
#include "crucible/chain/transaction.h"

namespace crucible::chain {

class TxSender {
 public:
  TxSender(EthClient& eth, PrivateKey key, std::uint64_t chain_id, TxOptions options = {});

  const Address& address() const noexcept { return address_; }

  // Estimates gas (unless given), signs with the next nonce, sends, and waits
  // for the receipt. A mined transaction that reverted is failed_precondition
  // with the reason; no receipt within the deadline is deadline_exceeded.
  // `value` (wei) moves with it.
  Result<SentTx> send(const Address& to, const Bytes& data, std::optional<std::uint64_t> gas_limit = std::nullopt,
                      const U256& value = U256());

  // Waits for any of `hashes` (versions of one nonce) to be mined, e.g. a
  // transaction found in flight after a restart.
  Result<Receipt> wait(const std::vector<Hash32>& hashes);

 private:
  struct Draft {
    Address to;
    Bytes data;
    U256 value;
    std::uint64_t nonce = 0;
    std::uint64_t gas = 0;
    FeeEstimate fees;
  };
  SignedTx sign_draft(const Draft& d) const;
  Status check_chain_id();
  Status with_funds_hint(Status st) const;
  Result<std::string> revert_reason(const Draft& d);
  // send()'s steps: the draft (gas, fees, nonce); one signed version of it
  // sent (its hash added to out.hashes); a stuck nonce's replacement.
  Result<Draft> draft(const Address& to, const Bytes& data, std::optional<std::uint64_t> gas_limit, const U256& value);
  Status send_version(const Draft& d, SentTx& out);
  Status replace_if_stuck(Draft& d, SentTx& out, int& replacements);

  EthClient& eth_;
  PrivateKey key_;
  Address address_;
  std::uint64_t chain_id_;
  TxOptions options_;
  bool chain_checked_ = false;
  std::optional<std::uint64_t> next_nonce_;
};

}  // namespace crucible::chain
