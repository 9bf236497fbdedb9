// The [chain] section of a node's config.
#pragma once

#include <cstdint>
#include <string>

#include "crucible/chain/evm_chain.h"
#include "crucible/common/config.h"

namespace crucible::chain {

struct ChainOptions {
  std::string rpc_url = "http://127.0.0.1:8545";
  std::uint64_t chain_id = 0;  // expected chain id; 0 accepts the node's (local chains only)
  std::uint16_t netuid = 1;
  double rpc_timeout_s = 10.0;
  double receipt_timeout_s = 120.0;
  std::string commitments = "contract";  // "contract" (local stand-in) or "substrate" (Bittensor)
};

void bind_options(config::Schema& schema, ChainOptions& options);

EvmChainOptions to_evm_options(const ChainOptions& options);

}  // namespace crucible::chain
