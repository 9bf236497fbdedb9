#include "crucible/protocol/node_io.h"

namespace crucible::protocol {

Status check(const NodeIo& io) {
  if (!io.chain) return invalid_argument("node I/O: no chain");
  if (!io.store) return invalid_argument("node I/O: no store");
  if (!io.open_peer_store) return invalid_argument("node I/O: no peer store opener");
  if (!io.clock) return invalid_argument("node I/O: no clock");
  return Status::ok();
}

}  // namespace crucible::protocol
