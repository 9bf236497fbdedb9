// The model's position in the lead's chain of aggregation sets
// (protocol.md §8-9), defined once for both nodes. A set is applied only
// when it builds on exactly the window the model holds (its `prev`); when
// it cannot be, the outcome is a typed desync and the model is unchanged,
// and the lead's checkpoint is what takes the model past it. The miner's
// catch-up, the validator's window and its restart all go through here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crucible/chain/chain.h"
#include "crucible/common/safetensors.h"
#include "crucible/common/status.h"
#include "crucible/common/tensor_spec.h"
#include "crucible/protocol/aggregation_set.h"
#include "crucible/protocol/options.h"
#include "crucible/storage/object_store.h"

namespace crucible::kernels {
class Backend;
}

namespace crucible::protocol {

using model::TensorSpec;
using model::TensorValues;

// Where a model stands in the chain, and what it took to get there.
struct ChainState {
  std::optional<std::uint64_t> window;  // the last set applied (or the checkpoint's window); none: genesis
  chain::Hash32 basis{};                // Keccak-256 of that set as published (the next fingerprints' seed)
  std::uint64_t global_step = 0;        // sets applied since genesis (a checkpoint carries the lead's count)
  TensorValues last_aggregate;          // that set's merged update (kept only with ChainOptions::keep_last)
  std::vector<std::uint16_t> last_set;  // its members

  // window, basis and global_step as the metadata of the model file saved
  // with them, and back (data_loss naming the field when one is missing or
  // malformed; a file without global_step, from before it was recorded,
  // counts window + 1, what the lead published then).
  safetensors::Metadata metadata() const;
  static Result<ChainState> from_metadata(const safetensors::Metadata& metadata);
};

// Why a set was not applied. The model is unchanged; the lead's next
// checkpoint is the way past.
enum class Desync : std::uint8_t {
  kOtherBasis,     // the set builds on another window than the model holds (a gap, or a fresh model)
  kSetMissing,     // no set was published for the window
  kSetDamaged,     // the set does not decode, or names another window
  kPacketMissing,  // a member's packet is missing or fails its checks, or the merge does not apply
};
std::string_view to_string(Desync d);

// What the chain does to the node's replica. Both nodes hold a
// model::Replica (ChainModelOf); the tests a plain vector.
class ChainModel {
 public:
  virtual ~ChainModel() = default;
  virtual const std::vector<TensorSpec>& specs() const = 0;
  virtual Status apply_update(const TensorValues& update, double scale) = 0;
  virtual Status load(const safetensors::File& file) = 0;
};

template <class Replica>
class ChainModelOf final : public ChainModel {
 public:
  explicit ChainModelOf(Replica& r) : r_(r) {}
  const std::vector<TensorSpec>& specs() const override { return r_.specs(); }
  Status apply_update(const TensorValues& update, double scale) override { return r_.apply_update(update, scale); }
  Status load(const safetensors::File& file) override { return r_.load(file); }

 private:
  Replica& r_;
};

struct ChainOptions {
  OuterLr outer_lr;                    // by the step the set takes (its global step before it)
  std::uint64_t max_object_bytes = 0;  // a packet, a checkpoint
  std::string model_canonical;         // ModelConfig::canonical: checkpoints of other shapes are refused
  std::string role;                    // the metrics' role label: "miner" or "validator"
  bool keep_last = false;              // keep the last set's merged update (the validator's sync scores)
};

class ModelChain {
 public:
  // The chain moves `model` and `state` (both owned by the node, which
  // persists the state with its model); sets are decoded and merged on `codec`.
  ModelChain(ChainModel& model, ChainState& state, kernels::Backend& codec, ChainOptions options);

  const ChainState& state() const { return state_; }

  // Applies window w's set as published in `sets` (with its packets) when
  // it builds on the model's window. nullopt: applied. A Desync: not
  // applied, model and state unchanged, counted. An error: the store could
  // not be read (a transient status: try again) or the model refused a
  // merged update that passed every check.
  Result<std::optional<Desync>> advance(std::uint64_t w, storage::ObjectStore& sets);
  // The same for w's set in hand (`published`: its bytes as published; its
  // packets in `packets`): the lead's own, or one a follower polled for.
  Result<std::optional<Desync>> advance(std::uint64_t w, ByteSpan published, storage::ObjectStore& packets);

  // The windows of the sets in `sets` after the model's window, in order
  // (at most max_listed keys are read).
  Result<std::vector<std::uint64_t>> published_after(storage::ObjectStore& sets, std::size_t max_listed) const;

  // The lead's checkpoint, when it is newer than the model: loaded into
  // the model, the state taken from its pointer. false when there is none
  // newer (the model unchanged).
  Result<bool> load_newer_checkpoint(storage::ObjectStore& lead);

  // After a restart: the last set's members and merged update, read back
  // from `sets` (best effort: left empty when they cannot be read).
  void reload_last(storage::ObjectStore& sets);

 private:
  Result<std::optional<Desync>> take(const AggregationSet& set, ByteSpan bytes, storage::ObjectStore& packets);
  std::optional<Desync> desync(Desync d, std::uint64_t w, const Status& why) const;

  ChainModel& model_;
  ChainState& state_;
  kernels::Backend& codec_;
  ChainOptions o_;
};

}  // namespace crucible::protocol
