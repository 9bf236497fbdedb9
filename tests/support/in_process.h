// Pieces for running nodes in process: a synthetic token dataset, a tiny
// model shape, deterministic keys, and a LocalStore-backed NodeIo on a
// FakeChain.
#pragma once

#include <filesystem>
#include <memory>

#include "crucible/chain/keys.h"
#include "crucible/common/model_config.h"
#include "crucible/protocol/node_io.h"
#include "crucible/storage/peer_location.h"
#include "crucible/storage/storage_options.h"
#include "support/fake_chain.h"

namespace crucible::testing {

// 64 documents of 63 random tokens (vocabulary 64, end-of-text 63) as the
// "train" split in dir, and 8 more as the held-out "val" split.
void write_token_dataset(const std::filesystem::path& dir);
// A one-layer model (dim 16, seq_len 8): a training step takes milliseconds.
model::ModelConfig tiny_model();
// A valid private key made from n.
chain::PrivateKey test_key(std::uint32_t n);
// Peers on this machine: file:// locations accepted.
storage::PeerPolicy local_peers();
// [storage] for a file:// store at dir.
storage::StorageOptions file_store(const std::filesystem::path& dir);
// The key's view of the fake chain, a LocalStore at store_dir, peers opened
// from their commitments, `clock` (the system's unless given).
protocol::NodeIo local_io(FakeChain& chain, const chain::PrivateKey& key, const std::filesystem::path& store_dir,
                          std::shared_ptr<Clock> clock = nullptr);

}  // namespace crucible::testing
