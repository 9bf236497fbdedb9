#include "crucible/cli/node_io.h"

#include "crucible/chain/evm_chain.h"
#include "crucible/storage/store_url.h"

namespace crucible::cli {

Result<protocol::NodeIo> make_node_io(const NodeConfig& config, const chain::PrivateKey& key,
                                      storage::RetryPolicy peer_policy) {
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
