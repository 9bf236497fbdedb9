// The validator node: one pass per window w, run once w's upload slot has
// closed, reading like the protocol (protocol.md §6-10):
//   gather    fetch and check every uid's packet (reasons kept per uid)
//   publish   the lead fixes and publishes w's aggregation set
//   evaluate  Gauntlet losses on a sample of uids, on the model of w
//   score     ratings, BMA, sync, penalties, final scores
//   commit    all of w's results in one RocksDB batch with the progress mark
//   aggregate apply w's set to the model (theta_{w+1}); checkpoint (lead)
//   weights   every weights_every windows, logged so a restart never posts twice
#pragma once

#include <atomic>
#include <memory>

#include "crucible/chain/chain_options.h"
#include "crucible/chain/keys.h"
#include "crucible/common/model_config.h"
#include "crucible/common/protocol_options.h"
#include "crucible/storage/state_store.h"
#include "crucible/storage/storage_options.h"
#include "crucible/validator/validator_options.h"

namespace crucible::validator {

struct ValidatorNodeOptions {
  ProtocolOptions protocol;
  chain::ChainOptions chain;
  storage::StorageOptions storage;
  model::ModelConfig model;
  ValidatorOptions validator;
  ApiOptions api;
};

class ValidatorNode {
 public:
  static Result<std::unique_ptr<ValidatorNode>> create(const ValidatorNodeOptions& options,
                                                       const chain::PrivateKey& key);
  ~ValidatorNode();
  Status run(const std::atomic<bool>& stop);
  storage::StateStore& state();  // for the read-only API

 private:
  ValidatorNode();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace crucible::validator
