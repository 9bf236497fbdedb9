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
#include "crucible/chain/rpc_options.h"

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

// The subnet's hyperparameters that decide whether a weights post lands
// (pallets/subtensor/src/subnets/weights.rs at opentensor/subtensor 14bc6f9).
struct SubnetParams {
  bool commit_reveal = false;
  std::uint64_t version_key = 0;           // posts need a key >= it (0: any key)
  std::uint64_t rate_limit = 0;            // blocks between weight posts (and commits), from LastUpdate
  std::uint64_t tempo = 0;                 // blocks per subnet epoch (0: no epochs)
  std::uint64_t reveal_period = 1;         // RevealPeriodEpochs: a commit is revealed this many epochs later
  std::uint16_t min_allowed_weights = 0;   // a post names at least min(n, this) uids
  std::uint16_t max_weight_limit = 65535;  // the largest share of a post is at most this / 65535
  std::uint64_t stake_threshold = 0;       // rao of stake needed to post (StakeThreshold)
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
  // The subnet's epoch counter (SubnetEpochIndex) after block `at_block`
  // (the latest block when none): a commit made in a block belongs to the
  // epoch read at that block, and is revealed when the counter reaches it
  // plus the reveal period.
  virtual Result<std::uint64_t> subnet_epoch(std::uint16_t netuid, std::optional<std::uint64_t> at_block) = 0;

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

  // A node's published store location (the Commitments pallet); none if
  // it has not committed.
  virtual Result<std::optional<std::string>> commitment(std::uint16_t netuid, std::uint16_t uid) = 0;
  // Publishes this node's text under its hotkey. On Bittensor only a
  // Substrate origin can, so EvmChain goes through a proxy (docs/chain.md).
  virtual Result<SentTx> set_commitment(std::uint16_t netuid, const std::string& data) = 0;
};

}  // namespace crucible::chain
