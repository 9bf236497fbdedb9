#include "crucible/protocol/node_io.h"

#include "crucible/common/log.h"
#include "crucible/common/retry.h"

namespace crucible::protocol {

Status check(const NodeIo& io) {
  if (!io.chain) return invalid_argument("node I/O: no chain");
  if (!io.store) return invalid_argument("node I/O: no store");
  if (!io.open_peer_store) return invalid_argument("node I/O: no peer store opener");
  if (!io.clock) return invalid_argument("node I/O: no clock");
  return Status::ok();
}

std::optional<std::uint64_t> chain_head(NodeIo& io, const std::atomic<bool>& stop) {
  auto head = retry_transient("block number", *io.clock, stop, [&] { return io.chain->block_number(); });
  if (head.is_ok()) return *head;
  if (!stop.load()) {
    log::error("cannot read the chain's head; retrying", {{"error", head.status().to_string()}});
    io.clock->sleep(4 * kPoll, stop);
  }
  return std::nullopt;
}

}  // namespace crucible::protocol
