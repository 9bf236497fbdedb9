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

// One demo run, a step at a time: each step leaves what the next needs in
// the members and answers an exit code (kExitOk to go on). The processes
// and bad miners it started stop with it.
class DemoRun {
 public:
  explicit DemoRun(const DemoArgs& a)
      : a_(a),
        dir_(a.dir.empty() ? fs::temp_directory_path() / "crucible-demo" : fs::path(a.dir)),
        run_(dir_ / "run"),
        data_(dir_ / "data"),
        bin_(self_dir()),
        source_(CRUCIBLE_SOURCE_DIR),
        model_file_(source_ / "configs/models" / (a.model + ".toml")) {}
  DemoRun(const DemoRun&) = delete;
  DemoRun& operator=(const DemoRun&) = delete;
  ~DemoRun() { stop(); }

  int run() {
    for (int (DemoRun::*step)() : {&DemoRun::check_args, &DemoRun::prepare_data, &DemoRun::start_chain,
                                   &DemoRun::register_accounts, &DemoRun::start_store, &DemoRun::write_network,
                                   &DemoRun::start_validator, &DemoRun::start_miners, &DemoRun::start_adversaries}) {
      if (const int rc = (this->*step)(); rc != kExitOk) return rc;
    }
    return watch();
  }

 private:
  void stop() {
    adversaries_.clear();
    stop_all(procs_);
  }

  int check_args() {
    if (!fs::exists(model_file_)) return fail("model", not_found("no preset {}", model_file_.string()));
    if (a_.store == "s3" && std::find(a_.bad_miners.begin(), a_.bad_miners.end(), "copy") != a_.bad_miners.end()) {
      fmt::print(stderr, "demo: --bad-miner copy reads the first miner's folder: use it with --store file\n");
      return kExitUsage;
    }
    std::error_code ec;
    fs::remove_all(run_, ec);
    fs::create_directories(run_ / "logs", ec);
    fmt::print("crucible demo: {} miners, 1 validator, {} windows of {} one-second blocks, model '{}'\n", a_.miners,
               a_.windows, a_.blocks_per_window, a_.model);
    fmt::print("  working folder {} (logs in run/logs/)\n", dir_.string());
    return kExitOk;
  }

  // 1. Data (kept between runs).
  int prepare_data() {
    fmt::print("[1/5] token shards from the Brown corpus\n");
    std::string cmd = fmt::format("'{}' data prepare --corpus brown --out '{}' --vocab-size 2048",
                                  (bin_ / "crucible").string(), data_.string());
    std::fflush(stdout);
    if (std::system(cmd.c_str()) != 0) return fail("data prepare", unavailable("crucible data prepare failed"));
    return kExitOk;
  }

  // 2. The chain.
  int start_chain() {
    fmt::print("[2/5] local chain (anvil + Bittensor stand-ins)\n");
    chain::LocalChainOptions co;
    co.anvil_path = find_anvil();
    co.work_dir = (run_ / "chain").string();
    co.block_time_s = 1;
    auto local = chain::LocalChain::start(co);
    if (!local.is_ok()) return fail("local chain", local.status());
    local_ = std::move(local).value();
    chain_.rpc_url = local_->url();
    chain_.netuid = local_->netuid();
    return kExitOk;
  }

  std::string key_file(std::size_t i) const { return (run_ / fmt::format("key{}.json", i)).string(); }

  // 3. Keys and registration: dev account 1 validates, 2.. mine.
  int register_accounts() {
    fmt::print("[3/5] wallets and registration\n");
    const auto& keys = local_->dev_keys();
    const std::size_t accounts = static_cast<std::size_t>(a_.miners) + a_.bad_miners.size() + 1;
    if (a_.miners < 1 || accounts + 1 > keys.size()) {
      return fail("miners", invalid_argument("--miners plus --bad-miner must be 1..{}", keys.size() - 2));
    }
    for (std::size_t i = 1; i <= accounts; ++i) {
      chain::KeystoreParams light;
      light.scrypt_n = 1 << 12;  // a demo wallet: quick to open
      auto ks = chain::encrypt_keystore(keys[i], Secret("demo"), light);
      if (!ks.is_ok()) return fail("keystore", ks.status());
      if (Status st = chain::write_secret_file(key_file(i), *ks, true); !st.is_ok()) return fail("keystore", st);
      auto c = chain::EvmChain::connect(chain::to_evm_options(chain_), keys[i]);
      if (!c.is_ok()) return fail("chain", c.status());
      auto hotkey = chain::substrate::mirror_account(keys[i].address());
      if (auto sent = (*c)->register_neuron(chain_.netuid, hotkey); !sent.is_ok())
        return fail("register", sent.status());
      // The commitment key (`crucible chain proxy`), so each node publishes its
      // location with one transaction when it starts.
      if (auto proxy = (*c)->ensure_commitment_proxy(chain::kCommitmentGasFundsWei); !proxy.is_ok())
        return fail("commitment proxy", proxy.status());
      if (i > 1 && i <= static_cast<std::size_t>(a_.miners) + 1) {
        uids_.push_back(static_cast<std::uint16_t>(i - 1));  // the honest miners (the validator is uid 0)
      }
    }
    if (Status st = local_->set_stake(0, 1'000'000'000'000, true); !st.is_ok()) return fail("stake", st);
    return kExitOk;
  }

  // Each node's store: a folder, or its own bucket on a local S3 server.
  int start_store() {
    if (a_.store != "s3") return kExitOk;
    fmt::print("      S3 server (Ceph radosgw, SigV4) for the nodes' buckets\n");
    std::fflush(stdout);
    auto started = DemoS3::start(run_, run_ / "logs");
    if (!started.is_ok()) return fail("S3 server", started.status());
    s3_ = std::move(*started);
    return kExitOk;
  }
  Result<std::string> storage_of(const std::string& name) const {
    if (!s3_) return fmt::format("[storage]\nurl = \"file://{}/stores/{}\"\n", run_.string(), name);
    return s3_->storage_section(name);
  }

  // 4. The network: configs/local/network.toml's constants, the model
  // preset, this run's window length and netuid, the data's and the genesis
  // model's digests, written as a manifest (docs/network.md) that every
  // node joins with; this run adds only where its chain is.
  int write_network() {
    auto free_port = free_loopback_port();
    if (!free_port.is_ok()) return fail("API port", free_port.status());
    api_port_ = *free_port;
    std::string cmd = fmt::format(
        "'{}' network init --name local-demo --config '{}' --config '{}' --set protocol.blocks_per_window={} "
        "--set chain.netuid={} --data '{}' --out '{}' --force",
        (bin_ / "crucible").string(), (source_ / "configs/local/network.toml").string(), model_file_.string(),
        a_.blocks_per_window, chain_.netuid, data_.string(), manifest_);
    std::fflush(stdout);
    if (std::system(cmd.c_str()) != 0) return fail("network manifest", unavailable("crucible network init failed"));
    std::ofstream(this_run_) << fmt::format(R"(# This demo run: where its chain is; text logs to read.
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
                                            chain_.rpc_url);
    return kExitOk;
  }

  Status start_node(const std::string& binary, const std::string& name, const std::string& toml, std::size_t key) {
    std::vector<std::string> argv{(bin_ / binary).string(),
                                  "--network",
                                  manifest_,
                                  "--config",
                                  this_run_,
                                  "--config",
                                  toml,
                                  "--key",
                                  key_file(key)};
    auto p = spawn(name, argv, run_ / "logs" / (name + ".log"));
    if (p.is_ok()) procs_.push_back(*p);
    return p.status();
  }

  int start_validator() {
    fmt::print("[4/5] starting the validator (uid 0, dashboard and API http://127.0.0.1:{}/) and {} miners\n",
               api_port_, a_.miners);
    const std::string vtoml = (run_ / "validator.toml").string();
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
                                        data_.string(), run_.string(),
                                        fmt::format("{}", fmt::join(a_.validator_options, "\n")), api_port_);
    if (Status st = start_node("crucible-validator", "validator", vtoml, 1); !st.is_ok()) return fail("validator", st);
    return kExitOk;
  }

  int start_miners() {
    for (int m = 0; m < a_.miners; ++m) {
      const std::string name = fmt::format("miner{}", m + 1);
      const std::string toml = (run_ / (name + ".toml")).string();
      auto mstorage = storage_of(name);
      if (!mstorage.is_ok()) return fail(name + " store", mstorage.status());
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
                                         data_.string(), run_.string(), name);
      if (Status st = start_node("crucible-miner", name, toml, static_cast<std::size_t>(m) + 2); !st.is_ok()) {
        return fail(name, st);
      }
    }
    return kExitOk;
  }

  int start_adversaries() {
    if (a_.bad_miners.empty()) return kExitOk;
    NodeConfig network_config;
    CommonFlags flags;
    flags.network = manifest_;
    flags.config_files = {this_run_};
    char* no_env[] = {nullptr};
    if (Status st = load_node_config(Role::kAny, flags, no_env, network_config); !st.is_ok()) {
      return fail("bad miner", st);
    }
    for (std::size_t j = 0; j < a_.bad_miners.size(); ++j) {
      auto adv = start_adversary(a_, j, network_config, local_->dev_keys(), run_, data_);
      if (!adv.is_ok()) return fail("bad miner", adv.status());
      adversaries_.push_back(std::move(*adv));
    }
    return kExitOk;
  }

  // After --windows: summary.json, progress.svg and the score table.
  int report() const {
    int rc = kExitOk;
    if (Status st = write_report(api_url(), uids_, first_counted_, a_.out); !st.is_ok()) {
      fmt::print(stderr, "demo: writing {}: {}\n", a_.out, st.to_string());
      rc = kExitFailure;
    }
    auto body = http_get(api_url() + "/v1/scores");
    if (body.is_ok()) {
      auto table = format_scores(*body);
      fmt::print("\nscores (crucible scores --url {}):\n{}", api_url(), table.is_ok() ? *table : *body);
    } else {
      fmt::print(stderr, "demo: reading the scores: {}\n", body.status().message());
      rc = kExitFailure;
    }
    return rc;
  }
  std::string api_url() const { return fmt::format("http://127.0.0.1:{}", api_port_); }

  // The validator's finished windows from the first counted one; prints
  // those not printed yet.
  int count_windows() {
    const std::string log = read_text(run_ / "logs/validator.log");
    std::size_t at = 0;
    int count = 0;
    while ((at = log.find("window done", at)) != std::string::npos) {
      auto end = log.find('\n', at);
      const std::string line = log.substr(at, end - at);
      at = end;
      if (window_of_line(line) < first_counted_) continue;
      ++count;
      if (count > static_cast<int>(printed_)) {
        fmt::print("  {}\n", line);
        std::fflush(stdout);  // a window at a time, also through a pipe
        ++printed_;
      }
    }
    return count;
  }

  // 5. Watch the validator's windows, from the first one every miner trains
  // whole: a miner that starts late in a window (a loaded machine, the S3
  // server) trains from the next, and the windows before are not the
  // network's. With --keep the network runs on after the report, its
  // dashboard open, until Ctrl-C.
  int watch() {
    fmt::print("[5/5] running (Ctrl-C stops)\n");
    std::fflush(stdout);
    struct sigaction sa {};
    sa.sa_handler = on_demo_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    auto first_counted = wait_for_miners(procs_, run_, chain_, a_.blocks_per_window);
    if (!first_counted.is_ok()) {
      stop();
      if (g_interrupted.load()) {
        fmt::print("demo: stopped (logs in {})\n", (run_ / "logs").string());
        return kExitOk;
      }
      return fail("miners", first_counted.status());
    }
    first_counted_ = *first_counted;
    fmt::print("      miners ready: counting windows from {}, the first each trains whole\n", first_counted_);
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::seconds(60 + 3 * a_.windows * static_cast<int>(a_.blocks_per_window));
    int rc = kExitOk, seen = 0;
    bool reported = false;
    while (!g_interrupted.load() && (a_.keep ? true : seen < a_.windows)) {
      if (!reported && seen < a_.windows && std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      for (auto& p : procs_) {
        if (exited(p)) {
          fmt::print(stderr, "demo: {} stopped early; its log:\n{}\n", p.name, read_text(p.log));
          return kExitFailure;
        }
      }
      seen = count_windows();
      if (a_.keep && !reported && seen >= a_.windows) {
        rc = report();
        reported = true;
        fmt::print("\ndashboard: {}/  (the network keeps running; Ctrl-C stops it)\n", api_url());
        std::fflush(stdout);
      }
    }
    if (seen < a_.windows) {
      fmt::print(stderr, "demo: the validator finished {} of {} windows in time (logs in {})\n", seen, a_.windows,
                 (run_ / "logs").string());
      rc = g_interrupted.load() ? kExitOk : kExitFailure;
    }
    if (!reported) {
      const int r = report();
      if (rc == kExitOk) rc = r;
    }
    stop();
    fmt::print("demo: stopped (logs in {})\n", (run_ / "logs").string());
    return rc;
  }

  const DemoArgs& a_;
  const fs::path dir_, run_, data_, bin_, source_, model_file_;
  const std::string manifest_ = (run_ / "network.toml").string();
  const std::string this_run_ = (run_ / "chain.toml").string();
  std::unique_ptr<chain::LocalChain> local_;
  chain::ChainOptions chain_;
  std::vector<std::uint16_t> uids_;  // the honest miners
  std::unique_ptr<DemoS3> s3_;
  std::uint16_t api_port_ = 0;
  std::vector<Proc> procs_;
  std::vector<std::unique_ptr<Adversary>> adversaries_;
  std::uint64_t first_counted_ = 0;
  std::size_t printed_ = 0;
};

int run_demo(const DemoArgs& a) { return DemoRun(a).run(); }

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
