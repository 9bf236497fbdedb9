// The node's view of the chain: the block clock, the metagraph, weights,
// registration and where each miner's bucket is. Node logic reaches the
// chain only through this interface (architecture.md); EvmChain is the real
// implementation, tests of node logic may use a double.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "crucible/chain/eth.h"
#include "crucible/chain/tx_sender.h"

namespace crucible::chain {

struct Neuron {
  std::uint16_t uid = 0;
  Hash32 hotkey{};
  Hash32 coldkey{};
  std::uint64_t stake = 0;  // rao
  bool validator_permit = false;
  bool active = false;
  std::uint64_t last_update = 0;  // block of the last weights
};

struct Metagraph {
  std::uint16_t netuid = 0;
  std::uint64_t block = 0;      // read at this height (or later)
  std::vector<Neuron> neurons;  // index = uid
};

struct SubnetParams {
  bool commit_reveal = false;
  std::uint64_t version_key = 0;
  std::uint64_t rate_limit = 0;  // blocks between weight posts
};

// What a commit binds, kept until it is revealed.
struct WeightsCommit {
  std::uint16_t netuid = 0;
  std::vector<std::uint16_t> uids;
  std::vector<std::uint16_t> values;
  std::vector<std::uint16_t> salt;
  std::uint64_t version_key = 0;
  Hash32 hash{};
};

class Chain {
 public:
  virtual ~Chain() = default;

  virtual Result<std::uint64_t> chain_id() = 0;
  virtual Result<std::uint64_t> block_number() = 0;
  virtual Result<BlockHeader> block(std::uint64_t number) = 0;

  // The hotkey (metagraph identity) of an EVM key: on Bittensor, the
  // Substrate mirror account of the address (chain.md). Node logic never
  // computes it itself.
  virtual Hash32 hotkey_of(const Address& address) const;

  virtual Result<Metagraph> metagraph(std::uint16_t netuid) = 0;
  virtual Result<SubnetParams> subnet_params(std::uint16_t netuid) = 0;

  // setWeights; failed_precondition (naming commit-reveal) when the subnet
  // requires commit + reveal.
  virtual Result<SentTx> set_weights(std::uint16_t netuid, const std::vector<std::uint16_t>& uids,
                                     const std::vector<std::uint16_t>& values, std::uint64_t version_key) = 0;
  virtual Result<SentTx> commit_weights(const WeightsCommit& commit) = 0;
  virtual Result<SentTx> reveal_weights(const WeightsCommit& commit) = 0;
  // Builds a commit (random salt, hash over this node's hotkey).
  virtual Result<WeightsCommit> make_commit(std::uint16_t netuid, std::vector<std::uint16_t> uids,
                                            std::vector<std::uint16_t> values, std::uint64_t version_key) = 0;

  virtual Result<SentTx> register_neuron(std::uint16_t netuid, const Hash32& hotkey) = 0;

  // A miner's published bucket location; none if it has not committed.
  virtual Result<std::optional<std::string>> commitment(std::uint16_t netuid, std::uint16_t uid) = 0;
  virtual Result<SentTx> set_commitment(std::uint16_t netuid, const std::string& data) = 0;
};

}  // namespace crucible::chain
