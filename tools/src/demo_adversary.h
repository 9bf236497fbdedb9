// Bad miners for `crucible demo --bad-miner KIND`: a registered uid with its
// own store, played by a thread of the demo, that uploads in every slot
//   noise  a well-formed update of large random values
//   zero   an all-zero update (a free rider)
//   copy   honest miner 1's update of the window, re-signed as its own
// each with the correct sample digest of its own assignment, so it loses
// on the merits, not on a formality. The run then shows whether the
// network still learns with it present.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "crucible/chain/chain_options.h"
#include "crucible/chain/keys.h"
#include "crucible/common/model_config.h"
#include "crucible/common/status.h"
#include "crucible/protocol/options.h"

namespace crucible::cli {

struct AdversaryOptions {
  explicit AdversaryOptions(chain::PrivateKey k) : key(std::move(k)) {}
  std::string kind;  // noise | zero | copy
  chain::PrivateKey key;
  std::uint16_t uid = 0;
  std::filesystem::path store;         // its own folder store
  std::filesystem::path honest_store;  // miner 1's, for copy
  std::filesystem::path data;          // the prepared data folder
  model::ModelConfig model;
  protocol::Options protocol;
  chain::ChainOptions chain;
};

bool valid_adversary_kind(const std::string& kind);

// Commits the store location, then uploads in every slot until stopped.
class Adversary {
 public:
  static Result<std::unique_ptr<Adversary>> start(AdversaryOptions options);
  ~Adversary();  // stops and joins
  Adversary(const Adversary&) = delete;
  Adversary& operator=(const Adversary&) = delete;
  int uploads() const { return uploads_.load(); }

 private:
  explicit Adversary(AdversaryOptions o);
  void run();
  Status upload(std::uint64_t w);

  AdversaryOptions o_;
  struct State;
  std::unique_ptr<State> state_;
  std::atomic<bool> stop_{false};
  std::atomic<int> uploads_{0};
  std::thread thread_;
};

}  // namespace crucible::cli
