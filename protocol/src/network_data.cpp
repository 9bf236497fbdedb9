#include "crucible/protocol/network_data.h"

#include <fmt/format.h>

namespace crucible::protocol {

Result<data::Dataset> open_network_data(const std::string& dir, std::string_view key, const model::ModelConfig& model,
                                        const Options& protocol) {
  if (dir.empty()) {
    return invalid_argument(
        "{} is not set: the folder `crucible data prepare` wrote (docs/network.md names the network's data)", key);
  }
  auto data = data::Dataset::open(dir, "train");
  if (!data.is_ok()) {
    return Status(data.status().code(),
                  fmt::format("{}: {} (prepare it with `crucible data prepare`)", key, data.status().message()));
  }
  // A token past the model's vocabulary would fail deep in an evaluation.
  CRUCIBLE_RETURN_IF_ERROR(data::check_fits(*data, dir, model, protocol.samples_per_window).with_context(key));
  CRUCIBLE_RETURN_IF_ERROR(check_pinned_digest(
      "protocol.dataset_sha256", protocol.dataset_sha256, [&] { return data::dataset_sha256(data->info()); },
      "the dataset at " + dir));
  return data;
}

Status check_genesis(const Options& protocol, const std::function<std::string()>& parameters_sha256) {
  return check_pinned_digest("protocol.genesis_sha256", protocol.genesis_sha256, parameters_sha256,
                             "the genesis model ([model] and protocol.init_seed)");
}

}  // namespace crucible::protocol
