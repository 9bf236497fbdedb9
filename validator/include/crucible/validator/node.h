// The validator node: one pass per window w, run once w's upload slot has
// closed, reading like the protocol (protocol.md §6, §8; validator/window.h):
//   gather    fetch and check every uid's packet (a Rejection per uid)
//   copies    replays, and both uploads of an update two uids share, are rejected
//   evaluate  Gauntlet losses on a sample of uids, on the model of w
//   sync      each uid's fingerprint against the model it should have held
//   score     ratings, BMA, sync, penalties, final scores
//   fix set   the lead fixes and publishes w's aggregation set, from the scores
//   record    w's results and the progress mark in one RocksDB batch
//   advance   apply the lead's set to the model (theta_{w+1}); checkpoint (lead)
//   weights   every weights_every windows, logged so a restart never posts twice
#pragma once

#include <atomic>
#include <memory>
#include <optional>

#include "crucible/chain/keys.h"
#include "crucible/protocol/node_io.h"
#include "crucible/storage/state_store.h"
#include "crucible/validator/node_options.h"

namespace crucible::validator {

class Observer;

class ValidatorNode {
 public:
  // Opens the data, the model and the RocksDB state, finds the key's uid on
  // `io.chain` and publishes the store location if the chain lacks it.
  static Result<std::unique_ptr<ValidatorNode>> create(const ValidatorNodeOptions& options,
                                                       const chain::PrivateKey& key, protocol::NodeIo io);
  ~ValidatorNode();
  // Restores (scores, model, sets published while it was down), then runs
  // windows until *stop, end_window, max_windows or a fatal error. Timing
  // evidence comes from an observer of its own (observer.h), polling on a
  // thread while it runs; `observed`, when given, replaces it (tests that
  // play past slots through an Observer on a clock of their own).
  Status run(const std::atomic<bool>& stop, const Observer* observed = nullptr);
  storage::StateStore& state();  // for the read-only API
  std::uint16_t uid() const;
  std::optional<std::uint64_t> model_window() const;  // last aggregate in the model

 private:
  ValidatorNode();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace crucible::validator
