// Object keys of protocol.md §9, each under the protocol version's prefix,
// inside a node's own bucket/prefix.
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "crucible/common/protocol_options.h"

namespace crucible::keys {

inline std::string prefix() { return fmt::format("v{}/", kProtocolVersion); }
inline std::string gradient(std::uint64_t window) { return fmt::format("v{}/gradient/{}.crg", kProtocolVersion, window); }
inline std::string fingerprint(std::uint64_t window) {
  return fmt::format("v{}/fingerprint/{}.json", kProtocolVersion, window);
}
inline std::string aggregate_prefix() { return fmt::format("v{}/aggregate/", kProtocolVersion); }
inline std::string aggregate(std::uint64_t window) { return fmt::format("v{}/aggregate/{}.json", kProtocolVersion, window); }
inline std::string checkpoint(std::uint64_t global_step) {
  return fmt::format("v{}/checkpoint/{}/model.safetensors", kProtocolVersion, global_step);
}
inline std::string checkpoint_latest() { return fmt::format("v{}/checkpoint/LATEST.json", kProtocolVersion); }

}  // namespace crucible::keys
