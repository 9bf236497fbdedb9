#include "crucible/cli/node_io.h"

#include "crucible/chain/evm_chain.h"
#include "crucible/storage/store_url.h"

namespace crucible::cli {

Result<protocol::NodeIo> make_node_io(const NodeConfig& config, const chain::PrivateKey& key,
                                      std::chrono::milliseconds peer_deadline) {
  storage::PeerPolicy peer_policy;
  peer_policy.retry = config.storage.retry_policy();
  peer_policy.retry.deadline = peer_deadline;
  peer_policy.allow_file = config.storage.peer_file_urls;
  peer_policy.allow_private_endpoints = config.storage.peer_private_endpoints;
  protocol::NodeIo io;
  CRUCIBLE_ASSIGN_OR_RETURN(auto evm, chain::EvmChain::connect(chain::to_evm_options(config.chain), key));
  io.chain = std::move(evm);
  CRUCIBLE_ASSIGN_OR_RETURN(io.store,
                            storage::open_store(config.storage.url, config.storage.read_credentials(),
                                                config.storage.write_credentials(), config.storage.retry_policy()));
  io.open_peer_store = protocol::default_store_opener(peer_policy);
  io.clock = system_clock();
  return io;
}

}  // namespace crucible::cli
