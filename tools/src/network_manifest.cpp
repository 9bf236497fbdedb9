#include "crucible/cli/network_manifest.h"

#include <fmt/format.h>

namespace crucible::cli {

bool is_manifest_key(std::string_view key) {
  return key == "network.name" || key == "chain.chain_id" || key == "chain.netuid" || key == "chain.commitments" ||
         key.starts_with("protocol.") || key.starts_with("model.");
}

config::Schema manifest_schema(NetworkManifest& manifest) {
  config::Schema schema;
  schema.add_string("network.name", &manifest.name, "The network's name, for people and logs.");
  chain::bind_options(schema, manifest.chain);
  protocol::bind_options(schema, manifest.protocol);
  model::bind_options(schema, manifest.model);
  schema.retain(is_manifest_key);
  return schema;
}

Result<NetworkManifest> load_manifest(const std::filesystem::path& file, config::Origins* origins) {
  NetworkManifest manifest;
  config::Schema schema = manifest_schema(manifest);
  config::LoadInputs inputs;
  inputs.files = {file.string()};
  config::Origins own;
  Status st = config::load(schema, inputs, &own);
  if (!st.is_ok()) return st.with_context(fmt::format("network manifest {}", file.string()));
  std::vector<std::string> missing;
  for (const config::Field& f : schema.fields())
    if (own[f.key].kind != config::Origin::Kind::kFile) missing.push_back(f.key);
  if (!missing.empty()) {
    return invalid_argument(
        "network manifest {} does not set {} (a manifest states every value; crucible network init writes them)",
        file.string(), fmt::join(missing, ", "));
  }
  if (manifest.name.empty()) return invalid_argument("network manifest {}: network.name is empty", file.string());
  if (origins != nullptr) *origins = std::move(own);
  return manifest;
}

std::string render_manifest(NetworkManifest& manifest) {
  config::Schema schema = manifest_schema(manifest);
  std::string out = fmt::format(
      "# crucible network manifest: \"{}\". Every node of this network uses these\n"
      "# values; a node joins with `--network FILE` (or network.manifest = \"FILE\")\n"
      "# and refuses to start when its own config sets one of them differently.\n"
      "# Check a data folder against it: crucible network verify FILE --data DIR\n",
      manifest.name);
  std::string section;
  for (const config::Field& f : schema.fields()) {
    const auto dot = f.key.rfind('.');
    const std::string sec = f.key.substr(0, dot);
    if (sec != section) {
      out += fmt::format("\n[{}]\n", sec);
      section = sec;
    }
    out += fmt::format("{} = {}\n", f.key.substr(dot + 1), f.render());
  }
  return out;
}

std::vector<std::string> manifest_conflicts(NetworkManifest& manifest, const config::Origins& manifest_origins,
                                            const config::Schema& config_schema, const config::Origins& origins) {
  std::vector<std::string> out;
  config::Schema schema = manifest_schema(manifest);
  for (const config::Field& theirs : schema.fields()) {
    const config::Field* mine = config_schema.find(theirs.key);
    if (mine == nullptr || mine->render() == theirs.render()) continue;
    auto at = [](const config::Origins& o, const std::string& key) {
      auto it = o.find(key);
      return it == o.end() ? std::string("default") : it->second.describe();
    };
    out.push_back(fmt::format("{} = {} from {}, the network's is {} ({})", theirs.key, mine->render(),
                              at(origins, theirs.key), theirs.render(), at(manifest_origins, theirs.key)));
  }
  return out;
}

}  // namespace crucible::cli
