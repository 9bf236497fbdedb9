#include "crucible/miner/aggregation.h"

#include <algorithm>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "crucible/chain/substrate.h"
#include "crucible/common/log.h"
#include "crucible/common/object_keys.h"
#include "crucible/kernels/aggregate.h"
#include "crucible/kernels/packet_tensor.h"
#include "crucible/storage/peer_location.h"

namespace crucible::miner {

std::int64_t TensorSpec::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string encode_set(const AggregationSet& set) {
  nlohmann::json digests = nlohmann::json::array();
  for (const auto& d : set.digests) digests.push_back(to_hex(d));
  nlohmann::json j = {{"v", 1}, {"window", set.window}, {"uids", set.uids}, {"digests", digests}};
  j["prev"] = set.prev ? nlohmann::json(*set.prev) : nlohmann::json(nullptr);
  return j.dump();
}

Result<AggregationSet> decode_set(std::string_view text) {
  if (text.size() > kMaxSetBytes) return invalid_argument("aggregation set of {} bytes exceeds {}", text.size(), kMaxSetBytes);
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || j.value("v", 0) != 1) return invalid_argument("aggregation set: not a v1 object");
  if (!j.contains("window") || !j["window"].is_number_unsigned() || !j.contains("uids") || !j["uids"].is_array() ||
      !j.contains("digests") || !j["digests"].is_array()) {
    return invalid_argument("aggregation set: window, uids or digests missing");
  }
  AggregationSet s;
  s.window = j["window"].get<std::uint64_t>();
  if (j.contains("prev") && !j["prev"].is_null()) {
    if (!j["prev"].is_number_unsigned()) return invalid_argument("aggregation set: prev is not a window");
    s.prev = j["prev"].get<std::uint64_t>();
    if (*s.prev >= s.window) return invalid_argument("aggregation set: prev {} is not before {}", *s.prev, s.window);
  }
  if (j["uids"].size() > kMaxSetUids || j["uids"].size() != j["digests"].size()) {
    return invalid_argument("aggregation set: {} uids and {} digests", j["uids"].size(), j["digests"].size());
  }
  for (std::size_t i = 0; i < j["uids"].size(); ++i) {
    const auto& u = j["uids"][i];
    if (!u.is_number_unsigned() || u.get<std::uint64_t>() > 0xFFFF) return invalid_argument("aggregation set: bad uid");
    auto uid = u.get<std::uint16_t>();
    if (!s.uids.empty() && uid <= s.uids.back()) return invalid_argument("aggregation set: uids not ascending");
    s.uids.push_back(uid);
    const auto& d = j["digests"][i];
    if (!d.is_string()) return invalid_argument("aggregation set: bad digest");
    auto digest = from_hex_fixed<32>(d.get<std::string>());
    if (!digest.is_ok()) return invalid_argument("aggregation set: digest of uid {}: {}", uid, digest.status().message());
    s.digests.push_back(*digest);
  }
  return s;
}

std::string encode_checkpoint_pointer(const CheckpointPointer& p) {
  return nlohmann::json{{"v", 1},           {"window", p.window}, {"global_step", p.global_step}, {"key", p.key},
                        {"model", p.model}, {"basis", to_hex(p.basis)}}
      .dump();
}

Result<CheckpointPointer> decode_checkpoint_pointer(std::string_view text) {
  if (text.size() > kMaxSetBytes) return invalid_argument("checkpoint pointer of {} bytes", text.size());
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || j.value("v", 0) != 1 || !j.contains("window") || !j["window"].is_number_unsigned() ||
      !j.contains("global_step") || !j["global_step"].is_number_unsigned() || !j.contains("key") ||
      !j["key"].is_string() || !j.contains("model") || !j["model"].is_string() || !j.contains("basis") ||
      !j["basis"].is_string()) {
    return invalid_argument("checkpoint pointer: not a v1 object with window, global_step, key, model, basis");
  }
  CheckpointPointer p;
  p.window = j["window"].get<std::uint64_t>();
  p.global_step = j["global_step"].get<std::uint64_t>();
  p.key = j["key"].get<std::string>();
  CRUCIBLE_RETURN_IF_ERROR(storage::validate_key(p.key).with_context("checkpoint pointer key"));
  p.model = j["model"].get<std::string>();
  auto basis = from_hex_fixed<32>(j["basis"].get<std::string>());
  if (!basis.is_ok()) return invalid_argument("checkpoint pointer: bad basis");
  p.basis = *basis;
  return p;
}

Result<std::vector<kernels::CompressedTensor>> decode_update(const packet::Packet& p,
                                                             const std::vector<TensorSpec>& specs) {
  if (p.tensors.size() != specs.size()) {
    return invalid_argument("packet has {} tensors, the model {}", p.tensors.size(), specs.size());
  }
  std::vector<kernels::CompressedTensor> out;
  out.reserve(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const packet::Tensor& t = p.tensors[i];
    if (t.name != specs[i].name) return invalid_argument("packet tensor {} is '{}', the model's is '{}'", i, t.name, specs[i].name);
    if (t.shape != specs[i].shape) {
      return invalid_argument("packet tensor '{}' has shape [{}], the model [{}]", t.name, fmt::join(t.shape, ", "),
                              fmt::join(specs[i].shape, ", "));
    }
    CRUCIBLE_ASSIGN_OR_RETURN(kernels::CompressedTensor c, kernels::from_packet_tensor(t));
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::vector<std::vector<float>>> merge_updates(const std::vector<PeerTensors>& peers,
                                                      const std::vector<TensorSpec>& specs) {
  std::vector<const PeerTensors*> sorted;
  for (const auto& p : peers) sorted.push_back(&p);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->uid < b->uid; });
  std::vector<std::vector<float>> out(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    out[i].assign(static_cast<std::size_t>(specs[i].numel()), 0.0f);
    std::vector<kernels::PeerUpdate> updates;
    for (const PeerTensors* p : sorted) {
      if (p->tensors.size() != specs.size()) return invalid_argument("uid {}: wrong tensor count", p->uid);
      updates.push_back({p->uid, &p->tensors[i]});
    }
    CRUCIBLE_RETURN_IF_ERROR(kernels::aggregate(std::move(updates), out[i]).with_context(specs[i].name));
  }
  return out;
}

Result<std::shared_ptr<storage::ObjectStore>> PeerDirectory::store_of(std::uint16_t uid) {
  CRUCIBLE_ASSIGN_OR_RETURN(std::optional<std::string> text, chain_.commitment(netuid_, uid));
  if (!text) return not_found("uid {} has not committed a store location", uid);
  for (const auto& [loc, store] : cache_)
    if (loc == *text) return store;
  CRUCIBLE_ASSIGN_OR_RETURN(storage::PeerLocation location, storage::decode_location(*text));
  CRUCIBLE_ASSIGN_OR_RETURN(std::shared_ptr<storage::ObjectStore> store, storage::open_peer_store(location, policy_));
  if (cache_.size() >= 1024) cache_.erase(cache_.begin());
  cache_.emplace_back(*text, store);
  return store;
}

Result<std::uint16_t> join_subnet(chain::Chain& chain, std::uint16_t netuid, const chain::PrivateKey& key,
                                  const storage::StorageOptions& storage) {
  const chain::Hash32 hotkey = chain::substrate::mirror_account(key.address());
  CRUCIBLE_ASSIGN_OR_RETURN(chain::Metagraph mg, chain.metagraph(netuid));
  std::optional<std::uint16_t> uid;
  for (const auto& n : mg.neurons)
    if (n.hotkey == hotkey) uid = n.uid;
  if (!uid) {
    return failed_precondition("{} is not registered on netuid {}: run `crucible chain register --key KEYFILE`",
                               key.address().checksum(), netuid);
  }
  const std::string location = storage::encode_location(storage);
  CRUCIBLE_ASSIGN_OR_RETURN(auto committed, chain.commitment(netuid, *uid));
  if (committed != location) {
    CRUCIBLE_RETURN_IF_ERROR(chain.set_commitment(netuid, location).status());
    log::info("published the store location on chain", {{"uid", *uid}, {"url", storage.url}});
  }
  return *uid;
}

std::optional<std::uint16_t> lead_validator(const chain::Metagraph& m) {
  std::optional<std::uint16_t> lead;
  std::uint64_t best = 0;
  for (const auto& n : m.neurons) {
    if (!n.validator_permit) continue;
    if (!lead || n.stake > best) {
      lead = n.uid;
      best = n.stake;
    }
  }
  return lead;
}

Result<std::vector<std::vector<float>>> fetch_and_merge(const AggregationSet& set, PeerDirectory& peers,
                                                        const std::vector<TensorSpec>& specs,
                                                        std::uint64_t max_packet_bytes) {
  std::vector<PeerTensors> updates;
  packet::Limits limits;
  limits.max_packet_bytes = max_packet_bytes;
  for (std::size_t i = 0; i < set.uids.size(); ++i) {
    const std::uint16_t uid = set.uids[i];
    auto fail = [&](const Status& st) { return st.with_context(fmt::format("aggregate {}: uid {}", set.window, uid)); };
    auto store = peers.store_of(uid);
    if (!store.is_ok()) return fail(store.status());
    auto fetched = (*store)->get(keys::gradient(set.window), max_packet_bytes);
    if (!fetched.is_ok()) return fail(fetched.status());
    auto opened = chain::open_packet(fetched->data, limits);
    if (!opened.is_ok()) return fail(opened.status());
    if (opened->digest != set.digests[i]) return fail(data_loss("packet digest differs from the set's"));
    auto tensors = decode_update(opened->packet, specs);
    if (!tensors.is_ok()) return fail(tensors.status());
    updates.push_back({uid, std::move(*tensors)});
  }
  return merge_updates(updates, specs);
}

}  // namespace crucible::miner
