// bench/scale: what one real validator costs per window as the number of
// miners grows (issue #26). For each N of --miners it starts a local chain,
// registers a validator and a swarm of N miner uids (bench/swarm.h: each
// with its own key, store and published location; every window a signed
// packet on its assigned data, committed in the slot and revealed after,
// as crucible-miner does; updates cut from a real update of the genesis
// model, each uid keeping a random --shared fraction of its coordinates, so
// no two are copies and none repeats an earlier window). The real crucible-validator
// judges them; its per-step wall times (crucible_validator_step_seconds),
// store calls, observer polls, bytes read, peak RSS and CPU time are read
// from its /metrics and /proc. Figures print as ratios against the first N
// (the baseline, measured in the same run). docs/benchmarks.md has results.
// --store s3 puts every store on the S3 server the tests use (radosgw: a
// bucket per uid, its read-only keys published, SigV4 on every call).
//
//   build/bin/scale_bench --miners 16,64,256 --model tiny --windows 4 [--store s3]
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "crucible/chain/evm_chain.h"
#include "crucible/chain/keccak.h"
#include "crucible/chain/keystore.h"
#include "crucible/chain/local_chain.h"
#include "crucible/chain/packet_signing.h"
#include "crucible/chain/rpc_client.h"
#include "crucible/chain/substrate.h"
#include "crucible/cli/demo_s3.h"
#include "crucible/cli/node_config.h"
#include "crucible/common/child_process.h"
#include "crucible/common/dataset.h"
#include "crucible/common/replica.h"
#include "crucible/kernels/error_feedback.h"
#include "crucible/kernels/packet_tensor.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/protocol/update.h"
#include "crucible/protocol/window_clock.h"
#include "crucible/storage/local_store.h"
#include "crucible/storage/peer_location.h"
#include "crucible/validator/gauntlet.h"
#include "crucible/validator/similarity.h"
#include "crucible/validator/window.h"
#include "random_update.h"
#include "swarm.h"

namespace crucible::bench {
namespace {

namespace fs = std::filesystem;
namespace keys = protocol::keys;

struct Args {
  std::vector<int> miners{16, 64};
  std::string model = "tiny";
  int windows = 4;  // measured windows, after the first (which warms up)
  std::uint32_t blocks_per_window = 10;
  int eval_per_window = 20;
  double shared = 0.1;
  std::string dir;
  std::string data;  // prepared data folder; default: prepared under --dir
  bool gather_merge_only = false;
  bool copies_only = false;
  int history_windows = 8;             // --copies-only: windows of sketches in the history (validator.history_windows)
  std::string store = "local";         // local: folder stores; s3: a bucket each on the S3 server (radosgw)
  std::vector<std::string> validator;  // more [validator] lines, e.g. gradient_check = "measure"
};

fs::path source_dir() { return fs::path(CRUCIBLE_SOURCE_DIR); }
fs::path bin_dir() {
  std::error_code ec;
  auto exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path(".") : exe.parent_path();
}

[[noreturn]] void die(const std::string& what, const Status& st) {
  fmt::print(stderr, "scale_bench: {}: {}\n", what, st.to_string());
  std::exit(1);
}

template <typename T>
T must(Result<T> r, const std::string& what) {
  if (!r.is_ok()) die(what, r.status());
  return std::move(*r);
}

void must(const Status& st, const std::string& what) {
  if (!st.is_ok()) die(what, st);
}

// The Prometheus text's value of `name{labels}` (0 when absent).
double metric(const std::string& text, const std::string& series) {
  const auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return 0;
  return std::strtod(text.c_str() + at + series.size() + 2, nullptr);
}

std::string http_get(std::uint16_t port, const std::string& path) {
  // curl is on every machine the suite runs on; the bench needs no client of its own.
  const std::string cmd = fmt::format("curl -s --max-time 10 http://127.0.0.1:{}{}", port, path);
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[65536];
    std::size_t n = 0;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  return out;
}

struct ProcStats {
  double peak_rss_mb = 0;
  double cpu_s = 0;
};

ProcStats proc_stats(pid_t pid) {
  ProcStats s;
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) s.peak_rss_mb = std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  }
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close != std::string::npos) {
    std::istringstream rest(text.substr(close + 2));
    std::vector<std::string> f((std::istream_iterator<std::string>(rest)), std::istream_iterator<std::string>());
    if (f.size() > 13) s.cpu_s = (std::stod(f[11]) + std::stod(f[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  return s;
}

// What one N measured.
struct Measured {
  int miners = 0;
  int windows = 0;                                          // measured windows
  std::map<std::string, double> step;                       // mean seconds per window
  double window_s = 0;                                      // mean
  double valid = 0;                                         // mean valid uploads per window
  double store_calls = 0, observer_polls = 0, mb_read = 0;  // per window
  ProcStats proc;
  double setup_s = 0;
};

const std::vector<std::string> kSteps = {"metagraph", "gather", "copies", "evaluate", "sync",     "score",
                                         "set",       "record", "merge",  "remember", "progress", "weights"};

// The validator (uid 0, staked, with its permit) and the swarm's N keys,
// funded, registered, each with its store location published. S3: the
// server the tests use, one user for the swarm (a bucket per uid, its
// read-only keys published) and one for the validator.
struct Network {
  std::unique_ptr<chain::LocalChain> local;
  chain::ChainOptions chain;
  std::optional<chain::PrivateKey> validator_key;
  std::unique_ptr<cli::DemoS3> s3;
  std::string validator_storage;  // its [storage] section
  std::unique_ptr<swarm::Swarm> swarm;
  protocol::Options protocol;
};

Network start_network(const Args& a, int n, const cli::NodeConfig& net, const fs::path& data, const fs::path& run) {
  Network nw;
  chain::LocalChainOptions co;
  co.anvil_path = (source_dir() / "tools/node_modules/.bin/anvil").string();
  co.work_dir = (run / "chain").string();
  co.block_time_s = 0;  // registration mines a block per transaction; windows start later
  co.max_uids = static_cast<std::uint16_t>(n + 1);
  nw.local = must(chain::LocalChain::start(co), "local chain");
  must(nw.local->set_hyperparameter("burn_increase_mille", 1000), "burn");
  nw.chain = net.chain;
  nw.chain.rpc_url = nw.local->url();
  nw.chain.netuid = nw.local->netuid();
  nw.validator_key = nw.local->dev_keys()[1];
  {
    auto c = must(chain::EvmChain::connect(chain::to_evm_options(nw.chain), *nw.validator_key), "chain");
    must(c->register_neuron(nw.chain.netuid, chain::substrate::mirror_account(nw.validator_key->address())),
         "register");
    must(c->ensure_commitment_proxy(chain::kCommitmentGasFundsWei), "proxy");
  }
  must(nw.local->set_stake(0, 1'000'000'000'000, false), "stake");
  nw.validator_storage = fmt::format("[storage]\nurl = \"file://{}/stores/validator\"\n", run.string());
  swarm::SwarmOptions so;
  if (a.store == "s3") {
    nw.s3 = must(cli::DemoS3::start(run, run / "logs"), "S3 server");
    nw.validator_storage = must(nw.s3->storage_section("validator"), "S3 validator");
    const auto user = must(nw.s3->user("swarm"), "S3 swarm user");
    cli::DemoS3* s3 = nw.s3.get();
    so.store_of = [s3, user](int i) { return s3->bucket(user, fmt::format("swarm-m{}", i)); };
  }
  so.dir = run / "stores";
  so.chain = nw.chain;
  so.protocol = net.protocol;
  so.protocol.blocks_per_window = a.blocks_per_window;
  so.model = net.model;
  so.data = data;
  so.miners = n;
  so.shared = a.shared;
  nw.protocol = so.protocol;
  nw.swarm = must(swarm::Swarm::create(so), "swarm");
  must(nw.local->mine_to_next_epoch(), "epoch");  // the validator's permit
  return nw;
}

// crucible-validator judging from `first`, its log in run/logs; its pid.
pid_t start_validator(const Args& a, const Network& nw, const fs::path& data, const fs::path& run, std::uint64_t first,
                      std::uint16_t api_port) {
  const fs::path vtoml = run / "validator.toml";
  std::ofstream(vtoml) << fmt::format(R"([log]
format = "text"
[protocol]
blocks_per_window = {}
[chain]
rpc_url = "{}"
netuid = {}
{}[validator]
data_dir = "{}"
state_dir = "{}/validator-state"
eval_per_window = {}
# every chosen uid evaluated: the benchmark measures what eval_per_window costs
eval_window_share = 0
weights_every = 2
threads = 2
start_window = {}
{}
[api]
port = {}
)",
                                      a.blocks_per_window, nw.local->url(), nw.chain.netuid, nw.validator_storage,
                                      data.string(), run.string(), a.eval_per_window, first,
                                      fmt::join(a.validator, "\n"), api_port);
  const fs::path model_toml = source_dir() / "configs/models" / (a.model + ".toml");
  const std::string key_file = (run / "validator-key.json").string();
  chain::KeystoreParams light;
  light.scrypt_n = 1 << 12;
  must(chain::write_secret_file(
           key_file, must(chain::encrypt_keystore(*nw.validator_key, Secret("bench"), light), "keystore"), true),
       "keystore");
  const pid_t vpid = fork();
  if (vpid == 0) {
    reset_child_for_exec(SIGTERM);
    const int fd = ::open((run / "logs/validator.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    setenv("CRUCIBLE_WALLET_PASSWORD", "bench", 1);
    const std::string bin = (bin_dir() / "crucible-validator").string();
    const std::string network = (source_dir() / "configs/local/network.toml").string();
    execl(bin.c_str(), bin.c_str(), "--config", network.c_str(), "--config", model_toml.c_str(), "--config",
          vtoml.c_str(), "--key", key_file.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return vpid;
}

const std::regex kDoneLine(R"(window done window=(\d+) uploads_valid=(\d+).* seconds=([0-9.e-]+) steps=\"?([^\"\n]*))");

// The validator's log once it has processed window `last` (or after ten
// minutes); dies when the validator exited.
std::string wait_for_window(const fs::path& vlog, pid_t vpid, std::uint64_t last) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(600);
  for (;;) {
    std::ifstream in(vlog);
    std::string log_text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bool have_last = false;
    for (auto it = std::sregex_iterator(log_text.begin(), log_text.end(), kDoneLine); it != std::sregex_iterator();
         ++it) {
      if (std::stoull((*it)[1]) == last) have_last = true;
    }
    int status = 0;
    if (waitpid(vpid, &status, WNOHANG) == vpid) die("validator", internal_error("exited; see {}", vlog.string()));
    if (have_last || std::chrono::steady_clock::now() > deadline) return log_text;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

// Per-step means over the measured windows (first + 1 .. last), from the
// log; store calls over the whole run (first included), per processed
// window, from /metrics.
void summarize(Measured& m, const std::string& log_text, const std::string& metrics_text, std::uint64_t first,
               std::uint64_t last) {
  for (auto it = std::sregex_iterator(log_text.begin(), log_text.end(), kDoneLine); it != std::sregex_iterator();
       ++it) {
    const std::uint64_t w = std::stoull((*it)[1]);
    if (w <= first || w > last) continue;
    ++m.windows;
    m.valid += std::stod((*it)[2]);
    m.window_s += std::stod((*it)[3]);
    const std::string steps = (*it)[4];
    for (const auto& s : kSteps) {
      const auto at = steps.find(s + "=");
      if (at != std::string::npos) m.step[s] += std::strtod(steps.c_str() + at + s.size() + 1, nullptr);
    }
  }
  const double k = std::max(1, m.windows);
  m.valid /= k;
  m.window_s /= k;
  for (auto& [s, v] : m.step) v /= k;
  const double processed = static_cast<double>(m.windows + 1);
  for (const char* op : {"head", "get", "get_range", "put", "list", "remove"}) {
    m.store_calls += metric(metrics_text, fmt::format("crucible_store_requests_total{{op=\"{}\"}}", op));
  }
  m.store_calls /= processed;
  m.observer_polls = metric(metrics_text, "crucible_observer_polls_total") / processed;
  m.mb_read = metric(metrics_text, "crucible_store_bytes_read_total") / processed / 1e6;
}

Measured run_one(const Args& a, int n, const cli::NodeConfig& net, const fs::path& data) {
  Measured m;
  m.miners = n;
  const auto setup_start = std::chrono::steady_clock::now();
  const fs::path run = fs::path(a.dir) / fmt::format("n{}", n);
  fs::remove_all(run);
  fs::create_directories(run / "logs");
  Network nw = start_network(a, n, net, data, run);

  // The windows' updates, before anything is timed (no block is mined
  // meanwhile: a block comes with each transaction until interval mining).
  auto reader = must(chain::EvmChain::connect(chain::to_evm_options(nw.chain), std::nullopt), "chain");
  const protocol::WindowClock clock(nw.protocol);
  const std::uint64_t first = clock.window_of(must(reader->block_number(), "head")) + 1;
  const std::uint64_t last = first + static_cast<std::uint64_t>(a.windows);  // first is the warm-up
  must(nw.swarm->prepare(first, last), "prepare");

  // Windows from now on: a block a second.
  chain::RpcOptions ro;
  ro.url = nw.local->url();
  chain::RpcClient rpc(ro);
  must(rpc.call("evm_setIntervalMining", nlohmann::json::array({1})).status(), "interval mining");

  const std::uint16_t api_port = must(free_loopback_port(), "a free port");
  const pid_t vpid = start_validator(a, nw, data, run, first, api_port);
  m.setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count();

  // The swarm's windows, as crucible-miner uploads them.
  std::atomic<bool> stop{false};
  must(nw.swarm->run(first, last, stop,
                     [&](std::uint64_t w) {
                       fmt::print("  N={} window {} uploaded\n", n, w);
                       std::fflush(stdout);
                     }),
       "swarm");

  // Until the validator has processed the last window (or clearly cannot).
  const std::string log_text = wait_for_window(run / "logs/validator.log", vpid, last);
  m.proc = proc_stats(vpid);
  const std::string metrics_text = http_get(api_port, "/metrics");
  kill(vpid, SIGTERM);
  waitpid(vpid, nullptr, 0);
  summarize(m, log_text, metrics_text, first, last);
  must(nw.local->stop(), "chain stop");
  return m;
}

// The steps whose cost follows the packets' size, alone and in process, for
// models too large to run a network of here (1b): per upload, read it from a
// folder store (HEAD, GET), open it (Keccak, signature), decode and check
// it, take its norm and sketch; then the copy check over every pair, and
// the merge of all N into the dense aggregate (host, one thread). Packets
// are random updates with the model's layouts, signed.
struct GatherMerge {
  int miners = 0;
  double packet_mb = 0, held_mb = 0;
  std::map<std::string, double> step;  // seconds for the whole window
};

const std::vector<std::string> kGatherMergeSteps = {"read", "open", "decode", "norm+sketch", "copies", "merge"};

GatherMerge gather_merge(const Args& a, int n, const std::vector<model::TensorSpec>& specs) {
  GatherMerge g;
  g.miners = n;
  const fs::path folder = fs::path(a.dir) / fmt::format("gm{}", n);
  fs::remove_all(folder);
  fs::create_directories(folder);
  auto store = must(storage::LocalStore::open(folder), "store");
  const chain::PrivateKey key = swarm::swarm_key(0);
  std::vector<kernels::BlockLayout> layouts;
  for (const auto& s : specs) layouts.push_back(must(kernels::layout_for(s.shape), "layout"));
  std::uint64_t packet_bytes = 0;
  for (int i = 0; i < n; ++i) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(i) * 7919 + 1);
    packet::Packet p;
    p.window = 1;
    p.uid = static_cast<std::uint16_t>(i + 1);
    for (std::size_t t = 0; t < specs.size(); ++t) {
      p.tensors.push_back(must(
          kernels::to_packet_tensor(specs[t].name, specs[t].shape, random_update(layouts[t], rng, 1e-3f)), "tensor"));
    }
    const Bytes sealed = must(chain::seal_packet(std::move(p), key), "seal");
    packet_bytes = sealed.size();
    must(store->put(fmt::format("gradient/{}.crg", i), sealed), "put");
  }
  g.packet_mb = static_cast<double>(packet_bytes) / 1e6;
  auto timed = [&](const std::string& step, auto&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    g.step[step] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<protocol::PeerTensors> peers;
  std::vector<validator::Sketch> sketches;
  for (int i = 0; i < n; ++i) {
    Bytes data;
    timed("read", [&] {
      const std::string k = fmt::format("gradient/{}.crg", i);
      must(store->head(k), "head");
      data = must(store->get(k, packet_bytes), "get").data;
    });
    chain::OpenedPacket opened;
    timed("open", [&] {
      packet::Limits limits;
      limits.max_packet_bytes = packet_bytes;
      opened = must(chain::open_packet(data, limits), "open");
    });
    std::vector<kernels::CompressedTensor> tensors;
    timed("decode", [&] { tensors = must(protocol::decode_update(opened.packet, specs), "decode"); });
    timed("norm+sketch", [&] {
      volatile double norm = validator::norm_of(tensors);
      (void)norm;
      sketches.push_back(validator::sketch_of(tensors));
    });
    for (const auto& t : tensors) g.held_mb += static_cast<double>(t.indices.size() * 2 + t.codes.size()) / 1e6;
    peers.push_back(protocol::PeerTensors{static_cast<std::uint16_t>(i + 1), std::move(tensors)});
  }
  g.held_mb /= n;
  timed("copies", [&] {  // as mark_copies: a signature per upload, then every pair
    double worst = 0;
    std::vector<validator::IndexSignature> sig;
    for (const auto& p : peers) sig.push_back(validator::index_signature(p.tensors, 42));
    for (std::size_t i = 0; i < peers.size(); ++i) {
      for (std::size_t j = i + 1; j < peers.size(); ++j) {
        worst = std::max(worst, std::abs(validator::cosine(sketches[i], sketches[j])));
        worst = std::max(worst, validator::index_overlap(sig[i], sig[j]));
      }
    }
    if (worst >= 0.5) fmt::print(stderr, "  (random updates look alike: {:.2f})\n", worst);
  });
  timed("merge", [&] { must(protocol::merge_updates(peers, specs, *kernels::cpu_backend(1)), "merge"); });
  fs::remove_all(folder);
  return g;
}

std::string growth(double base, double v, int n0, int n1) {
  if (base <= 0 || v <= 0 || n1 == n0) return "-";  // one N: no growth to name
  const double slope = std::log(v / base) / std::log(static_cast<double>(n1) / n0);
  return slope < 0.3 ? "constant" : slope < 1.4 ? "linear" : "quadratic";
}

// --gather-merge-only: the packet-size-bound steps in process, printed.
void gather_merge_main(const Args& a, const cli::NodeConfig& net) {
  std::vector<model::TensorSpec> specs;
  {
    model::ReplicaOptions rep;
    rep.threads = 2;
    auto replica = must(model::Replica::create(net.model, rep, net.protocol.init_seed), "model");
    specs = replica->specs();
  }
  std::vector<GatherMerge> gm;
  for (int n : a.miners) {
    fmt::print("N={}: {} packets of the '{}' model\n", n, n, a.model);
    std::fflush(stdout);
    gm.push_back(gather_merge(a, n, specs));
  }
  const GatherMerge& b = gm.front();
  fmt::print(
      "\nscale_bench --gather-merge-only --model {}: packets of {:.1f} MB ({:.1f} MB held per upload once "
      "decoded)\nseconds per window for each step; (xR) = against N={} in this run\n\n",
      a.model, b.packet_mb, b.held_mb, b.miners);
  std::string head = fmt::format("{:<14}", "step");
  for (const auto& r : gm) head += fmt::format("{:>22}", fmt::format("N={}", r.miners));
  fmt::print("{}  growth\n", head);
  for (const auto& st : kGatherMergeSteps) {
    std::string line = fmt::format("{:<14}", st);
    for (const auto& r : gm) {
      const double v = r.step.at(st), v0 = b.step.at(st);
      line += fmt::format("{:>22}", &r == &b ? fmt::format("{:.2f}", v) : fmt::format("{:.2f} (x{:.1f})", v, v / v0));
    }
    fmt::print("{}  {}\n", line, growth(b.step.at(st), gm.back().step.at(st), b.miners, gm.back().miners));
  }
}

// --copies-only: the copy and replay check (validator/src/copies.cpp
// mark_copies) at steady state, in process: N valid uploads against a full
// history (history_windows windows of N uploads and an aggregate), random
// sketches and index signatures, with one planted copy pair and one replay.
// The baseline, run on the same uploads, is the check as it was until
// 2026-12-07: cosine() of every pair, which takes both norms in double
// each time. Both must mark the same uploads.
std::vector<validator::Upload> copy_check_uploads(int n, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<validator::Upload> out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    auto& u = out[static_cast<std::size_t>(i)];
    u.uid = static_cast<std::uint16_t>(i + 1);
    u.uploaded = true;
    for (auto& b : u.content) b = static_cast<std::uint8_t>(rng());
    u.sketch.buckets.resize(validator::kSketchBuckets);
    for (float& x : u.sketch.buckets) x = normal(rng);
    for (std::size_t k = 0; k < validator::kIndexSignature; ++k) u.signature.hashes.push_back(rng());
    std::sort(u.signature.hashes.begin(), u.signature.hashes.end());
    u.signature.kept = 33'000;
  }
  return out;
}

void reference_mark_copies(std::vector<validator::Upload>& uploads, const std::vector<validator::Remembered>& history,
                           const validator::SameUpdate& same) {
  std::vector<validator::Upload*> valid;
  for (auto& u : uploads) {
    double best = 0;
    for (const auto& r : history) best = std::max(best, std::abs(validator::cosine(u.sketch, r.sketch)));
    if (best >= same.copy_cosine) {
      u.reject(protocol::Rejection::kReplay, "replay");
      continue;
    }
    valid.push_back(&u);
  }
  std::set<validator::Upload*> copies;
  for (std::size_t i = 0; i < valid.size(); ++i) {
    for (std::size_t j = i + 1; j < valid.size(); ++j) {
      const double c = std::abs(validator::cosine(valid[i]->sketch, valid[j]->sketch));
      if (valid[i]->content != valid[j]->content && c < same.copy_cosine &&
          validator::index_overlap(valid[i]->signature, valid[j]->signature) < same.copy_overlap)
        continue;
      copies.insert(valid[i]);
      copies.insert(valid[j]);
    }
  }
  for (auto* u : copies) u->reject(protocol::Rejection::kCopy, "copy");
}

void copies_main(const Args& a) {
  fmt::print("scale_bench --copies-only: {} windows of history; seconds per window (best of 3)\n\n", a.history_windows);
  fmt::print("{:>6} {:>10} {:>22} {:>14} {:>8}\n", "N", "history", "pairwise cosine() s", "mark_copies s", "ratio");
  for (int n : a.miners) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(n));
    std::vector<validator::Remembered> history;
    for (int w = 0; w < a.history_windows; ++w) {
      for (auto& u : copy_check_uploads(n + 1, rng)) {
        history.push_back(validator::Remembered{static_cast<std::uint64_t>(w), u.uid, std::move(u.sketch)});
      }
    }
    auto uploads = copy_check_uploads(n, rng);
    uploads[1].sketch = uploads[0].sketch;  // a copy pair
    for (float& x : uploads[1].sketch.buckets) x *= -2.0f;
    uploads[2].sketch = history[3].sketch;  // a replay
    const validator::SameUpdate same;
    double base = 1e30, now = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      auto x = uploads, y = uploads;
      auto t0 = std::chrono::steady_clock::now();
      reference_mark_copies(x, history, same);
      auto t1 = std::chrono::steady_clock::now();
      validator::mark_copies(y, history, same);
      auto t2 = std::chrono::steady_clock::now();
      base = std::min(base, std::chrono::duration<double>(t1 - t0).count());
      now = std::min(now, std::chrono::duration<double>(t2 - t1).count());
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (x[i].rejection != y[i].rejection) die("copies", internal_error("uid {} marked differently", x[i].uid));
      }
      if (!y[0].rejection || !y[1].rejection || !y[2].rejection)
        die("copies", internal_error("a planted copy was missed"));
    }
    fmt::print("{:>6} {:>10} {:>22.4f} {:>14.4f} {:>7.1f}x\n", n, history.size(), base, now, base / now);
  }
}

// The prepared data the validator reads (prepared once in --dir unless --data).
fs::path prepared_data(const Args& a, const cli::NodeConfig& net) {
  fs::path data = a.data;
  if (data.empty()) {
    data = fs::path(a.dir) / fmt::format("data-{}", net.model.vocab_size);
    const std::string cmd = fmt::format("'{}' data prepare --corpus brown --out '{}' --vocab-size {} > /dev/null 2>&1",
                                        (bin_dir() / "crucible").string(), data.string(), net.model.vocab_size);
    if (std::system(cmd.c_str()) != 0) die("data", unavailable("crucible data prepare failed"));
  }
  return data;
}

// The table of each N's cost, against the first N.
void print_runs(const Args& a, const std::vector<Measured>& runs) {
  const Measured& b = runs.front();
  fmt::print("\nscale_bench --model {} --windows {} --blocks-per-window {} --eval-per-window {} --store {}\n", a.model,
             a.windows, a.blocks_per_window, a.eval_per_window, a.store);
  fmt::print("mean seconds per window for each step; (xR) = against N={} in this run\n\n", b.miners);
  std::string head = fmt::format("{:<16}", "step");
  for (const auto& r : runs) head += fmt::format("{:>22}", fmt::format("N={}", r.miners));
  head += "  growth";
  fmt::print("{}\n", head);
  auto row = [&](const std::string& name, auto get, const char* unit) {
    std::string line = fmt::format("{:<16}", name);
    for (const auto& r : runs) {
      const double v = get(r), v0 = get(b);
      line += fmt::format("{:>22}", &r == &b || v0 <= 0 ? fmt::format("{:.3f}{}", v, unit)
                                                        : fmt::format("{:.3f}{} (x{:.1f})", v, unit, v / v0));
    }
    line += "  " + growth(get(b), get(runs.back()), b.miners, runs.back().miners);
    fmt::print("{}\n", line);
  };
  for (const auto& s : kSteps)
    row(
        s, [&](const Measured& r) { return r.step.count(s) ? r.step.at(s) : 0.0; }, "");
  row(
      "window", [](const Measured& r) { return r.window_s; }, "");
  row(
      "valid uploads", [](const Measured& r) { return r.valid; }, "");
  row(
      "store calls", [](const Measured& r) { return r.store_calls; }, "");
  row(
      "observer polls", [](const Measured& r) { return r.observer_polls; }, "");
  row(
      "MB read", [](const Measured& r) { return r.mb_read; }, "");
  row(
      "peak RSS MB", [](const Measured& r) { return r.proc.peak_rss_mb; }, "");
  row(
      "CPU s (run)", [](const Measured& r) { return r.proc.cpu_s; }, "");
  fmt::print("\nwindow length {} s; working folder {}\n", a.blocks_per_window, a.dir);
}

}  // namespace
}  // namespace crucible::bench

int main(int argc, char** argv) {
  using namespace crucible;
  using namespace crucible::bench;
  Args a;
  CLI::App app{"One validator judging N miners per window: per-step cost against N (docs/benchmarks.md)"};
  app.add_option("--miners", a.miners, "Values of N, comma-separated; the first is the baseline")->delimiter(',');
  app.add_option("--model", a.model, "Model preset (configs/models)")->capture_default_str();
  app.add_option("--windows", a.windows, "Windows measured per N, after a warm-up window")->capture_default_str();
  app.add_option("--blocks-per-window", a.blocks_per_window, "Blocks (1 s) per window")->capture_default_str();
  app.add_option("--eval-per-window", a.eval_per_window, "validator.eval_per_window")->capture_default_str();
  app.add_option("--validator", a.validator,
                 "A [validator] line for the validator's config, e.g. 'eval_batches = 16' "
                 "(repeat the option for more)");
  app.add_option("--shared", a.shared, "Fraction of each block's kept coordinates taken from the window's real update")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.25));
  app.add_option("--dir", a.dir, "Working folder (default: a new one under /tmp)");
  app.add_option("--store", a.store, "Miners' and validator's stores: local (folders) or s3 (the S3 server, radosgw)")
      ->capture_default_str()
      ->check(CLI::IsMember({"local", "s3"}));
  app.add_flag("--gather-merge-only", a.gather_merge_only,
               "Only the packet-size-bound steps (read, open, decode, norms, copies, merge), in process: for 1b");
  app.add_option("--data", a.data, "Prepared data folder with the model's vocabulary (default: prepared in --dir)");
  app.add_flag("--copies-only", a.copies_only,
               "Only the copy and replay check, in process, against the check before 2026-12-07 (no chain)");
  app.add_option("--history-windows", a.history_windows,
                 "--copies-only: windows of history (validator.history_windows)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (a.dir.empty()) a.dir = fs::temp_directory_path() / fmt::format("crucible-scale-{}", getpid());
  fs::create_directories(a.dir);

  cli::NodeConfig net;
  cli::CommonFlags flags;
  flags.config_files = {(source_dir() / "configs/local/network.toml").string(),
                        (source_dir() / "configs/models" / (a.model + ".toml")).string()};
  char* no_env[] = {nullptr};
  must(cli::load_node_config(cli::Role::kAny, flags, no_env, net), "config");
  log::LogOptions quiet;
  quiet.level = log::Level::kWarn;
  log::configure(quiet, false);
  if (a.gather_merge_only) {
    gather_merge_main(a, net);
    return 0;
  }
  if (a.copies_only) {
    copies_main(a);
    return 0;
  }
  const fs::path data = prepared_data(a, net);
  std::vector<Measured> runs;
  for (int n : a.miners) {
    fmt::print("N={}: setting up the chain and {} miners\n", n, n);
    std::fflush(stdout);
    runs.push_back(run_one(a, n, net, data));
    fmt::print("N={}: set up in {:.0f} s, {} windows measured\n", n, runs.back().setup_s, runs.back().windows);
  }

  print_runs(a, runs);
  return 0;
}
