// Peers (protocol.md §9): where each uid's objects are (its store location
// committed on chain), joining the subnet, and fetching an aggregation set's
// packets to merge them. Only through Chain and ObjectStore: tests pass a
// fake chain and a store opener of their own.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "crucible/chain/chain.h"
#include "crucible/chain/keys.h"
#include "crucible/protocol/aggregation_set.h"
#include "crucible/protocol/update.h"
#include "crucible/storage/object_store.h"
#include "crucible/storage/peer_location.h"
#include "crucible/storage/storage_options.h"

namespace crucible::protocol {

// Opens a peer's store from its (already decoded) location.
using StoreOpener = std::function<Result<std::shared_ptr<storage::ObjectStore>>(const storage::PeerLocation& location)>;
// storage::open_peer_store with `policy` (which URLs are accepted, deadlines).
StoreOpener default_store_opener(storage::PeerPolicy policy);

inline constexpr std::size_t kPeerStoreCache = 1024;  // opened stores kept, by location text

// Where each uid's objects are: its commitment on the chain, opened once
// and cached by location.
class PeerDirectory {
 public:
  PeerDirectory(chain::Chain& chain, std::uint16_t netuid, StoreOpener opener)
      : chain_(chain), netuid_(netuid), opener_(std::move(opener)) {}
  Result<std::shared_ptr<storage::ObjectStore>> store_of(std::uint16_t uid);

 private:
  chain::Chain& chain_;
  std::uint16_t netuid_;
  StoreOpener opener_;
  std::vector<std::pair<std::string, std::shared_ptr<storage::ObjectStore>>> cache_;
};

// This node's uid (the neuron whose hotkey is the key's hotkey on chain), its
// store location published on chain if the chain does not hold it yet.
// failed_precondition, naming `crucible chain register`, when not registered.
Result<std::uint16_t> join_subnet(chain::Chain& chain, std::uint16_t netuid, const chain::PrivateKey& key,
                                  const storage::StorageOptions& storage);

// The lead's side of a set: before publishing window w's set it stores each
// member's packet, as it downloaded it, at keys::set_packet(w, uid) in its
// own store, so the set stays applicable whatever the members do with
// their buckets afterwards.
Status store_set_packets(const AggregationSet& set, const std::vector<ByteSpan>& packets, storage::ObjectStore& lead);

// Fetches the set's packets from the lead's store, checks each digest
// against the set, decodes them and merges. A packet that is missing or
// fails its checks is an error naming the uid: every node must merge the
// same set or none. The merge runs on `codec` (merge_updates).
Result<TensorValues> fetch_and_merge(const AggregationSet& set, storage::ObjectStore& lead,
                                     const std::vector<TensorSpec>& specs, std::uint64_t max_packet_bytes,
                                     kernels::Backend& codec);

}  // namespace crucible::protocol
