// An in-memory chain for in-process node tests: a metagraph, a block clock
// the test advances (each block stamped with the wall time it was mined,
// so slot checks against store times work), commitments, weights and
// commit-reveal. Thread-safe. Each node gets its own view (`as(key)`): the
// Chain it is handed signs as that key, as EvmChain does.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "crucible/chain/chain.h"
#include "crucible/chain/keys.h"
#include "crucible/common/clock.h"

namespace crucible::testing {

struct WeightsPost {
  chain::Hash32 hotkey{};
  std::vector<std::uint16_t> uids;
  std::vector<std::uint16_t> values;
  std::uint64_t block = 0;
  bool revealed = false;  // through commit + reveal
};

class FakeChain {
 public:
  explicit FakeChain(std::uint16_t netuid = 1, std::uint64_t chain_id = 31337);

  // Registers the key's hotkey; returns its uid. Transactions (weights,
  // commitments) each land in a new block.
  std::uint16_t add_neuron(const chain::PrivateKey& key, std::uint64_t stake = 0, bool validator_permit = false);
  // The uid deregistered and registered again by `key` (a recycled uid):
  // a new hotkey, no stake, no commitment.
  void replace_neuron(std::uint16_t uid, const chain::PrivateKey& key);
  // Mines n empty blocks, stamped with the wall clock (or `timestamp`).
  void mine(std::uint64_t n = 1, std::optional<std::uint64_t> timestamp = std::nullopt);
  // Blocks from here on are stamped with `clock`'s time, not the system's
  // (a test's VirtualClock).
  void use_clock(std::shared_ptr<Clock> clock);
  std::uint64_t head() const;
  void set_commit_reveal(bool on);
  // Blocks per subnet epoch (epoch = block / tempo), and a reveal is taken
  // only in the epoch after its commit's, as subtensor takes it.
  void set_tempo(std::uint64_t tempo);
  // A commitment as a peer could set it (anything at all).
  void set_commitment_of(std::uint16_t uid, std::string data);

  std::vector<WeightsPost> weights() const;  // every post, in order
  std::vector<chain::WeightsCommit> commits() const;
  std::uint16_t netuid() const { return netuid_; }

  // The chain as the holder of `key` sees it.
  std::shared_ptr<chain::Chain> as(const chain::PrivateKey& key);

 private:
  class View;
  friend class View;
  struct Block {
    std::uint64_t timestamp = 0;
  };
  chain::SentTx tx_locked();
  std::uint64_t epoch_locked(std::uint64_t block) const;

  mutable std::mutex mu_;
  std::shared_ptr<Clock> clock_ = system_clock();  // stamps blocks (use_clock)
  std::uint64_t now_s_locked() const;
  std::uint16_t netuid_;
  std::uint64_t chain_id_;
  std::vector<Block> blocks_;
  chain::Metagraph metagraph_;
  std::map<std::uint16_t, std::string> commitments_;
  std::vector<WeightsPost> posts_;
  std::vector<chain::WeightsCommit> commits_;
  std::vector<std::uint64_t> commit_epochs_;  // of commits_
  bool commit_reveal_ = false;
  std::uint64_t tempo_ = 10;
  std::uint64_t txs_ = 0;
};

}  // namespace crucible::testing
