// crucible-miner --config F [--config F2 ...] --key KEYFILE [--password-file P]
//                [--ranks N | --rank R --world-size W --rank-store HOST:PORT]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <thread>

#include "crucible/cli/node_config.h"
#include "crucible/cli/node_io.h"
#include "crucible/common/child_process.h"
#include "crucible/common/log.h"
#include "crucible/miner/metrics_server.h"
#include "crucible/miner/node.h"
#include "crucible/miner/rank_worker.h"

extern char** environ;

namespace {
std::atomic<bool> g_stop{false};

// Ranks 1..N-1 of a miner started with miner.ranks = N: copies of this
// binary with the same flags plus their rank. Each dies with this process
// (PR_SET_PDEATHSIG) and ignores Ctrl-C, which this process turns into a
// stop it sends them; whatever is still running when this object goes is
// sent SIGTERM and reaped, so no rank outlives the miner.
class LocalRanks {
 public:
  LocalRanks(int argc, char** argv, std::uint32_t ranks) {
    for (std::uint32_t r = 1; r < ranks; ++r) {
      std::vector<std::string> args(argv, argv + argc);
      for (const std::string& set : {fmt::format("miner.rank={}", r), fmt::format("miner.world_size={}", ranks)}) {
        args.push_back("--set");
        args.push_back(set);
      }
      std::vector<char*> cargs;
      for (auto& a : args) cargs.push_back(a.data());
      cargs.push_back(nullptr);
      const pid_t pid = fork();
      if (pid == 0) {
        crucible::reset_child_for_exec(SIGTERM);
        signal(SIGINT, SIG_IGN);  // Ctrl-C reaches rank 0, which stops the others
        execv("/proc/self/exe", cargs.data());
        _exit(127);
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~LocalRanks() {
    // After rank 0's stop the workers exit on their own; a few seconds' grace.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!pids_.empty() && std::chrono::steady_clock::now() < deadline) {
      std::erase_if(pids_, [](pid_t p) { return waitpid(p, nullptr, WNOHANG) != 0; });
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    for (pid_t p : pids_) kill(p, SIGTERM);
    for (pid_t p : pids_) waitpid(p, nullptr, 0);
  }
  LocalRanks(const LocalRanks&) = delete;
  LocalRanks& operator=(const LocalRanks&) = delete;
  std::size_t launched() const { return pids_.size(); }

 private:
  std::vector<pid_t> pids_;
};

// A worker rank (miner.rank >= 1): no key, chain or store; it trains what rank 0 sends.
int run_worker(const crucible::cli::NodeConfig& config) {
  using namespace crucible;
  const miner::MinerOptions& o = config.miner;
  const miner::RankLayout layout{o.rank, o.world(), o.rank_store, o.rank_timeout_s};
  log::info("worker rank starting", {{"rank", o.rank}, {"world_size", o.world()}, {"store", o.rank_store}});
  Status st = miner::run_rank_worker(o, config.model, layout);
  return st.is_ok() ? cli::kExitOk : cli::node_failed(cli::Role::kMiner, fmt::format("rank {} stopped", o.rank), st);
}
}  // namespace

int main(int argc, char** argv) {
  using namespace crucible;
  return cli::guarded_main([&] {
    CLI::App app{"crucible-miner: trains on its assigned data and publishes compressed pseudo-gradients",
                 "crucible-miner"};
    constexpr auto kRole = cli::Role::kMiner;
    cli::NodeConfig config;
    std::optional<chain::PrivateKey> key;
    const cli::ShortcutFlag rank_flags[] = {
        {"--ranks", "miner.ranks", "Ranks to run on this machine: this process and ranks-1 workers"},
        {"--rank", "miner.rank", "This process's rank when each is started by hand"},
        {"--world-size", "miner.world_size", "Ranks on every host together"},
        {"--rank-store", "miner.rank_store", "host:port where rank 0 meets the others"}};
    cli::NodeStartOptions start{rank_flags, [](const cli::NodeConfig& c) { return c.miner.rank != 0; }};
    if (auto rc = cli::prepare_node(app, kRole, argc, argv, environ, config, key, &g_stop, start)) return *rc;
    if (!key) return run_worker(config);
    std::optional<LocalRanks> local;
    if (config.miner.ranks > 1) {
      local.emplace(argc, argv, config.miner.ranks);
      log::info("launched the other ranks", {{"ranks", config.miner.ranks}, {"launched", local->launched()}});
    }

    std::unique_ptr<miner::MetricsServer> metrics_server;
    if (config.miner.metrics_port != 0) {
      http::ServerOptions o;
      o.bind = config.miner.metrics_bind;
      o.port = config.miner.metrics_port;
      o.max_connections = config.miner.metrics_max_connections;
      o.max_connections_per_client = config.miner.metrics_max_connections_per_client;
      o.header_timeout_s = config.miner.metrics_header_timeout_s;
      auto s = miner::MetricsServer::start(o);
      if (!s.is_ok()) {
        log::error("metrics endpoint", {{"error", s.status().to_string()}});
        return cli::kExitFailure;
      }
      metrics_server = std::move(*s);
      log::info("metrics endpoint listening",
                {{"url", fmt::format("http://{}:{}/metrics", config.miner.metrics_bind, metrics_server->port())}});
    }

    miner::MinerNodeOptions options{config.protocol, config.chain, config.storage, config.model, config.miner};
    auto io = cli::make_node_io(config, *key, config.storage.retry_policy().deadline);
    if (!io.is_ok()) return cli::node_failed(kRole, "cannot start", io.status());
    auto node = miner::MinerNode::create(options, *key, std::move(*io));
    if (!node.is_ok()) return cli::node_failed(kRole, "cannot start", node.status());
    if (metrics_server) metrics_server->set_uid((*node)->uid());
    Status st = (*node)->run(g_stop);
    return st.is_ok() ? cli::kExitOk : cli::node_failed(kRole, "stopped on an error", st);
  });
}
