// Protocol constants every node of a network must agree on (protocol.md §1).
// Defaults are the production values; configs/local/ holds the demo's.
#pragma once

#include <cstdint>

#include "crucible/common/config.h"

namespace crucible {

struct ProtocolOptions {
  std::uint32_t blocks_per_window = 100;  // window = block / blocks_per_window
  double upload_slot_s = 70.0;            // upload slot after the start of window w+1
  double clock_skew_s = 5.0;              // allowed skew when checking Last-Modified
  std::uint32_t validator_offset = 1;     // validators process window w during w + offset
  std::uint32_t samples_per_window = 64;  // samples assigned to each uid per window (§2)
  double outer_lr = 0.7;                  // alpha of the outer step: theta <- theta - alpha * aggregate (§3)
  std::uint64_t init_seed = 1;            // seed of the genesis model (docs/protocol.md §3)
  std::uint32_t aggregate_top = 15;       // uids in a window's aggregation set (§8)
};

inline constexpr std::uint16_t kProtocolVersion = 1;  // in packets and object keys (v1/...)

void bind_options(config::Schema& schema, ProtocolOptions& options);

}  // namespace crucible
