// `crucible network init|show|verify`: a network's manifest (docs/network.md).
#include <cstdio>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "crucible/cli/commands.h"
#include "crucible/cli/network_manifest.h"
#include "crucible/cli/node_config.h"
#include "crucible/common/bytes.h"
#include "crucible/common/dataset.h"
#include "crucible/common/file_io.h"
#include "crucible/common/model.h"

namespace crucible::cli {
namespace {

namespace fs = std::filesystem;

Result<std::string> genesis_sha256(const NetworkManifest& m) {
  CRUCIBLE_ASSIGN_OR_RETURN(model::Llama genesis, model::Llama::create(m.model, m.protocol.init_seed));
  return genesis.parameters_sha256();
}

// Opens the training split, reading every shard against its SHA-256.
Result<data::Dataset> open_verified(const std::string& dir) {
  auto d = data::Dataset::open(dir, "train", /*verify=*/true);
  if (!d.is_ok()) return d.status().with_context(fmt::format("dataset {}", dir));
  return d;
}

struct InitArgs {
  CommonFlags flags;
  std::string name, data, out;
  bool force = false;
};

int init(const InitArgs& a, char** envp) {
  NodeConfig config;
  Status st = load_node_config(Role::kAny, a.flags, envp, config);
  if (!st.is_ok()) {
    fmt::print(stderr, "invalid config:\n{}\n", st.message());
    return kExitUsage;
  }
  if (!a.force && fs::exists(a.out)) {
    fmt::print(stderr, "{} exists; --force replaces it\n", a.out);
    return kExitUsage;
  }
  NetworkManifest m;
  m.name = a.name;
  m.chain = config.chain;
  m.protocol = config.protocol;
  m.model = config.model;
  auto data = open_verified(a.data);
  if (!data.is_ok()) {
    fmt::print(stderr, "{}\n", data.status().to_string());
    return kExitUsage;
  }
  if (Status fits = data::check_fits(*data, a.data, m.model, m.protocol.samples_per_window); !fits.is_ok()) {
    fmt::print(stderr, "{}\n", fits.message());
    return kExitUsage;
  }
  m.protocol.dataset_sha256 = data::dataset_sha256(data->info());
  auto genesis = genesis_sha256(m);
  if (!genesis.is_ok()) {
    fmt::print(stderr, "{}\n", genesis.status().to_string());
    return kExitUsage;
  }
  m.protocol.genesis_sha256 = *genesis;
  const std::string text = render_manifest(m);
  if (Status w = files::write_file_atomic(a.out, as_bytes(text)); !w.is_ok()) {
    fmt::print(stderr, "{}\n", w.to_string());
    return kExitFailure;
  }
  fmt::print("wrote {}: network \"{}\", netuid {}, a {}-parameter model, dataset {}, genesis {}\n", a.out, m.name,
             m.chain.netuid, m.model.num_parameters(), m.protocol.dataset_sha256, m.protocol.genesis_sha256);
  return kExitOk;
}

int show(const std::string& file) {
  auto m = load_manifest(file);
  if (!m.is_ok()) {
    fmt::print(stderr, "{}\n", m.status().message());
    return kExitUsage;
  }
  fmt::print(
      "network   {}\nchain     chain id {}, netuid {}, commitments from {}\nmodel     {} parameters ({})\n"
      "windows   {} blocks, {} samples per uid\ndataset   {}\ngenesis   {}\njoin with --network {}\n",
      m->name, m->chain.chain_id, m->chain.netuid, m->chain.commitments, m->model.num_parameters(),
      m->model.canonical(), m->protocol.blocks_per_window, m->protocol.samples_per_window,
      m->protocol.dataset_sha256.empty() ? "(not pinned)" : m->protocol.dataset_sha256,
      m->protocol.genesis_sha256.empty() ? "(not pinned)" : m->protocol.genesis_sha256, file);
  return kExitOk;
}

int verify(const std::string& file, const std::string& data_dir) {
  auto m = load_manifest(file);
  if (!m.is_ok()) {
    fmt::print(stderr, "{}\n", m.status().message());
    return kExitUsage;
  }
  int failures = 0;
  auto report = [&](const std::string& what, const Status& st) {
    if (st.is_ok()) {
      fmt::print("ok        {}\n", what);
    } else {
      fmt::print("MISMATCH  {}: {}\n", what, st.message());
      ++failures;
    }
  };
  auto genesis = genesis_sha256(*m);
  report("genesis model", genesis.is_ok() ? protocol::check_pinned_digest(
                                                "protocol.genesis_sha256", m->protocol.genesis_sha256,
                                                [&] { return *genesis; }, "the genesis model of [model] and init_seed")
                                          : genesis.status());
  if (!data_dir.empty()) {
    auto data = open_verified(data_dir);
    Status st = data.status();
    if (data.is_ok()) st = data::check_fits(*data, data_dir, m->model, m->protocol.samples_per_window);
    if (st.is_ok()) {
      st = protocol::check_pinned_digest(
          "protocol.dataset_sha256", m->protocol.dataset_sha256, [&] { return data::dataset_sha256(data->info()); },
          "the dataset at " + data_dir);
    }
    report("dataset " + data_dir, st);
  }
  if (failures > 0) return kExitUsage;
  fmt::print("{}: this machine can join network \"{}\"\n", file, m->name);
  return kExitOk;
}

}  // namespace

void add_network_commands(CLI::App& app, int& exit_code, char** envp) {
  CLI::App* group = app.add_subcommand("network", "A network's manifest: what every node of it must use");
  group->require_subcommand(1);

  auto init_args = std::make_shared<InitArgs>();
  CLI::App* init_cmd = group->add_subcommand(
      "init", "Write a manifest from a config (chain, [protocol], [model]) and a prepared dataset, with their digests");
  add_common_flags(*init_cmd, init_args->flags);
  init_cmd->add_option("--name", init_args->name, "The network's name")->required();
  init_cmd->add_option("--data", init_args->data, "The network's prepared dataset folder")
      ->required()
      ->check(CLI::ExistingDirectory);
  init_cmd->add_option("--out", init_args->out, "The manifest file to write")->required();
  init_cmd->add_flag("--force", init_args->force, "Replace an existing file");
  init_cmd->callback([init_args, &exit_code, envp] { exit_code = init(*init_args, envp); });

  auto file = std::make_shared<std::string>();
  CLI::App* show_cmd = group->add_subcommand("show", "Print what a manifest pins");
  show_cmd->add_option("file", *file, "The manifest")->required()->check(CLI::ExistingFile);
  show_cmd->callback([file, &exit_code] { exit_code = show(*file); });

  auto verify_file = std::make_shared<std::string>();
  auto data = std::make_shared<std::string>();
  CLI::App* verify_cmd = group->add_subcommand(
      "verify", "Check a manifest, the genesis model this build makes from it, and a dataset folder against it");
  verify_cmd->add_option("file", *verify_file, "The manifest")->required()->check(CLI::ExistingFile);
  verify_cmd->add_option("--data", *data, "A prepared dataset folder to check (every shard is read)");
  verify_cmd->callback([verify_file, data, &exit_code] { exit_code = verify(*verify_file, *data); });
}

}  // namespace crucible::cli
