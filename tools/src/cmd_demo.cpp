// `crucible demo`: the local network on this machine. A local chain (anvil
// with the stand-in contracts), the Brown corpus as token shards, N miners
// and one validator as real processes, each with its own store folder;
// windows of a few seconds. It prints each window as the validator finishes
// it, writes summary.json and progress.svg (--out), prints the validator's
// score table read from its HTTP API, and stops everything; with --keep it
// prints the dashboard's URL instead and runs on until Ctrl-C.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "crucible/chain/chain_options.h"
#include "crucible/chain/evm_chain.h"
#include "crucible/chain/keystore.h"
#include "crucible/chain/local_chain.h"
#include "crucible/chain/substrate.h"
#include "crucible/cli/commands.h"
#include "crucible/cli/demo_report.h"
#include "crucible/cli/demo_s3.h"
#include "crucible/cli/node_config.h"
#include "crucible/cli/scores.h"
#include "crucible/common/child_process.h"
#include "demo_adversary.h"

namespace crucible::cli {
namespace {

namespace fs = std::filesystem;

struct DemoArgs {
  std::string dir;
  int miners = 2;
  int windows = 4;
  std::string model = "tiny";
  std::uint32_t blocks_per_window = 10;
  std::string out = "demo-out";
  std::vector<std::string> bad_miners;         // noise | zero | copy, one uid each
  std::vector<std::string> validator_options;  // KEY=VALUE lines for [validator]
  std::string store = "file";                  // file: folders; s3: buckets on a local radosgw
  bool keep = false;                           // run on after --windows, dashboard open, until Ctrl-C
};

std::atomic<bool> g_interrupted{false};
extern "C" void on_demo_signal(int) { g_interrupted.store(true); }

fs::path self_dir() {
  std::error_code ec;
  auto exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path(".") : exe.parent_path();
}

// A child process with its output in a log file.
struct Proc {
  std::string name;
  pid_t pid = -1;
  fs::path log;
};

Result<Proc> spawn(const std::string& name, const std::vector<std::string>& argv, const fs::path& log) {
  pid_t pid = fork();
  if (pid < 0) return internal_error("fork failed");
  if (pid == 0) {
    reset_child_for_exec(SIGTERM);
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    setenv("CRUCIBLE_WALLET_PASSWORD", "demo", 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return Proc{name, pid, log};
}

void stop_all(std::vector<Proc>& procs) {
  for (auto& p : procs)
    if (p.pid > 0) kill(p.pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (auto& p : procs) {
    while (p.pid > 0) {
      if (waitpid(p.pid, nullptr, WNOHANG) == p.pid) {
        p.pid = -1;
      } else if (std::chrono::steady_clock::now() > deadline) {
        kill(p.pid, SIGKILL);
        waitpid(p.pid, nullptr, 0);
        p.pid = -1;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  }
}

bool exited(Proc& p) {
  if (p.pid <= 0) return true;
  int status = 0;
  if (waitpid(p.pid, &status, WNOHANG) == p.pid) {
    p.pid = -1;
    return true;
  }
  return false;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int fail(const std::string& what, const Status& st) {
  fmt::print(stderr, "demo: {}: {}\n", what, st.to_string());
  return kExitFailure;
}

// The window a "window done window=N ..." log line is about (0 if none).
std::uint64_t window_of_line(const std::string& line) {
  const auto at = line.find("window=");
  if (at == std::string::npos) return 0;
  std::uint64_t w = 0;
  const char* begin = line.data() + at + 7;
  std::from_chars(begin, line.data() + line.size(), w);
  return w;
}

// Waits until every miner has logged "miner ready" (registered, its store
// location on chain, its model loaded), then answers the next window: the
// first that each of them trains from its start.
Result<std::uint64_t> wait_for_miners(std::vector<Proc>& procs, const fs::path& run,
                                      const chain::ChainOptions& chain_opts, std::uint32_t blocks_per_window) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  for (;;) {
    bool all = true;
    for (auto& p : procs) {
      if (exited(p)) return unavailable("{} stopped early; its log:\n{}", p.name, read_text(p.log));
      if (p.name.rfind("miner", 0) == 0 && read_text(p.log).find("miner ready") == std::string::npos) all = false;
    }
    if (all) break;
    if (g_interrupted.load()) return aborted("interrupted");
    if (std::chrono::steady_clock::now() > deadline) {
      return deadline_exceeded("the miners were not ready within 180 s (logs in {})", (run / "logs").string());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  auto reader = chain::EvmChain::connect(chain::to_evm_options(chain_opts), std::nullopt);
  if (!reader.is_ok()) return reader.status();
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t head, (*reader)->block_number());
  return head / blocks_per_window + 1;
}

// summary.json and progress.svg from the validator's API, and the run's
// figures on the terminal. Windows before `first_window` (the network not
// yet whole) are left out.
Status write_report(const std::string& api, const std::vector<std::uint16_t>& miners, std::uint64_t first_window,
                    const std::string& out) {
  CRUCIBLE_ASSIGN_OR_RETURN(DemoReport report, read_demo_report(api, miners));
  std::erase_if(report.windows, [&](const DemoWindow& w) { return w.window < first_window; });
  CRUCIBLE_RETURN_IF_ERROR(write_demo_outputs(report, out));
  const DemoFigures f = demo_figures(report);
  std::string first = "-", last = "-";
  for (const auto& w : report.windows) {
    if (!w.heldout_loss) continue;
    if (first == "-") first = fmt::format("{:.4f}", *w.heldout_loss);
    last = fmt::format("{:.4f}", *w.heldout_loss);
  }
  fmt::print("\nheld-out loss {} -> {}; {} of {} valid miner uploads aggregated\n", first, last, f.aggregated,
             f.valid_uploads);
  fmt::print("wrote {}/summary.json and {}/progress.svg\n", out, out);
  return Status::ok();
}

// Bad miner j: the account after the honest miners', its store beside
// theirs, the network's config as the nodes read it.
Result<std::unique_ptr<Adversary>> start_adversary(const DemoArgs& a, std::size_t j, const NodeConfig& config,
                                                   const std::vector<chain::PrivateKey>& keys, const fs::path& run,
                                                   const fs::path& data) {
  const std::size_t account = static_cast<std::size_t>(a.miners) + 2 + j;
  AdversaryOptions o(keys[account]);
  o.kind = a.bad_miners[j];
  o.uid = static_cast<std::uint16_t>(account - 1);
  o.store = run / "stores" / fmt::format("bad{}-{}", j + 1, o.kind);
  o.honest_store = run / "stores/miner1";
  o.data = data;
  o.model = config.model;
  o.protocol = config.protocol;
  o.chain = config.chain;
  fmt::print("  bad miner uid {}: {}\n", o.uid, o.kind);
  return Adversary::start(std::move(o));
}

int run_demo(const DemoArgs& a) {
  const fs::path dir = a.dir.empty() ? fs::temp_directory_path() / "crucible-demo" : fs::path(a.dir);
  std::error_code ec;
  fs::remove_all(dir / "run", ec);
  fs::create_directories(dir / "run/logs", ec);
  const fs::path run = dir / "run";
  const fs::path bin = self_dir();
  const fs::path source = CRUCIBLE_SOURCE_DIR;
  const fs::path model_file = source / "configs/models" / (a.model + ".toml");
  if (!fs::exists(model_file)) return fail("model", not_found("no preset {}", model_file.string()));

  if (a.store == "s3" && std::find(a.bad_miners.begin(), a.bad_miners.end(), "copy") != a.bad_miners.end()) {
    fmt::print(stderr, "demo: --bad-miner copy reads the first miner's folder: use it with --store file\n");
    return kExitUsage;
  }
  fmt::print("crucible demo: {} miners, 1 validator, {} windows of {} one-second blocks, model '{}'\n", a.miners,
             a.windows, a.blocks_per_window, a.model);
  fmt::print("  working folder {} (logs in run/logs/)\n", dir.string());

  // 1. Data (kept between runs).
  const fs::path data = dir / "data";
  {
    fmt::print("[1/5] token shards from the Brown corpus\n");
    std::string cmd = fmt::format("'{}' data prepare --corpus brown --out '{}' --vocab-size 2048",
                                  (bin / "crucible").string(), data.string());
    std::fflush(stdout);
    if (std::system(cmd.c_str()) != 0) return fail("data prepare", unavailable("crucible data prepare failed"));
  }

  // 2. The chain.
  fmt::print("[2/5] local chain (anvil + Bittensor stand-ins)\n");
  chain::LocalChainOptions co;
  co.anvil_path = find_anvil();
  co.work_dir = (run / "chain").string();
  co.block_time_s = 1;
  auto local = chain::LocalChain::start(co);
  if (!local.is_ok()) return fail("local chain", local.status());
  chain::ChainOptions chain_opts;
  chain_opts.rpc_url = (*local)->url();
  chain_opts.netuid = (*local)->netuid();

  // 3. Keys and registration: dev account 1 validates, 2.. mine.
  fmt::print("[3/5] wallets and registration\n");
  const auto& keys = (*local)->dev_keys();
  const std::size_t accounts = static_cast<std::size_t>(a.miners) + a.bad_miners.size() + 1;
  if (a.miners < 1 || accounts + 1 > keys.size()) {
    return fail("miners", invalid_argument("--miners plus --bad-miner must be 1..{}", keys.size() - 2));
  }
  auto key_file = [&](std::size_t i) { return (run / fmt::format("key{}.json", i)).string(); };
  std::vector<std::uint16_t> uids;
  for (std::size_t i = 1; i <= accounts; ++i) {
    chain::KeystoreParams light;
    light.scrypt_n = 1 << 12;  // a demo wallet: quick to open
    auto ks = chain::encrypt_keystore(keys[i], Secret("demo"), light);
    if (!ks.is_ok()) return fail("keystore", ks.status());
    if (Status st = chain::write_secret_file(key_file(i), *ks, true); !st.is_ok()) return fail("keystore", st);
    auto c = chain::EvmChain::connect(chain::to_evm_options(chain_opts), keys[i]);
    if (!c.is_ok()) return fail("chain", c.status());
    auto hotkey = chain::substrate::mirror_account(keys[i].address());
    if (auto sent = (*c)->register_neuron(chain_opts.netuid, hotkey); !sent.is_ok())
      return fail("register", sent.status());
    // The commitment key (`crucible chain proxy`), so each node publishes its
    // location with one transaction when it starts.
    if (auto proxy = (*c)->ensure_commitment_proxy(chain::kCommitmentGasFundsWei); !proxy.is_ok())
      return fail("commitment proxy", proxy.status());
    if (i > 1 && i <= static_cast<std::size_t>(a.miners) + 1) {
      uids.push_back(static_cast<std::uint16_t>(i - 1));  // the honest miners (the validator is uid 0)
    }
  }
  if (Status st = (*local)->set_stake(0, 1'000'000'000'000, true); !st.is_ok()) return fail("stake", st);

  // Each node's store: a folder, or its own bucket on a local S3 server.
  std::unique_ptr<DemoS3> s3;
  if (a.store == "s3") {
    fmt::print("      S3 server (Ceph radosgw, SigV4) for the nodes' buckets\n");
    std::fflush(stdout);
    auto started = DemoS3::start(run, run / "logs");
    if (!started.is_ok()) return fail("S3 server", started.status());
    s3 = std::move(*started);
  }
  auto storage_of = [&](const std::string& name) -> Result<std::string> {
    if (!s3) return fmt::format("[storage]\nurl = \"file://{}/stores/{}\"\n", run.string(), name);
    return s3->storage_section(name);
  };

  // 4. Configs.
  auto free_port = free_loopback_port();
  if (!free_port.is_ok()) return fail("API port", free_port.status());
  const std::uint16_t api_port = *free_port;
  // The network: configs/local/network.toml's constants, the model preset,
  // this run's window length and netuid, the data's and the genesis model's
  // digests, written as a manifest (docs/network.md) that every node joins
  // with; this run adds only where its chain is.
  const std::string manifest = (run / "network.toml").string();
  {
    std::string cmd = fmt::format(
        "'{}' network init --name local-demo --config '{}' --config '{}' --set protocol.blocks_per_window={} "
        "--set chain.netuid={} --data '{}' --out '{}' --force",
        (bin / "crucible").string(), (source / "configs/local/network.toml").string(), model_file.string(),
        a.blocks_per_window, chain_opts.netuid, data.string(), manifest);
    std::fflush(stdout);
    if (std::system(cmd.c_str()) != 0) return fail("network manifest", unavailable("crucible network init failed"));
  }
  const std::string this_run = (run / "chain.toml").string();
  std::ofstream(this_run) << fmt::format(R"(# This demo run: where its chain is; text logs to read.
[log]
format = "text"
[chain]
rpc_url = "{}"
[storage]
# Every node of the local network keeps its store on this machine: accept
# file:// locations and local endpoints from peers.
peer_file_urls = true
peer_private_endpoints = true
)",
                                         chain_opts.rpc_url);
  std::vector<Proc> procs;
  auto node = [&](const std::string& binary, const std::string& name, const std::string& toml, std::size_t key) {
    std::vector<std::string> argv{
        (bin / binary).string(), "--network", manifest, "--config", this_run, "--config", toml, "--key", key_file(key)};
    auto p = spawn(name, argv, run / "logs" / (name + ".log"));
    if (p.is_ok()) procs.push_back(*p);
    return p.status();
  };
  fmt::print("[4/5] starting the validator (uid 0, dashboard and API http://127.0.0.1:{}/) and {} miners\n", api_port,
             a.miners);
  const std::string vtoml = (run / "validator.toml").string();
  auto vstorage = storage_of("validator");
  if (!vstorage.is_ok()) return fail("validator store", vstorage.status());
  std::ofstream(vtoml) << *vstorage
                       << fmt::format(R"([validator]
data_dir = "{}"
state_dir = "{}/validator-state"
eval_per_window = 20
weights_every = 2
threads = 1
observe_interval_s = 0.25
{}
[api]
port = {}
)",
                                      data.string(), run.string(),
                                      fmt::format("{}", fmt::join(a.validator_options, "\n")), api_port);
  if (Status st = node("crucible-validator", "validator", vtoml, 1); !st.is_ok()) return fail("validator", st);
  for (int m = 0; m < a.miners; ++m) {
    const std::string name = fmt::format("miner{}", m + 1);
    const std::string toml = (run / (name + ".toml")).string();
    auto mstorage = storage_of(name);
    if (!mstorage.is_ok()) {
      stop_all(procs);
      return fail(name + " store", mstorage.status());
    }
    std::ofstream(toml) << *mstorage
                        << fmt::format(R"([miner]
data_dir = "{}"
state_dir = "{}/{}-state"
inner_steps = 4
micro_batch = 4
lr = 0.003
warmup_steps = 0
threads = 1
aggregate_wait_s = 8.0
progress = "off"
)",
                                       data.string(), run.string(), name);
    if (Status st = node("crucible-miner", name, toml, static_cast<std::size_t>(m) + 2); !st.is_ok()) {
      stop_all(procs);
      return fail(name, st);
    }
  }

  std::vector<std::unique_ptr<Adversary>> adversaries;
  NodeConfig network_config;
  if (!a.bad_miners.empty()) {
    CommonFlags flags;
    flags.network = manifest;
    flags.config_files = {this_run};
    char* no_env[] = {nullptr};
    if (Status st = load_node_config(Role::kAny, flags, no_env, network_config); !st.is_ok()) {
      stop_all(procs);
      return fail("bad miner", st);
    }
  }
  for (std::size_t j = 0; j < a.bad_miners.size(); ++j) {
    auto adv = start_adversary(a, j, network_config, keys, run, data);
    if (!adv.is_ok()) {
      stop_all(procs);
      return fail("bad miner", adv.status());
    }
    adversaries.push_back(std::move(*adv));
  }

  // 5. Watch the validator's windows, from the first one every miner trains
  // whole: a miner that starts late in a window (a loaded machine, the S3
  // server) trains from the next, and the windows before are not the
  // network's.
  fmt::print("[5/5] running (Ctrl-C stops)\n");
  std::fflush(stdout);
  struct sigaction sa {};
  sa.sa_handler = on_demo_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  auto first_counted = wait_for_miners(procs, run, chain_opts, a.blocks_per_window);
  if (!first_counted.is_ok()) {
    adversaries.clear();
    stop_all(procs);
    if (g_interrupted.load()) {
      fmt::print("demo: stopped (logs in {})\n", (run / "logs").string());
      return kExitOk;
    }
    return fail("miners", first_counted.status());
  }
  fmt::print("      miners ready: counting windows from {}, the first each trains whole\n", *first_counted);
  int seen = 0;
  std::size_t printed = 0;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::seconds(60 + 3 * a.windows * static_cast<int>(a.blocks_per_window));
  const std::string api_url = fmt::format("http://127.0.0.1:{}", api_port);
  // After --windows: summary.json, progress.svg and the score table; with
  // --keep the network then runs on, its dashboard open, until Ctrl-C.
  auto report = [&]() {
    int rc = kExitOk;
    if (Status st = write_report(api_url, uids, *first_counted, a.out); !st.is_ok()) {
      fmt::print(stderr, "demo: writing {}: {}\n", a.out, st.to_string());
      rc = kExitFailure;
    }
    auto body = http_get(api_url + "/v1/scores");
    if (body.is_ok()) {
      auto table = format_scores(*body);
      fmt::print("\nscores (crucible scores --url {}):\n{}", api_url, table.is_ok() ? *table : *body);
    } else {
      fmt::print(stderr, "demo: reading the scores: {}\n", body.status().message());
      rc = kExitFailure;
    }
    return rc;
  };
  int rc = kExitOk;
  bool reported = false;
  while (!g_interrupted.load() && (a.keep ? true : seen < a.windows)) {
    if (!reported && seen < a.windows && std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    for (auto& p : procs) {
      if (exited(p)) {
        fmt::print(stderr, "demo: {} stopped early; its log:\n{}\n", p.name, read_text(p.log));
        stop_all(procs);
        return kExitFailure;
      }
    }
    std::string log = read_text(run / "logs/validator.log");
    std::size_t at = 0;
    int count = 0;
    while ((at = log.find("window done", at)) != std::string::npos) {
      auto end = log.find('\n', at);
      const std::string line = log.substr(at, end - at);
      at = end;
      if (window_of_line(line) < *first_counted) continue;
      ++count;
      if (count > static_cast<int>(printed)) {
        fmt::print("  {}\n", line);
        std::fflush(stdout);  // a window at a time, also through a pipe
        ++printed;
      }
    }
    seen = count;
    if (a.keep && !reported && seen >= a.windows) {
      rc = report();
      reported = true;
      fmt::print("\ndashboard: {}/  (the network keeps running; Ctrl-C stops it)\n", api_url);
      std::fflush(stdout);
    }
  }
  if (seen < a.windows) {
    fmt::print(stderr, "demo: the validator finished {} of {} windows in time (logs in {})\n", seen, a.windows,
               (run / "logs").string());
    rc = g_interrupted.load() ? kExitOk : kExitFailure;
  }
  if (!reported) {
    const int r = report();
    if (rc == kExitOk) rc = r;
  }
  adversaries.clear();
  stop_all(procs);
  fmt::print("demo: stopped (logs in {})\n", (run / "logs").string());
  return rc;
}

}  // namespace

void add_demo_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<DemoArgs>();
  CLI::App* cmd =
      app.add_subcommand("demo", "Run the local network demo: chain, miners and a validator on this machine");
  cmd->add_option("--dir", args->dir, "Working folder (default: $TMPDIR/crucible-demo)");
  cmd->add_option("--miners", args->miners, "Miners to run")->capture_default_str()->check(CLI::Range(1, 8));
  cmd->add_option("--windows", args->windows, "Windows to run")->capture_default_str()->check(CLI::Range(1, 1000));
  cmd->add_option("--model", args->model, "Model preset (configs/models/NAME.toml)")->capture_default_str();
  cmd->add_option("--out", args->out, "Where summary.json and progress.svg go")->capture_default_str();
  cmd->add_option("--bad-miner", args->bad_miners, "Add a bad miner: noise, zero or copy (repeatable)")
      ->check([](const std::string& kind) { return valid_adversary_kind(kind) ? "" : "noise, zero or copy"; });
  cmd->add_option("--validator-option", args->validator_options,
                  "A [validator] setting for the demo's validator, KEY=VALUE in TOML (repeatable), e.g. "
                  "measure_decoy=true")
      ->check([](const std::string& kv) { return kv.find('=') == std::string::npos ? "KEY=VALUE" : ""; });
  cmd->add_option("--store", args->store,
                  "Where the nodes keep their objects: file (a folder each) or s3 (a bucket each on a local Ceph "
                  "radosgw, with read-only keys for the others)")
      ->capture_default_str()
      ->check(CLI::IsMember({"file", "s3"}));
  cmd->add_option("--blocks-per-window", args->blocks_per_window, "Blocks per window (1 s each)")
      ->capture_default_str()
      ->check(CLI::Range(4, 1000));
  cmd->add_flag("--keep", args->keep,
                "After --windows, print the dashboard's URL and keep the network running until Ctrl-C");
  cmd->callback([args, &exit_code] { exit_code = run_demo(*args); });
}

}  // namespace crucible::cli
