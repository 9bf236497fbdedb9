#include "support/fake_chain.h"

#include <atomic>

#include "crucible/chain/keccak.h"

namespace crucible::testing {

class FakeChain::View final : public chain::Chain {
 public:
  View(FakeChain& c, const chain::PrivateKey& key) : c_(c), key_(key), hotkey_(hotkey_of(key.address())) {}

  Result<std::uint64_t> chain_id() override { return c_.chain_id_; }
  Result<std::uint64_t> block_number() override { return c_.head(); }
  Result<chain::BlockHeader> block(std::uint64_t number) override {
    std::lock_guard lock(c_.mu_);
    if (number >= c_.blocks_.size()) return not_found("block {} is not mined yet", number);
    chain::BlockHeader h;
    h.number = number;
    h.timestamp = c_.blocks_[number].timestamp;
    return h;
  }
  Result<chain::Metagraph> metagraph(std::uint16_t netuid) override {
    std::lock_guard lock(c_.mu_);
    if (netuid != c_.netuid_) return not_found("no subnet {}", netuid);
    chain::Metagraph m = c_.metagraph_;
    m.block = c_.blocks_.size() - 1;
    return m;
  }
  Result<chain::SubnetParams> subnet_params(std::uint16_t) override {
    std::lock_guard lock(c_.mu_);
    chain::SubnetParams p;
    p.commit_reveal = c_.commit_reveal_;
    p.tempo = c_.tempo_;
    return p;
  }
  Result<chain::SentTx> set_weights(std::uint16_t, const std::vector<std::uint16_t>& uids,
                                    const std::vector<std::uint16_t>& values, std::uint64_t) override {
    std::lock_guard lock(c_.mu_);
    if (c_.commit_reveal_) return failed_precondition("the subnet uses commit-reveal");
    auto tx = c_.tx_locked();
    c_.posts_.push_back({hotkey_, uids, values, tx.receipt.block_number, false});
    touch_locked(tx.receipt.block_number);
    return tx;
  }
  Result<std::uint64_t> subnet_epoch(std::uint16_t, std::optional<std::uint64_t> at_block) override {
    std::lock_guard lock(c_.mu_);
    return c_.epoch_locked(at_block.value_or(c_.blocks_.size() - 1));
  }
  Result<chain::SentTx> commit_weights(const chain::WeightsCommit& commit) override {
    std::lock_guard lock(c_.mu_);
    auto tx = c_.tx_locked();
    c_.commits_.push_back(commit);
    c_.commit_epochs_.push_back(c_.epoch_locked(tx.receipt.block_number));
    touch_locked(tx.receipt.block_number);
    return tx;
  }
  Result<chain::SentTx> reveal_weights(const chain::WeightsCommit& commit) override {
    std::lock_guard lock(c_.mu_);
    std::optional<std::uint64_t> epoch;
    for (std::size_t i = 0; i < c_.commits_.size(); ++i)
      if (c_.commits_[i].hash == commit.hash) epoch = c_.commit_epochs_[i];
    if (!epoch) return failed_precondition("dispatch execution failed: NoWeightsCommitFound");
    // The transaction would land in the next block.
    if (c_.epoch_locked(c_.blocks_.size()) != *epoch + 1) {
      return failed_precondition("dispatch execution failed: RevealTooEarly");
    }
    auto tx = c_.tx_locked();
    c_.posts_.push_back({hotkey_, commit.uids, commit.values, tx.receipt.block_number, true});
    touch_locked(tx.receipt.block_number);
    return tx;
  }
  Result<chain::WeightsCommit> make_commit(std::uint16_t netuid, std::vector<std::uint16_t> uids,
                                           std::vector<std::uint16_t> values, std::uint64_t version_key) override {
    chain::WeightsCommit c{netuid, std::move(uids), std::move(values), {}, version_key, {}};
    static std::atomic<std::uint16_t> salt{1};
    c.salt = {salt++, 7, 11};
    chain::Keccak256 h;
    h.update(hotkey_);
    for (auto u : c.uids) h.update(as_bytes(std::to_string(u)));
    for (auto v : c.values) h.update(as_bytes(std::to_string(v)));
    for (auto s : c.salt) h.update(as_bytes(std::to_string(s)));
    c.hash = h.finish();
    return c;
  }
  Result<chain::SentTx> register_neuron(std::uint16_t, const chain::Hash32&) override {
    return unimplemented("FakeChain: register with add_neuron");
  }
  Result<std::optional<std::string>> commitment(std::uint16_t, std::uint16_t uid) override {
    std::lock_guard lock(c_.mu_);
    auto it = c_.commitments_.find(uid);
    if (it == c_.commitments_.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }
  Result<chain::SentTx> set_commitment(std::uint16_t, const std::string& data) override {
    std::lock_guard lock(c_.mu_);
    for (const auto& n : c_.metagraph_.neurons) {
      if (n.hotkey == hotkey_) {
        c_.commitments_[n.uid] = data;
        return c_.tx_locked();
      }
    }
    return failed_precondition("not registered");
  }

 private:
  void touch_locked(std::uint64_t block) {
    for (auto& n : c_.metagraph_.neurons)
      if (n.hotkey == hotkey_) n.last_update = block;
  }
  FakeChain& c_;
  chain::PrivateKey key_;
  chain::Hash32 hotkey_;
};

FakeChain::FakeChain(std::uint16_t netuid, std::uint64_t chain_id) : netuid_(netuid), chain_id_(chain_id) {
  metagraph_.netuid = netuid;
  mine(1);  // genesis
}

std::uint16_t FakeChain::add_neuron(const chain::PrivateKey& key, std::uint64_t stake, bool validator_permit) {
  std::lock_guard lock(mu_);
  chain::Neuron n;
  n.uid = static_cast<std::uint16_t>(metagraph_.neurons.size());
  n.hotkey = View(*this, key).hotkey_of(key.address());
  n.stake = stake;
  n.validator_permit = validator_permit;
  n.active = true;
  metagraph_.neurons.push_back(n);
  return n.uid;
}

void FakeChain::replace_neuron(std::uint16_t uid, const chain::PrivateKey& key) {
  std::lock_guard lock(mu_);
  chain::Neuron& n = metagraph_.neurons.at(uid);
  n.hotkey = View(*this, key).hotkey_of(key.address());
  n.stake = 0;
  n.validator_permit = false;
  commitments_.erase(uid);
}

std::uint64_t FakeChain::now_s_locked() const { return static_cast<std::uint64_t>(clock_->unix_seconds()); }

void FakeChain::use_clock(std::shared_ptr<Clock> clock) {
  std::lock_guard lock(mu_);
  clock_ = std::move(clock);
}

void FakeChain::mine(std::uint64_t n, std::optional<std::uint64_t> timestamp) {
  std::lock_guard lock(mu_);
  const std::uint64_t now = now_s_locked();
  for (std::uint64_t i = 0; i < n; ++i) blocks_.push_back({timestamp.value_or(now)});
}

std::uint64_t FakeChain::head() const {
  std::lock_guard lock(mu_);
  return blocks_.size() - 1;
}

void FakeChain::set_tempo(std::uint64_t tempo) {
  std::lock_guard lock(mu_);
  tempo_ = tempo;
}

std::uint64_t FakeChain::epoch_locked(std::uint64_t block) const { return tempo_ == 0 ? 0 : block / tempo_; }

void FakeChain::set_commit_reveal(bool on) {
  std::lock_guard lock(mu_);
  commit_reveal_ = on;
}

void FakeChain::set_commitment_of(std::uint16_t uid, std::string data) {
  std::lock_guard lock(mu_);
  commitments_[uid] = std::move(data);
}

std::vector<WeightsPost> FakeChain::weights() const {
  std::lock_guard lock(mu_);
  return posts_;
}

std::vector<chain::WeightsCommit> FakeChain::commits() const {
  std::lock_guard lock(mu_);
  return commits_;
}

// Every transaction lands in a block of its own, as on anvil with automine.
chain::SentTx FakeChain::tx_locked() {
  blocks_.push_back({now_s_locked()});
  chain::SentTx tx;
  ++txs_;
  tx.receipt.tx_hash[0] = static_cast<std::uint8_t>(txs_);
  tx.receipt.tx_hash[1] = static_cast<std::uint8_t>(txs_ >> 8);
  tx.receipt.block_number = blocks_.size() - 1;
  tx.receipt.success = true;
  return tx;
}

std::shared_ptr<chain::Chain> FakeChain::as(const chain::PrivateKey& key) { return std::make_shared<View>(*this, key); }

}  // namespace crucible::testing
