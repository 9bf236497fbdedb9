#include "crucible/protocol/fingerprint.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include <nlohmann/json.hpp>

namespace crucible::protocol {

std::vector<std::int64_t> fingerprint_positions(const chain::Hash32& basis, std::uint16_t uid, std::string_view name,
                                                std::int64_t numel, int count) {
  const std::uint8_t uid_le[2] = {std::uint8_t(uid), std::uint8_t(uid >> 8)};
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(count));
  for (int j = 0; j < count; ++j) {
    std::uint8_t le[4] = {std::uint8_t(j), std::uint8_t(j >> 8), std::uint8_t(j >> 16), std::uint8_t(j >> 24)};
    chain::Keccak256 h;
    chain::Hash32 d =
        h.update(basis).update(ByteSpan(uid_le, 2)).update(as_bytes(name)).update(ByteSpan(le, 4)).finish();
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(d[static_cast<std::size_t>(i)]) << (8 * i);
    out.push_back(static_cast<std::int64_t>(v % static_cast<std::uint64_t>(numel)));
  }
  return out;
}

std::vector<std::vector<std::int64_t>> fingerprint_positions(const chain::Hash32& basis, std::uint16_t uid,
                                                             const std::vector<TensorSpec>& specs) {
  std::vector<std::vector<std::int64_t>> out;
  out.reserve(specs.size());
  for (const auto& s : specs) out.push_back(fingerprint_positions(basis, uid, s.name, s.numel()));
  return out;
}

chain::Hash32 fingerprint_digest(const Fingerprint& f) {
  std::uint8_t head[10];
  for (int i = 0; i < 8; ++i) head[i] = std::uint8_t(f.window >> (8 * i));
  head[8] = std::uint8_t(f.uid);
  head[9] = std::uint8_t(f.uid >> 8);
  chain::Keccak256 h;
  h.update(f.basis).update(ByteSpan(head, 10));
  for (const auto& tensor : f.values) {
    for (float v : tensor) {
      auto u = std::bit_cast<std::uint32_t>(v);
      std::uint8_t le[4] = {std::uint8_t(u), std::uint8_t(u >> 8), std::uint8_t(u >> 16), std::uint8_t(u >> 24)};
      h.update(ByteSpan(le, 4));
    }
  }
  return h.finish();
}

std::string encode_fingerprint(const Fingerprint& f, const std::vector<TensorSpec>& specs) {
  nlohmann::json values = nlohmann::json::object();
  for (std::size_t t = 0; t < specs.size() && t < f.values.size(); ++t) values[specs[t].name] = f.values[t];
  nlohmann::json j = {{"v", 1},
                      {"window", f.window},
                      {"uid", f.uid},
                      {"basis", to_hex(f.basis)},
                      {"digest", to_hex(fingerprint_digest(f))},
                      {"values", values}};
  return j.dump();
}

namespace {

Result<std::vector<float>> decode_values(const nlohmann::json& v, const std::string& name) {
  if (!v.is_array() || v.size() != static_cast<std::size_t>(kFingerprintPositions)) {
    return invalid_argument("fingerprint: tensor '{}' does not hold {} values", name, kFingerprintPositions);
  }
  std::vector<float> out;
  out.reserve(v.size());
  for (const auto& x : v) {
    if (!x.is_number()) return invalid_argument("fingerprint: tensor '{}' holds a non-number", name);
    const auto f = static_cast<float>(x.get<double>());
    if (!std::isfinite(f)) return invalid_argument("fingerprint: tensor '{}' holds a non-finite value", name);
    out.push_back(f);
  }
  return out;
}

}  // namespace

Result<Fingerprint> decode_fingerprint(ByteSpan bytes, const std::vector<TensorSpec>& specs) {
  if (bytes.size() > kMaxFingerprintBytes) {
    return invalid_argument("fingerprint of {} bytes exceeds {}", bytes.size(), kMaxFingerprintBytes);
  }
  auto j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (!j.is_object() || !j.contains("v") || j["v"] != 1) return invalid_argument("fingerprint: not a v1 object");
  auto is_u = [&](const char* k) { return j.contains(k) && j[k].is_number_unsigned(); };
  auto is_s = [&](const char* k) { return j.contains(k) && j[k].is_string(); };
  if (!is_u("window") || !is_u("uid") || !is_s("basis") || !is_s("digest") || !j.contains("values") ||
      !j["values"].is_object()) {
    return invalid_argument("fingerprint: window, uid, basis, digest or values missing");
  }
  if (j["uid"].get<std::uint64_t>() > 0xFFFF) return invalid_argument("fingerprint: uid out of range");
  Fingerprint f;
  f.window = j["window"].get<std::uint64_t>();
  f.uid = static_cast<std::uint16_t>(j["uid"].get<std::uint64_t>());
  CRUCIBLE_ASSIGN_OR_RETURN(f.basis, from_hex_fixed<32>(j["basis"].get<std::string>()));
  CRUCIBLE_ASSIGN_OR_RETURN(chain::Hash32 digest, from_hex_fixed<32>(j["digest"].get<std::string>()));
  const auto& values = j["values"];
  if (values.size() != specs.size()) {
    return invalid_argument("fingerprint: {} tensors, the model {}", values.size(), specs.size());
  }
  for (const auto& spec : specs) {
    if (!values.contains(spec.name)) return invalid_argument("fingerprint: tensor '{}' missing", spec.name);
    CRUCIBLE_ASSIGN_OR_RETURN(auto v, decode_values(values[spec.name], spec.name));
    f.values.push_back(std::move(v));
  }
  if (fingerprint_digest(f) != digest) return invalid_argument("fingerprint: digest does not match the values");
  return f;
}

double steps_behind(const TensorValues& peer, const TensorValues& ours, const TensorValues& last_step, double cap) {
  if (peer.size() != ours.size()) return cap;
  double diff = 0;
  double step = 0;
  for (std::size_t t = 0; t < peer.size(); ++t) {
    if (peer[t].size() != ours[t].size()) return cap;
    for (std::size_t i = 0; i < peer[t].size(); ++i) {
      const double d = static_cast<double>(peer[t][i]) - ours[t][i];
      diff += d * d;
    }
    if (t < last_step.size()) {
      for (float s : last_step[t]) step += static_cast<double>(s) * s;
    }
  }
  if (diff == 0) return 0;
  if (step == 0) return cap;
  return std::min(cap, std::sqrt(diff) / std::sqrt(step));
}

}  // namespace crucible::protocol
