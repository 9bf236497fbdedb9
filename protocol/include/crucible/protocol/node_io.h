// What a node reaches the outside through (architecture.md "Boundaries"),
// handed to it by main.cpp or by a test: the chain, the node's own store,
// how to open a peer's store, and the clock. Nodes never build their own.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "crucible/chain/chain.h"
#include "crucible/common/clock.h"
#include "crucible/protocol/peers.h"
#include "crucible/storage/object_store.h"

namespace crucible::protocol {

struct NodeIo {
  std::shared_ptr<chain::Chain> chain;
  std::shared_ptr<storage::ObjectStore> store;  // this node's own (read-write)
  StoreOpener open_peer_store;                  // peers' (read-only credentials)
  std::shared_ptr<Clock> clock = system_clock();
};

// invalid_argument naming what is missing.
Status check(const NodeIo& io);

// How often both nodes look again at what they wait for (the chain's head,
// a set, a store).
inline constexpr auto kPoll = std::chrono::milliseconds(250);

// The chain's head, with transient errors retried. When it cannot be read
// the error is logged and the call waits four polls (or until `stop`)
// before returning none: the caller's loop goes round again.
std::optional<std::uint64_t> chain_head(NodeIo& io, const std::atomic<bool>& stop);

}  // namespace crucible::protocol
