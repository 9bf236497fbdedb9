#include "crucible/miner/fingerprint.h"

#include <bit>

#include <nlohmann/json.hpp>

namespace crucible::miner {

std::vector<std::int64_t> fingerprint_positions(const chain::Hash32& basis, std::string_view name, std::int64_t numel,
                                                int count) {
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(count));
  for (int j = 0; j < count; ++j) {
    std::uint8_t le[4] = {std::uint8_t(j), std::uint8_t(j >> 8), std::uint8_t(j >> 16), std::uint8_t(j >> 24)};
    chain::Keccak256 h;
    chain::Hash32 d = h.update(basis).update(as_bytes(name)).update(ByteSpan(le, 4)).finish();
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(d[static_cast<std::size_t>(i)]) << (8 * i);
    out.push_back(static_cast<std::int64_t>(v % static_cast<std::uint64_t>(numel)));
  }
  return out;
}

Fingerprint take_fingerprint(std::uint64_t window, std::uint16_t uid, const chain::Hash32& basis,
                             const std::vector<TensorSpec>& specs,
                             const std::function<float(std::size_t, std::int64_t)>& value) {
  Fingerprint f{window, uid, basis, {}};
  for (std::size_t t = 0; t < specs.size(); ++t) {
    std::vector<float> v;
    for (std::int64_t pos : fingerprint_positions(basis, specs[t].name, specs[t].numel())) v.push_back(value(t, pos));
    f.values.push_back(std::move(v));
  }
  return f;
}

chain::Hash32 fingerprint_digest(const Fingerprint& f) {
  chain::Keccak256 h;
  h.update(f.basis);
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

}  // namespace crucible::miner
