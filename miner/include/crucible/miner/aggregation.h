// A window's aggregation set and the merge every node computes from it
// (protocol.md §8): the lead validator publishes aggregate/{w}.json
// {v, window, prev, uids, digests}; each node fetches exactly those
// packets, checks each against its digest and the model's tensors, and
// merges them with kernels::aggregate, so every node gets the same bits.
// Shared by miners and validators.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "crucible/chain/chain.h"
#include "crucible/chain/packet_signing.h"
#include "crucible/kernels/error_feedback.h"
#include "crucible/storage/object_store.h"
#include "crucible/storage/storage_options.h"

namespace crucible::miner {

inline constexpr std::size_t kMaxSetBytes = 64 << 10;
inline constexpr std::size_t kMaxSetUids = 256;

struct AggregationSet {
  std::uint64_t window = 0;
  std::optional<std::uint64_t> prev;  // the previous published window: sets form a chain
  std::vector<std::uint16_t> uids;     // ascending, distinct
  std::vector<chain::Hash32> digests;  // packet digest of each uid
};

std::string encode_set(const AggregationSet& set);
// Strict: unknown version, unsorted or duplicate uids, mismatched lengths and
// oversize input are invalid_argument.
Result<AggregationSet> decode_set(std::string_view json);

// checkpoint/LATEST.json, written by the lead after the checkpoint itself:
// {v, window (the last aggregate in the model), global_step, key (of the
// model.safetensors), model (ModelConfig::canonical), basis (Keccak-256 of
// that window's aggregation set, hex)}.
struct CheckpointPointer {
  std::uint64_t window = 0;
  std::uint64_t global_step = 0;
  std::string key;
  std::string model;
  chain::Hash32 basis{};
};
std::string encode_checkpoint_pointer(const CheckpointPointer& p);
Result<CheckpointPointer> decode_checkpoint_pointer(std::string_view json);

// The model's tensors, in order: what a packet must carry.
struct TensorSpec {
  std::string name;
  std::vector<std::int64_t> shape;
  std::int64_t numel() const;
};

// Checks a packet's tensors against the specs (count, order, names, shapes)
// and the protocol's layout, and decodes them.
Result<std::vector<kernels::CompressedTensor>> decode_update(const packet::Packet& p,
                                                             const std::vector<TensorSpec>& specs);

struct PeerTensors {
  std::uint16_t uid = 0;
  std::vector<kernels::CompressedTensor> tensors;
};
// Dense aggregate per tensor; peers are taken in ascending uid order.
Result<std::vector<std::vector<float>>> merge_updates(const std::vector<PeerTensors>& peers,
                                                      const std::vector<TensorSpec>& specs);

// Where each uid's objects are: its commitment on the chain, opened once
// and cached by location.
class PeerDirectory {
 public:
  PeerDirectory(chain::Chain& chain, std::uint16_t netuid, storage::RetryPolicy policy)
      : chain_(chain), netuid_(netuid), policy_(policy) {}
  Result<std::shared_ptr<storage::ObjectStore>> store_of(std::uint16_t uid);

 private:
  chain::Chain& chain_;
  std::uint16_t netuid_;
  storage::RetryPolicy policy_;
  std::vector<std::pair<std::string, std::shared_ptr<storage::ObjectStore>>> cache_;
};

// This node's uid (the neuron whose hotkey is the key's mirror account), its
// store location published on chain if the chain does not hold it yet.
// failed_precondition, naming `crucible chain register`, when not registered.
Result<std::uint16_t> join_subnet(chain::Chain& chain, std::uint16_t netuid, const chain::PrivateKey& key,
                                  const storage::StorageOptions& storage);

// The lead validator: the highest stake among uids with a validator permit
// (ties: the lower uid); none when no uid has a permit.
std::optional<std::uint16_t> lead_validator(const chain::Metagraph& metagraph);

// Fetches the set's packets, checks each digest against the set, decodes
// them and merges. A packet that is missing or fails its checks is an error
// naming the uid: every node must merge the same set or none.
Result<std::vector<std::vector<float>>> fetch_and_merge(const AggregationSet& set, PeerDirectory& peers,
                                                        const std::vector<TensorSpec>& specs,
                                                        std::uint64_t max_packet_bytes);

}  // namespace crucible::miner
