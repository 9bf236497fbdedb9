// The real I/O of a node binary, built from its config: the EVM chain, the
// node's own store (read and write credentials), and an opener for peers'
// stores. Only the node binaries' main() calls this; node libraries receive
// what it builds (protocol::NodeIo) and never build their own.
#pragma once

#include <chrono>

#include "crucible/chain/keys.h"
#include "crucible/cli/node_config.h"
#include "crucible/protocol/node_io.h"
#include "crucible/storage/peer_location.h"

namespace crucible::cli {

// What this node accepts from peers' store locations ([storage]), every call
// on a peer's store within `deadline`, retries included.
storage::PeerPolicy peer_policy(const NodeConfig& config, std::chrono::milliseconds deadline);

// peer_deadline: the deadline of every call on a peer's store, retries
// included; which peer URLs are accepted comes from [storage].
Result<protocol::NodeIo> make_node_io(const NodeConfig& config, const chain::PrivateKey& key,
                                      std::chrono::milliseconds peer_deadline);

}  // namespace crucible::cli
