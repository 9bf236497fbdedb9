// Training throughput and memory of a miner of several ranks (issue #27):
// the miner's inner loop on 1 rank, then on N ranks (processes on this
// machine, c10d/Gloo over loopback), each rank with cores/N compute
// threads, on the same windows, with AdamW's state whole on every rank and
// (with --shard) sharded over the ranks (ZeRO-1). Prints tokens/s against
// the first row, measured in the same run, and each rank's peak RSS.
//   ranks_bench [--model configs/models/tiny.toml] [--ranks 1,2] [--windows 3]
//               [--inner-steps 4] [--micro-batch 8] [--threads N] [--shard]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>
#include <thread>

#include "crucible/common/child_process.h"
#include "crucible/common/model.h"
#include "crucible/common/replica.h"
#include "crucible/miner/inner_loop.h"
#include "crucible/miner/rank_group.h"

namespace {

using namespace crucible;

struct Figures {
  double seconds = 0;  // the measured windows, rank 0's wall time
  std::uint64_t tokens = 0;
  double peak_rss_mb = 0;
};

// One rank's run (in a child process): a warm-up window, then `windows` timed ones.
Result<Figures> run_rank(const model::ModelConfig& config, miner::MinerOptions o, std::uint32_t rank,
                         std::uint32_t world, std::uint16_t port, int windows) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto replica, model::Replica::create(config, model::ReplicaOptions{"cpu", o.threads}, 1));
  std::unique_ptr<miner::RankGroup> group;
  if (world > 1) {
    CRUCIBLE_ASSIGN_OR_RETURN(group, miner::RankGroup::join({rank, world, fmt::format("127.0.0.1:{}", port), 600}));
  }
  CRUCIBLE_ASSIGN_OR_RETURN(auto loop, miner::InnerLoop::create(*replica, o, group.get()));
  const std::int64_t n = static_cast<std::int64_t>(o.inner_steps) * o.micro_batch;
  std::mt19937_64 rng(7);  // every rank draws the same samples
  std::vector<std::int64_t> tokens(static_cast<std::size_t>(n * config.seq_len));
  Figures f;
  for (int w = 0; w <= windows; ++w) {
    for (auto& t : tokens) t = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(config.vocab_size));
    const auto t0 = std::chrono::steady_clock::now();
    CRUCIBLE_ASSIGN_OR_RETURN(auto r, loop->train_window(tokens, n, nullptr, nullptr));
    if (w == 0) continue;  // warm-up
    f.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    f.tokens += r.tokens;
  }
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  f.peak_rss_mb = static_cast<double>(u.ru_maxrss) / 1024.0;
  return f;
}

// Runs `world` ranks as child processes; rank 0's figures and every rank's peak RSS.
std::optional<std::pair<Figures, std::vector<double>>> run_world(const model::ModelConfig& config,
                                                                 const miner::MinerOptions& o, std::uint32_t world,
                                                                 int windows) {
  std::uint16_t port = 0;
  if (world > 1) {
    auto p = free_loopback_port();
    if (!p.is_ok()) return std::nullopt;
    port = *p;
  }
  std::vector<std::pair<pid_t, int>> children;
  for (std::uint32_t r = 0; r < world; ++r) {
    int fds[2];
    if (pipe(fds) != 0) return std::nullopt;
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      auto f = run_rank(config, o, r, world, port, windows);
      const std::string line = f.is_ok() ? fmt::format("ok {} {} {}\n", f->seconds, f->tokens, f->peak_rss_mb)
                                         : fmt::format("error {}\n", f.status().to_string());
      (void)!write(fds[1], line.data(), line.size());
      _exit(f.is_ok() ? 0 : 1);
    }
    close(fds[1]);
    children.emplace_back(pid, fds[0]);
  }
  Figures rank0;
  std::vector<double> rss;
  bool ok = true;
  for (std::size_t r = 0; r < children.size(); ++r) {
    std::string text;
    char buf[512];
    for (ssize_t k; (k = read(children[r].second, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(k));
    close(children[r].second);
    waitpid(children[r].first, nullptr, 0);
    std::istringstream in(text);
    std::string word;
    Figures f;
    in >> word >> f.seconds >> f.tokens >> f.peak_rss_mb;
    if (word != "ok") {
      std::fprintf(stderr, "rank %zu of %u: %s", r, world, text.c_str());
      ok = false;
      continue;
    }
    if (r == 0) rank0 = f;
    rss.push_back(f.peak_rss_mb);
  }
  if (!ok) return std::nullopt;
  return std::make_pair(rank0, rss);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ranks_bench: the miner's inner loop on 1 rank against N ranks (c10d/Gloo, processes)"};
  std::string model_file = std::string(CRUCIBLE_SOURCE_DIR) + "/configs/models/tiny.toml";
  std::vector<std::uint32_t> worlds{1, 2};
  int windows = 3;
  miner::MinerOptions o;
  o.inner_steps = 4;
  o.micro_batch = 8;
  o.warmup_steps = 0;
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  app.add_option("--model", model_file, "Model preset (TOML)");
  app.add_option("--ranks", worlds, "Rank counts to run, the first is the baseline")->delimiter(',');
  app.add_option("--windows", windows, "Timed windows (after one warm-up)");
  app.add_option("--inner-steps", o.inner_steps, "AdamW steps per window");
  app.add_option("--micro-batch", o.micro_batch, "Samples per step, over all ranks");
  app.add_option("--threads", threads, "Compute threads on the machine, shared by the ranks");
  bool shard = false;
  app.add_flag("--shard", shard, "Also run every rank count above 1 with the optimizer sharded (ZeRO-1)");
  CLI11_PARSE(app, argc, argv);
  if (!miner::RankGroup::available() && worlds.size() > 1) {
    std::fprintf(stderr, "this libtorch has no c10d with Gloo\n");
    return 1;
  }
  auto config = model::load_model_config(model_file);
  if (!config.is_ok()) {
    std::fprintf(stderr, "%s\n", config.status().to_string().c_str());
    return 2;
  }
  std::printf("model %s, %u inner steps of micro-batch %u, %d windows, %d threads in all\n", model_file.c_str(),
              o.inner_steps, o.micro_batch, windows, threads);
  std::printf(
      "| ranks | AdamW state | threads/rank | tokens/s | vs %u rank(s) | peak RSS per rank (MB) |\n"
      "|---|---|---|---|---|---|\n",
      worlds.front());
  double baseline = 0;
  for (std::uint32_t world : worlds) {
    if (o.micro_batch % world != 0) {
      std::fprintf(stderr, "micro-batch %u does not split over %u ranks\n", o.micro_batch, world);
      return 2;
    }
    o.threads = std::max(1, threads / static_cast<int>(world));
    for (bool sharded : {false, true}) {
      if (sharded && (!shard || world == 1)) continue;
      o.shard_optimizer = sharded;
      auto got = run_world(*config, o, world, windows);
      if (!got) return 1;
      const double tps = static_cast<double>(got->first.tokens) / got->first.seconds;
      if (baseline == 0) baseline = tps;
      std::string rss;
      for (double m : got->second) rss += fmt::format("{}{:.0f}", rss.empty() ? "" : ", ", m);
      std::printf("| %u | %s | %d | %.0f | %.2fx | %s |\n", world, sharded ? "sharded" : "whole", o.threads, tps,
                  tps / baseline, rss.c_str());
    }
  }
  return 0;
}
