// The [miner] section: what one miner does locally (every value here is the
// operator's choice; what the network must agree on is in [protocol]).
#pragma once

#include <cstdint>
#include <string>

#include "crucible/common/config.h"

namespace crucible::miner {

struct MinerOptions {
  std::string data_dir = "data/brown";                // token shards (crucible data prepare)
  std::string state_dir = "/var/lib/crucible/miner";  // model, error feedback, optimizer state
  std::uint32_t inner_steps = 30;                     // H: AdamW steps per window
  std::uint32_t micro_batch = 8;                      // samples per inner step
  double lr = 4e-4;                                   // peak inner learning rate
  std::uint32_t warmup_steps = 100;                   // linear warmup, counted in inner steps across windows
  std::uint64_t decay_steps = 100'000;                // cosine decay to min_lr_ratio * lr
  double min_lr_ratio = 0.1;
  double weight_decay = 0.1;
  double adam_beta1 = 0.9;   // AdamW first-moment decay (protocol.md §3)
  double adam_beta2 = 0.95;  // AdamW second-moment decay
  double adam_eps = 1e-8;    // AdamW denominator floor
  double grad_clip = 1.0;
  double ef_beta = 0.8;            // error feedback decay (0.8: docs/benchmarks.md, 3 seeds)
  std::string device = "cpu";      // "cpu" or "cuda"
  std::string autocast = "auto";   // inner steps in bf16 autocast: auto (on CUDA), bf16, off
  int threads = 0;                 // torch and codec threads; 0 = all cores
  double aggregate_wait_s = 30.0;  // how long to wait for a window's aggregate before training on
  std::uint16_t metrics_port = 0;  // Prometheus /metrics on 127.0.0.1; 0 = off
  std::string metrics_bind = "127.0.0.1";
  std::uint32_t metrics_max_connections = 128;
  std::uint32_t metrics_max_connections_per_client = 8;  // 0: no cap
  double metrics_header_timeout_s = 5.0;
  std::string progress = "auto";  // progress line: auto (on a terminal), on, off
  std::uint32_t max_windows = 0;  // stop after this many windows (0 = run until stopped)
  // Ranks (docs/miner.md "One miner over several CPUs, GPUs or hosts"):
  std::uint32_t ranks = 1;                     // ranks this command runs here: rank 0 and ranks-1 workers it launches
  std::uint32_t rank = 0;                      // this process's rank when each rank is started by hand (1+: a worker)
  std::uint32_t world_size = 0;                // all ranks, on every host; 0 = ranks
  std::string rank_store = "127.0.0.1:29500";  // host:port where rank 0 meets the others
  double rank_timeout_s = 120;                 // the ranks' meeting and every collective
  bool shard_optimizer = false;                // ZeRO-1: each rank holds and steps 1/world of AdamW's state

  std::uint32_t world() const { return world_size != 0 ? world_size : ranks; }
};

// The ranks' options that do not fit together, or an error naming them.
Status check_ranks(const MinerOptions& o);

void bind_options(config::Schema& schema, MinerOptions& options);

}  // namespace crucible::miner
