// A network manifest (docs/network.md): the one file a subnet owner
// publishes so that every node of the network uses the same chain, netuid,
// [protocol] values, model shape, dataset and genesis model. Nodes load it
// as their first config layer (`--network FILE` or `network.manifest`) and
// refuse to start when a later layer sets one of its keys differently.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "crucible/chain/chain_options.h"
#include "crucible/common/config.h"
#include "crucible/common/model_config.h"
#include "crucible/common/status.h"
#include "crucible/protocol/options.h"

namespace crucible::cli {

struct NetworkManifest {
  std::string name;
  chain::ChainOptions chain;  // chain_id, netuid and commitments only
  protocol::Options protocol;
  model::ModelConfig model;
};

// The manifest's keys: network.name, chain.chain_id, chain.netuid,
// chain.commitments, every protocol.* and model.* key.
config::Schema manifest_schema(NetworkManifest& manifest);
bool is_manifest_key(std::string_view key);

// Reads a manifest. Unknown keys, and any manifest key the file does not
// set, are errors naming the key: a manifest states every value, so that
// nodes of different versions (whose defaults may differ) agree.
Result<NetworkManifest> load_manifest(const std::filesystem::path& file, config::Origins* origins = nullptr);

// The manifest as TOML, every key, with a header saying how to join.
std::string render_manifest(NetworkManifest& manifest);

// The keys whose value in `config_schema` (a node's loaded config) differs
// from the manifest's, one line each: "protocol.x = 16 from miner.toml line
// 4, the network's is 32 (network.toml line 12)".
std::vector<std::string> manifest_conflicts(NetworkManifest& manifest, const config::Origins& manifest_origins,
                                            const config::Schema& config_schema, const config::Origins& origins);

}  // namespace crucible::cli
