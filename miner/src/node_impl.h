// Internal to the miner: the node's state and its steps, one file each
// (catch_up.cpp, train.cpp, upload.cpp; node.cpp creates and runs it).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "crucible/chain/keys.h"
#include "crucible/common/dataset.h"
#include "crucible/common/replica.h"
#include "crucible/common/retry.h"
#include "crucible/kernels/backend.h"
#include "crucible/miner/inner_loop.h"
#include "crucible/miner/miner_state.h"
#include "crucible/miner/node.h"
#include "crucible/miner/rank_group.h"
#include "crucible/protocol/fingerprint.h"
#include "crucible/protocol/instance.h"
#include "crucible/protocol/node_io.h"
#include "crucible/protocol/window_clock.h"

namespace crucible::miner {

using protocol::kPoll;
inline constexpr std::size_t kMaxListedAggregates = 100'000;  // aggregate/ keys read from the lead's store
inline constexpr std::uint64_t kRateBlocks = 20;              // blocks averaged for the block interval

// What train() hands to upload(): the sealed packet and the fingerprint.
struct Trained {
  std::uint64_t window = 0;
  Bytes sealed;
  std::string fingerprint_json;
  double started_s = 0;  // when train() began, on the node's clock (Unix seconds)
};

struct MinerNode::Impl {
  MinerNodeOptions o;
  chain::PrivateKey key;
  protocol::NodeIo io;
  protocol::WindowClock clock;
  std::unique_ptr<protocol::PeerDirectory> peers;
  std::optional<data::Dataset> dataset;
  std::unique_ptr<model::Replica> replica;
  std::unique_ptr<RankGroup> ranks;  // rank 0 of a miner of several ranks; null for one
  std::unique_ptr<InnerLoop> loop;
  std::unique_ptr<kernels::Backend> codec;  // error feedback, compression, merges: on miner.device
  std::optional<StateDir> state_dir;
  std::optional<protocol::InstanceClaim> claim;  // one running instance per key
  MinerState state;
  std::uint16_t uid = 0;
  bool show_progress = false;
  double window_end_s = 0;  // estimated end of the window being trained (Unix seconds; 0: unknown)
  double last_train_s = 0;  // how long the last window's train() took, packet sealed (seconds)
  double last_pack_s = 0;   // of which after the inner steps: the delta, compression, sealing, the state's commit

  Impl(const MinerNodeOptions& options, const chain::PrivateKey& k, protocol::NodeIo i)
      : o(options), key(k), io(std::move(i)), clock(options.protocol) {}

  chain::Chain& chain() { return *io.chain; }
  const std::vector<protocol::TensorSpec>& specs() const { return replica->specs(); }
  Status commit();
  Result<std::uint64_t> block_number(const std::atomic<bool>& stop);

  // catch_up.cpp: apply every published aggregate the model lacks, in chain
  // order; with `wait_for`, wait up to aggregate_wait_s for that window's set,
  // and never past `latest` (Unix seconds; 0: no bound).
  Status catch_up(std::optional<std::uint64_t> wait_for, const std::atomic<bool>& stop, double latest = 0);
  // The last moment to stop waiting for a set and still train the window
  // and commit it inside its upload slot: window_end_s plus the slot, less
  // 1.1 times the last window's training time, a second and a poll (0 while
  // the window's end is unknown).
  double latest_wait() const;
  // When work of `work_s` seconds must start to end with a commit inside
  // the upload slot: window_end_s plus the slot, less work_s, a second and
  // a poll (0 while the window's end is unknown).
  double commit_by(double work_s) const;
  // When the inner steps must end so that the packet is sealed and
  // committed inside the upload slot: window_end_s plus the slot, less 1.5
  // times the last packing time, a second and a poll (0: unknown).
  double train_deadline() const;
  Status follow_chain(storage::ObjectStore& lead);

  // train.cpp: H inner steps on w's samples, error feedback, a signed packet.
  Result<Trained> train(std::uint64_t w, const std::atomic<bool>& stop);
  Result<packet::Packet> compress(std::uint64_t w, const WindowResult& r, const protocol::Fingerprint& fp,
                                  const chain::Hash32& sample_digest);
  double estimate_window_end(std::uint64_t w, const std::atomic<bool>& stop);
  void progress(std::uint64_t w, const StepInfo& s);

  // upload.cpp: put the packet and the fingerprint inside w's upload slot.
  Status upload(const Trained& t, const std::atomic<bool>& stop);
};

}  // namespace crucible::miner
