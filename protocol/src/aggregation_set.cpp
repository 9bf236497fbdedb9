#include "crucible/protocol/aggregation_set.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "crucible/chain/keccak.h"

namespace crucible::protocol {

std::string encode_set(const AggregationSet& set) {
  nlohmann::json digests = nlohmann::json::array();
  for (const auto& d : set.digests) digests.push_back(to_hex(d));
  nlohmann::json j = {{"v", 1}, {"window", set.window}, {"uids", set.uids}, {"digests", digests}};
  j["prev"] = set.prev ? nlohmann::json(*set.prev) : nlohmann::json(nullptr);
  return j.dump();
}

namespace {

bool is_u64(const nlohmann::json& j, const char* key) { return j.contains(key) && j[key].is_number_unsigned(); }

Status decode_members(const nlohmann::json& uids, const nlohmann::json& digests, AggregationSet& s) {
  if (uids.size() > kMaxSetUids || uids.size() != digests.size()) {
    return invalid_argument("aggregation set: {} uids and {} digests", uids.size(), digests.size());
  }
  for (std::size_t i = 0; i < uids.size(); ++i) {
    const auto& u = uids[i];
    if (!u.is_number_unsigned() || u.get<std::uint64_t>() > 0xFFFF) return invalid_argument("aggregation set: bad uid");
    auto uid = u.get<std::uint16_t>();
    if (!s.uids.empty() && uid <= s.uids.back()) return invalid_argument("aggregation set: uids not ascending");
    s.uids.push_back(uid);
    const auto& d = digests[i];
    if (!d.is_string()) return invalid_argument("aggregation set: bad digest");
    auto digest = from_hex_fixed<32>(d.get<std::string>());
    if (!digest.is_ok()) {
      return invalid_argument("aggregation set: digest of uid {}: {}", uid, digest.status().message());
    }
    s.digests.push_back(*digest);
  }
  return Status::ok();
}

}  // namespace

Result<AggregationSet> decode_set(std::string_view text) {
  if (text.size() > kMaxSetBytes) {
    return invalid_argument("aggregation set of {} bytes exceeds {}", text.size(), kMaxSetBytes);
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("v") || j["v"] != 1) return invalid_argument("aggregation set: not a v1 object");
  if (!is_u64(j, "window") || !j.contains("uids") || !j["uids"].is_array() || !j.contains("digests") ||
      !j["digests"].is_array()) {
    return invalid_argument("aggregation set: window, uids or digests missing");
  }
  AggregationSet s;
  s.window = j["window"].get<std::uint64_t>();
  if (j.contains("prev") && !j["prev"].is_null()) {
    if (!j["prev"].is_number_unsigned()) return invalid_argument("aggregation set: prev is not a window");
    s.prev = j["prev"].get<std::uint64_t>();
    if (*s.prev >= s.window) return invalid_argument("aggregation set: prev {} is not before {}", *s.prev, s.window);
  }
  CRUCIBLE_RETURN_IF_ERROR(decode_members(j["uids"], j["digests"], s));
  return s;
}

Result<AggregationSet> decode_set(ByteSpan bytes) {
  return decode_set(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

chain::Hash32 set_basis(ByteSpan published) { return chain::keccak256(published); }

AggregationSet choose_set(std::uint64_t window, std::optional<std::uint64_t> prev, std::vector<SetCandidate> candidates,
                          std::size_t top) {
  std::erase_if(candidates, [](const SetCandidate& c) { return !c.admitted; });
  std::sort(candidates.begin(), candidates.end(), [](const SetCandidate& a, const SetCandidate& b) {
    return a.final_score != b.final_score ? a.final_score > b.final_score : a.uid < b.uid;
  });
  if (candidates.size() > top) candidates.resize(top);
  std::sort(candidates.begin(), candidates.end(), [](auto& a, auto& b) { return a.uid < b.uid; });
  AggregationSet set;
  set.window = window;
  set.prev = prev;
  for (const SetCandidate& c : candidates) {
    set.uids.push_back(c.uid);
    set.digests.push_back(c.digest);
  }
  return set;
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

}  // namespace crucible::protocol
