// What a node must hold to join its network, checked once at start before
// the node joins the chain or posts anything: its training data fits the
// model and is the network's, and its genesis model is the network's
// (protocol.dataset_sha256, protocol.genesis_sha256; docs/network.md). Both
// nodes and `crucible config check` use these, so the three agree.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "crucible/common/dataset.h"
#include "crucible/common/model_config.h"
#include "crucible/protocol/options.h"

namespace crucible::protocol {

// Opens the training split at `dir` (the value of config key `key`, e.g.
// "miner.data_dir") and checks that its vocabulary fits `model`, that it
// holds a window's samples, and, when the network pins one, that its digest
// is protocol.dataset_sha256. Every error names `key` and what to do.
Result<data::Dataset> open_network_data(const std::string& dir, std::string_view key, const model::ModelConfig& model,
                                        const Options& protocol);

// The genesis model a node built from [model] and protocol.init_seed against
// protocol.genesis_sha256 (nothing when not pinned; `parameters_sha256` is
// called only when it is).
Status check_genesis(const Options& protocol, const std::function<std::string()>& parameters_sha256);

}  // namespace crucible::protocol
