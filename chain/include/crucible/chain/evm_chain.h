// Chain over Ethereum JSON-RPC against Bittensor's EVM precompiles (or the
// stand-ins of the local chain at the same addresses).
#pragma once

#include <memory>
#include <optional>

#include "crucible/chain/abi.h"
#include "crucible/chain/chain.h"

namespace crucible::chain {

enum class CommitmentSource : std::uint8_t {
  kContract,   // the local chain's stand-in contract
  kSubstrate,  // Bittensor: Commitments.CommitmentOf over state_getStorage
};

struct EvmChainOptions {
  RpcOptions rpc;
  TxOptions tx;
  std::uint64_t expected_chain_id = 0;  // 0: take the node's
  Address metagraph = Address::from_low_u64(0x802);
  Address subnet = Address::from_low_u64(0x803);
  Address neuron = Address::from_low_u64(0x804);
  CommitmentSource commitments = CommitmentSource::kContract;
  Address commitments_contract = Address::from_low_u64(0xC0C0);
  std::size_t batch_size = 256;  // calls per JSON-RPC batch when reading the metagraph
};

class EvmChain final : public Chain {
 public:
  // `key` signs transactions; without one the chain is read-only.
  static Result<std::unique_ptr<EvmChain>> connect(EvmChainOptions options, std::optional<PrivateKey> key);

  Result<std::uint64_t> chain_id() override;
  Result<std::uint64_t> block_number() override;
  Result<BlockHeader> block(std::uint64_t number) override;
  Result<Metagraph> metagraph(std::uint16_t netuid) override;
  Result<SubnetParams> subnet_params(std::uint16_t netuid) override;
  Result<SentTx> set_weights(std::uint16_t netuid, const std::vector<std::uint16_t>& uids,
                             const std::vector<std::uint16_t>& values, std::uint64_t version_key) override;
  Result<SentTx> commit_weights(const WeightsCommit& commit) override;
  Result<SentTx> reveal_weights(const WeightsCommit& commit) override;
  Result<WeightsCommit> make_commit(std::uint16_t netuid, std::vector<std::uint16_t> uids,
                                    std::vector<std::uint16_t> values, std::uint64_t version_key) override;
  Result<SentTx> register_neuron(std::uint16_t netuid, const Hash32& hotkey) override;
  Result<std::optional<std::string>> commitment(std::uint16_t netuid, std::uint16_t uid) override;
  Result<SentTx> set_commitment(std::uint16_t netuid, const std::string& data) override;

  EthClient& eth() { return eth_; }
  std::optional<Address> signer() const;

 private:
  EvmChain(EvmChainOptions options, std::uint64_t chain_id, std::optional<PrivateKey> key);
  Result<abi::Value> view(const Address& to, std::string_view signature, const std::vector<abi::Value>& args,
                          std::string_view returns);
  Result<SentTx> transact(const Address& to, std::string_view signature, const std::vector<abi::Value>& args);

  EvmChainOptions options_;
  RpcClient rpc_;
  EthClient eth_;
  std::uint64_t chain_id_;
  std::unique_ptr<TxSender> sender_;
};

}  // namespace crucible::chain
