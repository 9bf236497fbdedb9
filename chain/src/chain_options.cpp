#include "crucible/chain/chain_options.h"

namespace crucible::chain {

void bind_options(config::Schema& schema, ChainOptions& o) {
  schema.add_string("chain.rpc_url", &o.rpc_url, "Ethereum JSON-RPC endpoint (Bittensor: the node's port 9944).");
  schema.add_int("chain.chain_id", &o.chain_id,
                 "Expected chain id: 964 Bittensor mainnet, 945 testnet; 0 accepts whatever the node reports.", 0,
                 std::numeric_limits<std::int64_t>::max());
  schema.add_int("chain.netuid", &o.netuid, "Subnet id.", 0, 65535);
  schema.add_double("chain.rpc_timeout_s", &o.rpc_timeout_s, "Deadline of one RPC call, retries included.", 0.1, 600);
  schema.add_double("chain.receipt_timeout_s", &o.receipt_timeout_s, "How long to wait for a transaction to be mined.",
                    1, 3600);
  schema.add_string("chain.commitments", &o.commitments,
                    "Where nodes' store commitments are read: contract (the local chain's stand-in) or substrate "
                    "(Bittensor: Commitments.CommitmentOf over state_getStorage).",
                    {"contract", "substrate"});
}

EvmChainOptions to_evm_options(const ChainOptions& o) {
  EvmChainOptions e;
  e.rpc.url = o.rpc_url;
  e.rpc.call_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.rpc_timeout_s * 1000));
  e.tx.receipt_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.receipt_timeout_s * 1000));
  e.expected_chain_id = o.chain_id;
  e.commitments = o.commitments == "substrate" ? CommitmentSource::kSubstrate : CommitmentSource::kContract;
  return e;
}

}  // namespace crucible::chain
