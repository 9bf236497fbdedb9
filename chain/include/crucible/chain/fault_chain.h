// ChainWrapper forwards every call to another Chain (so a wrapper overrides
// only what it changes, as RocksDB's FileSystemWrapper), and
// FaultInjectingChain misbehaves on purpose for reliability tests: transient
// errors on reads, failed or lost transactions, added latency.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <random>

#include "crucible/chain/chain.h"

namespace crucible::chain {

class ChainWrapper : public Chain {
 public:
  explicit ChainWrapper(std::shared_ptr<Chain> inner) : inner_(std::move(inner)) {}

  Result<std::uint64_t> chain_id() override { return inner_->chain_id(); }
  Result<std::uint64_t> block_number() override { return inner_->block_number(); }
  Result<BlockHeader> block(std::uint64_t number) override { return inner_->block(number); }
  Hash32 hotkey_of(const Address& address) const override { return inner_->hotkey_of(address); }
  Result<Metagraph> metagraph(std::uint16_t netuid) override { return inner_->metagraph(netuid); }
  Result<SubnetParams> subnet_params(std::uint16_t netuid) override { return inner_->subnet_params(netuid); }
  Result<SentTx> set_weights(std::uint16_t netuid, const std::vector<std::uint16_t>& uids,
                             const std::vector<std::uint16_t>& values, std::uint64_t version_key) override {
    return inner_->set_weights(netuid, uids, values, version_key);
  }
  Result<std::uint64_t> subnet_epoch(std::uint16_t netuid, std::optional<std::uint64_t> at_block) override {
    return inner_->subnet_epoch(netuid, at_block);
  }
  Result<SentTx> commit_weights(const WeightsCommit& commit) override { return inner_->commit_weights(commit); }
  Result<SentTx> reveal_weights(const WeightsCommit& commit) override { return inner_->reveal_weights(commit); }
  Result<WeightsCommit> make_commit(std::uint16_t netuid, std::vector<std::uint16_t> uids,
                                    std::vector<std::uint16_t> values, std::uint64_t version_key) override {
    return inner_->make_commit(netuid, std::move(uids), std::move(values), version_key);
  }
  Result<SentTx> register_neuron(std::uint16_t netuid, const Hash32& hotkey) override {
    return inner_->register_neuron(netuid, hotkey);
  }
  Result<std::optional<std::string>> commitment(std::uint16_t netuid, std::uint16_t uid) override {
    return inner_->commitment(netuid, uid);
  }
  Result<SentTx> set_commitment(std::uint16_t netuid, const std::string& data) override {
    return inner_->set_commitment(netuid, data);
  }

 protected:
  Chain& inner() { return *inner_; }

 private:
  std::shared_ptr<Chain> inner_;
};

struct ChainFaults {
  double read_error_rate = 0;            // reads failing with unavailable
  std::chrono::milliseconds latency{0};  // added to every call
  int fail_next_transactions = 0;        // the next N transactions fail (unavailable) without reaching the chain
  int lose_next_transactions = 0;        // the next N transactions land, but the caller gets unavailable
  std::uint64_t seed = 1;
};

struct ChainFaultCounts {
  int read_errors = 0;
  int failed_transactions = 0;
  int lost_transactions = 0;
};

class FaultInjectingChain final : public ChainWrapper {
 public:
  FaultInjectingChain(std::shared_ptr<Chain> inner, ChainFaults faults);
  void set_faults(const ChainFaults& faults);
  ChainFaultCounts counts() const;

  Result<std::uint64_t> block_number() override;
  Result<BlockHeader> block(std::uint64_t number) override;
  Result<Metagraph> metagraph(std::uint16_t netuid) override;
  Result<SubnetParams> subnet_params(std::uint16_t netuid) override;
  Result<std::optional<std::string>> commitment(std::uint16_t netuid, std::uint16_t uid) override;
  Result<SentTx> set_weights(std::uint16_t netuid, const std::vector<std::uint16_t>& uids,
                             const std::vector<std::uint16_t>& values, std::uint64_t version_key) override;
  Result<SentTx> commit_weights(const WeightsCommit& commit) override;
  Result<SentTx> reveal_weights(const WeightsCommit& commit) override;
  Result<SentTx> set_commitment(std::uint16_t netuid, const std::string& data) override;

 private:
  Status read_fault(std::string_view what);
  // Runs send() unless a failure is due; reports a loss after sending when one is.
  template <typename F>
  Result<SentTx> transaction(std::string_view what, F&& send);

  mutable std::mutex mu_;
  ChainFaults faults_;
  std::mt19937_64 rng_;
  ChainFaultCounts counts_;
};

}  // namespace crucible::chain
