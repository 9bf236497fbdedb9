// Ethereum transactions: EIP-155 legacy (type 0) and EIP-1559 (type 2),
// signed with a PrivateKey. Deterministic (RFC 6979), so golden vectors hold.
#pragma once

#include <cstdint>
#include <optional>

#include "crucible/chain/keccak.h"
#include "crucible/chain/keys.h"
#include "crucible/chain/uint256.h"
#include "crucible/common/bytes.h"

namespace crucible::chain {

struct LegacyTx {
  std::uint64_t chain_id = 1;
  std::uint64_t nonce = 0;
  std::uint64_t gas_price = 0;  // wei
  std::uint64_t gas_limit = 21'000;
  std::optional<Address> to;  // none: contract creation
  U256 value;
  Bytes data;
};

struct Eip1559Tx {
  std::uint64_t chain_id = 1;
  std::uint64_t nonce = 0;
  std::uint64_t max_priority_fee = 0;  // wei per gas
  std::uint64_t max_fee = 0;           // wei per gas
  std::uint64_t gas_limit = 21'000;
  std::optional<Address> to;
  U256 value;
  Bytes data;
  // The access list is always empty here.
};

struct SignedTx {
  Bytes raw;    // what eth_sendRawTransaction takes
  Hash32 hash;  // keccak(raw): the transaction hash
  Signature signature;
};

Hash32 signing_hash(const LegacyTx& tx);
Hash32 signing_hash(const Eip1559Tx& tx);
SignedTx sign(const LegacyTx& tx, const PrivateKey& key);
SignedTx sign(const Eip1559Tx& tx, const PrivateKey& key);

// The sender of a signed raw transaction (either type), recovered from its signature.
Result<Address> recover_sender(ByteSpan raw);

}  // namespace crucible::chain
