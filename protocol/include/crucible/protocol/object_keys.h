// Object keys of protocol.md §9, each under the protocol version's prefix,
// inside a node's own bucket/prefix.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "crucible/protocol/options.h"

namespace crucible::protocol::keys {

inline std::string prefix() { return fmt::format("v{}/", kVersion); }
inline std::string gradient(std::uint64_t window) { return fmt::format("v{}/gradient/{}.crg", kVersion, window); }
// The miner's commitment to its packet, put during the slot: the Keccak-256
// of the sealed packet, 32 bytes. The packet follows after the slot closes.
inline std::string commitment(std::uint64_t window) { return fmt::format("v{}/commitment/{}.bin", kVersion, window); }
inline constexpr std::uint64_t kCommitmentBytes = 32;
inline std::string fingerprint(std::uint64_t window) {
  return fmt::format("v{}/fingerprint/{}.json", kVersion, window);
}
inline std::string aggregate_prefix() { return fmt::format("v{}/aggregate/", kVersion); }
inline std::string aggregate(std::uint64_t window) { return fmt::format("v{}/aggregate/{}.json", kVersion, window); }
// A member's packet as the lead kept it when it fixed window w's set: nodes
// apply the set from the lead's copies, never from the members' buckets.
inline std::string set_packet(std::uint64_t window, std::uint16_t uid) {
  return fmt::format("v{}/set/{}/{}.crg", kVersion, window, uid);
}
inline std::string checkpoint(std::uint64_t global_step) {
  return fmt::format("v{}/checkpoint/{}/model.safetensors", kVersion, global_step);
}
inline std::string checkpoint_latest() { return fmt::format("v{}/checkpoint/LATEST.json", kVersion); }
// The node's claim on its own store (protocol/instance.h): one running
// instance per key.
inline std::string instance() { return fmt::format("v{}/instance.json", kVersion); }

// The window of an aggregate/{w}.json key (as listed); none for any other key.
std::optional<std::uint64_t> aggregate_window(std::string_view key);

}  // namespace crucible::protocol::keys
