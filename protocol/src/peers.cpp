#include "crucible/protocol/peers.h"

#include "crucible/chain/packet_signing.h"
#include "crucible/common/log.h"
#include "crucible/protocol/object_keys.h"

namespace crucible::protocol {

StoreOpener default_store_opener(storage::PeerPolicy policy) {
  return [policy](const storage::PeerLocation& location) { return storage::open_peer_store(location, policy); };
}

Result<std::shared_ptr<storage::ObjectStore>> PeerDirectory::store_of(std::uint16_t uid) {
  CRUCIBLE_ASSIGN_OR_RETURN(std::optional<std::string> text, chain_.commitment(netuid_, uid));
  if (!text) return not_found("uid {} has not committed a store location", uid);
  for (const auto& [loc, store] : cache_)
    if (loc == *text) return store;
  CRUCIBLE_ASSIGN_OR_RETURN(storage::PeerLocation location, storage::decode_location(*text));
  CRUCIBLE_ASSIGN_OR_RETURN(std::shared_ptr<storage::ObjectStore> store, opener_(location));
  if (cache_.size() >= kPeerStoreCache) cache_.erase(cache_.begin());
  cache_.emplace_back(*text, store);
  return store;
}

Result<std::uint16_t> join_subnet(chain::Chain& chain, std::uint16_t netuid, const chain::PrivateKey& key,
                                  const storage::StorageOptions& storage) {
  const chain::Hash32 hotkey = chain.hotkey_of(key.address());
  CRUCIBLE_ASSIGN_OR_RETURN(chain::Metagraph mg, chain.metagraph(netuid));
  std::optional<std::uint16_t> uid;
  for (const auto& n : mg.neurons)
    if (n.hotkey == hotkey) uid = n.uid;
  if (!uid) {
    return failed_precondition("{} is not registered on netuid {}: run `crucible chain register --key KEYFILE`",
                               key.address().checksum(), netuid);
  }
  CRUCIBLE_ASSIGN_OR_RETURN(const std::string location, storage::encode_location_checked(storage));
  // A commitment nobody can read (malformed, of unknown field types) is
  // simply replaced.
  auto committed = chain.commitment(netuid, *uid);
  if (!committed.is_ok() && committed.status().is_transient()) return committed.status();
  if (!committed.is_ok()) {
    log::warn("this node's commitment on chain is unreadable; writing it again",
              {{"uid", *uid}, {"error", committed.status().to_string()}});
  }
  if (!committed.is_ok() || *committed != location) {
    CRUCIBLE_RETURN_IF_ERROR(chain.set_commitment(netuid, location).status());
    log::info("published the store location on chain", {{"uid", *uid}, {"url", storage.url}});
  }
  return *uid;
}

Status store_set_packets(const AggregationSet& set, const std::vector<ByteSpan>& packets, storage::ObjectStore& lead) {
  if (packets.size() != set.uids.size()) {
    return invalid_argument("set of {} uids with {} packets", set.uids.size(), packets.size());
  }
  for (std::size_t i = 0; i < packets.size(); ++i) {
    CRUCIBLE_RETURN_IF_ERROR(lead.put(keys::set_packet(set.window, set.uids[i]), packets[i])
                                 .with_context(fmt::format("set {}: uid {}", set.window, set.uids[i])));
  }
  return Status::ok();
}

Result<TensorValues> fetch_and_merge(const AggregationSet& set, storage::ObjectStore& lead,
                                     const std::vector<TensorSpec>& specs, std::uint64_t max_packet_bytes,
                                     kernels::Backend& codec) {
  std::vector<PeerTensors> updates;
  packet::Limits limits;
  limits.max_packet_bytes = max_packet_bytes;
  for (std::size_t i = 0; i < set.uids.size(); ++i) {
    const std::uint16_t uid = set.uids[i];
    auto fail = [&](const Status& st) { return st.with_context(fmt::format("aggregate {}: uid {}", set.window, uid)); };
    auto fetched = lead.get(keys::set_packet(set.window, uid), max_packet_bytes);
    if (!fetched.is_ok()) return fail(fetched.status());
    auto opened = chain::open_packet(fetched->data, limits);
    if (!opened.is_ok()) return fail(opened.status());
    if (opened->digest != set.digests[i]) return fail(data_loss("packet digest differs from the set's"));
    auto tensors = decode_update(opened->packet, specs);
    if (!tensors.is_ok()) return fail(tensors.status());
    updates.push_back({uid, std::move(*tensors)});
  }
  return merge_updates(updates, specs, codec);
}

}  // namespace crucible::protocol
