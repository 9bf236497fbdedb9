// The miner node: one pass of the window loop per protocol window,
// driven by the chain's block clock (protocol.md §1-3, §7-9):
//   catch up  apply published aggregates, in their chain order
//   train     H inner steps on the uid's assigned samples
//   compress  pseudo-gradient + error feedback -> signed packet
//   upload    gradient/{w}.crg and fingerprint/{w}.json inside the slot
// State is committed after each step that changes it, so a restart
// resumes where the miner stopped. RPC and store failures are retried
// within deadlines and never end the process; a stop request ends it
// cleanly between steps.
#pragma once

#include <atomic>
#include <memory>

#include "crucible/chain/chain_options.h"
#include "crucible/chain/keys.h"
#include "crucible/common/model_config.h"
#include "crucible/miner/miner_options.h"
#include "crucible/protocol/node_io.h"
#include "crucible/protocol/options.h"
#include "crucible/storage/storage_options.h"

namespace crucible::miner {

struct MinerNodeOptions {
  protocol::Options protocol;
  chain::ChainOptions chain;
  storage::StorageOptions storage;
  model::ModelConfig model;
  MinerOptions miner;
};

class MinerNode {
 public:
  // Opens the data and state, finds the key's uid on `io.chain` and
  // publishes the store location if the chain does not have it yet.
  static Result<std::unique_ptr<MinerNode>> create(const MinerNodeOptions& options, const chain::PrivateKey& key,
                                                   protocol::NodeIo io);
  ~MinerNode();
  std::uint16_t uid() const;
  // Until *stop, max_windows, or a fatal error (bad state, bad data).
  Status run(const std::atomic<bool>& stop);

 private:
  MinerNode();

 public:
  struct Impl;  // the steps' files share it (miner/src/node_impl.h)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace crucible::miner
