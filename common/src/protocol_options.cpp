#include "crucible/common/protocol_options.h"

namespace crucible {

void bind_options(config::Schema& schema, ProtocolOptions& options) {
  schema.add_int("protocol.blocks_per_window", &options.blocks_per_window,
                 "Blocks per window: window = block / blocks_per_window.", 1, 1'000'000);
  schema.add_double("protocol.upload_slot_s", &options.upload_slot_s,
                    "Seconds after the first block of window w+1 in which a gradient for w may be uploaded.", 0.1,
                    86'400);
  schema.add_double("protocol.clock_skew_s", &options.clock_skew_s,
                    "Clock skew allowed when checking an upload's Last-Modified against its slot.", 0, 3'600);
  schema.add_int("protocol.validator_offset", &options.validator_offset,
                 "Validators process window w during window w + validator_offset.", 1, 16);
  schema.add_int("protocol.samples_per_window", &options.samples_per_window,
                 "Samples assigned to each uid per window (the same on miners and validators).", 1, 1'000'000);
  schema.add_double("protocol.outer_lr", &options.outer_lr,
                    "Outer learning rate: theta <- theta - outer_lr * aggregate.", 1e-6, 10);
  schema.add_int("protocol.init_seed", &options.init_seed, "Seed of the genesis model's initialisation.");
  schema.add_int("protocol.aggregate_top", &options.aggregate_top,
                 "Uids in a window's aggregation set: the top ones by final score.", 1, 256);
}

}  // namespace crucible
