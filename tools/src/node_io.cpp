#include "crucible/cli/node_io.h"

#include "crucible/chain/evm_chain.h"
#include "crucible/storage/store_url.h"

namespace crucible::cli {

storage::PeerPolicy peer_policy(const NodeConfig& config, std::chrono::milliseconds deadline) {
  storage::PeerPolicy p;
  p.retry = config.storage.retry_policy();
  p.retry.deadline = deadline;
  p.allow_file = config.storage.peer_file_urls;
  p.allow_private_endpoints = config.storage.peer_private_endpoints;
  return p;
}

Result<protocol::NodeIo> make_node_io(const NodeConfig& config, const chain::PrivateKey& key,
                                      std::chrono::milliseconds peer_deadline) {
  protocol::NodeIo io;
  CRUCIBLE_ASSIGN_OR_RETURN(auto evm, chain::EvmChain::connect(chain::to_evm_options(config.chain), key));
  io.chain = std::move(evm);
  CRUCIBLE_ASSIGN_OR_RETURN(io.store,
                            storage::open_store(config.storage.url, config.storage.read_credentials(),
                                                config.storage.write_credentials(), config.storage.retry_policy()));
  io.open_peer_store = protocol::default_store_opener(peer_policy(config, peer_deadline));
  io.clock = system_clock();
  return io;
}

}  // namespace crucible::cli
