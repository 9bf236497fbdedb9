// Chain over Ethereum JSON-RPC against Bittensor's EVM precompiles (or the
// stand-ins of the local chain at the same addresses).
#pragma once

#include <memory>
#include <optional>

#include "crucible/chain/chain.h"
#include "crucible/chain/uint256.h"

namespace crucible::chain {

namespace abi {
class Value;  // chain/internal_include/crucible/chain/abi.h
}
class RpcClient;
class TxSender;

enum class CommitmentSource : std::uint8_t {
  kContract,   // the local chain: the stand-in contract returns CommitmentOf's SCALE value
  kSubstrate,  // Bittensor: Commitments.CommitmentOf over state_getStorage
};

// The proxy type the commitment key holds for the node's hotkey:
// NonTransfer (3) lets Commitments.set_commitment through and, unlike
// NonCritical (2), denies Balances::* and stake transfers (runtime/src/lib.rs
// define_proxy_filters!), so a leaked commitment key cannot move funds.
inline constexpr std::uint8_t kCommitmentProxyType = 3;
// What set_commitment keeps on the commitment key for gas: 0.05 TAO (a
// proxyCall of a 384-byte commitment costs ~0.01 TAO at a 20 gwei base fee).
inline constexpr std::uint64_t kCommitmentGasFundsWei = 50'000'000'000'000'000ull;

// The second key that writes a node's commitment through the Proxy
// precompile (a proxy of oneself is refused: NoSelfProxy). Derived from the
// node's key (keccak256 of a domain tag and the key), so there is nothing
// else to store or back up; knowing it reveals nothing of the node's key.
PrivateKey commitment_proxy_key(const PrivateKey& node_key);

// A proxy relationship as the Proxy precompile's getProxies reports it.
struct ProxyEntry {
  Hash32 delegate{};
  std::uint8_t proxy_type = 0;
  std::uint32_t delay = 0;
};

struct EvmChainOptions {
  RpcOptions rpc;
  TxOptions tx;
  std::uint64_t expected_chain_id = 0;  // 0: take the node's
  Address metagraph = Address::from_low_u64(0x802);
  Address subnet = Address::from_low_u64(0x803);
  Address neuron = Address::from_low_u64(0x804);
  Address storage_query = Address::from_low_u64(0x807);  // precompiles/src/storage_query.rs (INDEX 2055)
  Address proxy = Address::from_low_u64(0x80b);          // precompiles/src/proxy.rs (INDEX 2059)
  Address staking = Address::from_low_u64(0x805);        // precompiles/src/staking.rs StakingPrecompileV2 (2053)
  CommitmentSource commitments = CommitmentSource::kContract;
  Address commitments_contract = Address::from_low_u64(0xC0C0);
  std::size_t batch_size = 256;  // calls per JSON-RPC batch when reading the metagraph
};

class EvmChain final : public Chain {
 public:
  // `key` signs transactions; without one the chain is read-only.
  static Result<std::unique_ptr<EvmChain>> connect(EvmChainOptions options, std::optional<PrivateKey> key);
  ~EvmChain() override;
  EvmChain(const EvmChain&) = delete;
  EvmChain& operator=(const EvmChain&) = delete;

  Result<std::uint64_t> chain_id() override;
  Result<std::uint64_t> block_number() override;
  Result<BlockHeader> block(std::uint64_t number) override;
  Result<Metagraph> metagraph(std::uint16_t netuid) override;
  Result<SubnetParams> subnet_params(std::uint16_t netuid) override;
  Result<std::uint64_t> subnet_epoch(std::uint16_t netuid, std::optional<std::uint64_t> at_block) override;
  Result<SentTx> set_weights(std::uint16_t netuid, const std::vector<std::uint16_t>& uids,
                             const std::vector<std::uint16_t>& values, std::uint64_t version_key) override;
  Result<SentTx> commit_weights(const WeightsCommit& commit) override;
  Result<SentTx> reveal_weights(const WeightsCommit& commit) override;
  Result<WeightsCommit> make_commit(std::uint16_t netuid, std::vector<std::uint16_t> uids,
                                    std::vector<std::uint16_t> values, std::uint64_t version_key) override;
  Result<SentTx> register_neuron(std::uint16_t netuid, const Hash32& hotkey) override;
  Result<std::optional<std::string>> commitment(std::uint16_t netuid, std::uint16_t uid) override;
  // Through the commitment key (ensure_commitment_proxy first, with
  // kCommitmentGasFundsWei).
  Result<SentTx> set_commitment(std::uint16_t netuid, const std::string& data) override;

  EthClient& eth() { return eth_; }
  RpcClient& rpc();  // the transport (chain/internal_include/crucible/chain/rpc_client.h)
  std::optional<Address> signer() const;

  // A SubtensorModule storage value through the StorageQuery precompile
  // (raw SCALE bytes; empty when the item is absent), at a block or the latest.
  Result<Bytes> storage(ByteSpan key, std::optional<std::uint64_t> at_block = std::nullopt);
  // The proxies `account` has granted (Proxy precompile getProxies).
  Result<std::vector<ProxyEntry>> proxies(const Hash32& account);
  // The commitment key of this chain's signer: its address, and whether it
  // is a NonTransfer proxy of the signer's hotkey.
  Result<Address> commitment_proxy_address() const;
  // Makes the commitment key ready: adds it as a NonTransfer proxy of the
  // signer's mirror account when it is not one (the chain reserves a
  // deposit, ~0.027 TAO, returned by remove_commitment_proxy), and tops its
  // balance up to `gas_funds` wei from the signer when it holds less than
  // half of that. Says what it did (nothing when all was in place).
  Result<std::vector<std::string>> ensure_commitment_proxy(std::uint64_t gas_funds_wei);
  Result<SentTx> remove_commitment_proxy();
  // Stakes `rao` from the signer (its mirror is the coldkey) to `hotkey` on
  // `netuid` (Staking V2 addStake). A validator permit follows at an epoch.
  Result<SentTx> add_stake(const Hash32& hotkey, std::uint64_t rao, std::uint16_t netuid);
  // The registration cost (SubtensorModule Burn, rao) and whether the
  // subnet takes registrations.
  Result<std::uint64_t> registration_burn(std::uint16_t netuid);

 private:
  EvmChain(EvmChainOptions options, std::uint64_t chain_id, std::optional<PrivateKey> key);
  Result<abi::Value> view(const Address& to, std::string_view signature, const std::vector<abi::Value>& args,
                          std::string_view returns);
  Result<SentTx> transact(const Address& to, std::string_view signature, const std::vector<abi::Value>& args);
  Result<std::uint64_t> storage_uint(std::string_view item, std::uint16_t netuid, std::size_t width,
                                     std::uint64_t absent, std::optional<std::uint64_t> at_block = std::nullopt);

  EvmChainOptions options_;
  std::unique_ptr<RpcClient> rpc_;
  EthClient eth_;
  std::uint64_t chain_id_;
  std::unique_ptr<TxSender> sender_;
  std::unique_ptr<TxSender> proxy_sender_;  // the commitment key's
};

}  // namespace crucible::chain
