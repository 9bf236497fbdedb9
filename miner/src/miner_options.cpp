#include "crucible/miner/miner_options.h"

namespace crucible::miner {

void bind_options(config::Schema& s, MinerOptions& o) {
  s.add_string("miner.data_dir", &o.data_dir, "Token shards made by `crucible data prepare`.");
  s.add_string("miner.state_dir", &o.state_dir, "Where the miner keeps its model, error feedback and optimizer state.");
  s.add_int("miner.inner_steps", &o.inner_steps, "AdamW steps per window (H).", 1, 100'000);
  s.add_int("miner.micro_batch", &o.micro_batch, "Samples per inner step.", 1, 4096);
  s.add_double("miner.lr", &o.lr, "Peak inner learning rate.", 0, 1);
  s.add_int("miner.warmup_steps", &o.warmup_steps, "Linear warmup, in inner steps.", 0, 100'000'000);
  s.add_int("miner.decay_steps", &o.decay_steps, "Cosine decay length, in inner steps.", 1, 1'000'000'000);
  s.add_double("miner.min_lr_ratio", &o.min_lr_ratio, "Final learning rate as a share of the peak.", 0, 1);
  s.add_double("miner.weight_decay", &o.weight_decay, "AdamW weight decay.", 0, 10);
  s.add_double("miner.adam_beta1", &o.adam_beta1, "AdamW first-moment decay.", 0, 0.999999);
  s.add_double("miner.adam_beta2", &o.adam_beta2, "AdamW second-moment decay.", 0, 0.999999);
  s.add_double("miner.adam_eps", &o.adam_eps, "AdamW denominator floor.", 1e-30, 1);
  s.add_double("miner.grad_clip", &o.grad_clip, "Gradient norm clip (0 = off).", 0, 1e6);
  s.add_double("miner.ef_beta", &o.ef_beta, "Error feedback decay (beta).", 0, 1);
  s.add_string("miner.device", &o.device, "Where to train, and where error feedback, compression and merges run.",
               {"cpu", "cuda"});
  s.add_string("miner.autocast", &o.autocast,
               "Inner steps' forward passes in bf16 autocast: auto (on CUDA only), bf16, off.",
               {"auto", "bf16", "off"});
  s.add_int("miner.threads", &o.threads, "Compute threads (0 = all cores).", 0, 1024);
  s.add_double("miner.aggregate_wait_s", &o.aggregate_wait_s,
               "Seconds to wait for a window's aggregate before training on without it.", 0, 86'400);
  s.add_int("miner.metrics_port", &o.metrics_port, "Port of the Prometheus /metrics endpoint (0 = off).");
  s.add_string("miner.metrics_bind", &o.metrics_bind, "Address the metrics endpoint listens on.");
  s.add_int("miner.metrics_max_connections", &o.metrics_max_connections,
            "Open connections to the metrics endpoint at most (503 beyond).", 1, 100'000);
  s.add_int("miner.metrics_max_connections_per_client", &o.metrics_max_connections_per_client,
            "Open connections to the metrics endpoint from one client address at most; more are closed at once (0 "
            "= no cap).",
            0, 100'000);
  s.add_double("miner.metrics_header_timeout_s", &o.metrics_header_timeout_s,
               "A request's head must arrive within this, from its first byte.", 0.1, 600);
  s.add_string("miner.progress", &o.progress, "Progress line on stderr.", {"auto", "on", "off"});
  s.add_int("miner.max_windows", &o.max_windows, "Stop after this many windows (0 = run until stopped).", 0,
            1'000'000'000);
  s.add_int("miner.ranks", &o.ranks,
            "Ranks this command runs on this machine: rank 0 (key, chain, upload) and ranks-1 training workers it "
            "launches; every rank trains its share of each micro-batch.",
            1, 1024);
  s.add_int("miner.rank", &o.rank, "This process's rank, when each rank is started by hand (several hosts).", 0, 1023);
  s.add_int("miner.world_size", &o.world_size, "Ranks on every host together (0 = miner.ranks).", 0, 1024);
  s.add_string("miner.rank_store", &o.rank_store, "host:port where rank 0 listens for the other ranks.");
  s.add_double("miner.rank_timeout_s", &o.rank_timeout_s, "Seconds the ranks wait to meet, and for each collective.", 1,
               86'400);
  s.add_bool("miner.shard_optimizer", &o.shard_optimizer,
             "With several ranks, each holds and steps its own slice of AdamW's state, then the ranks gather the "
             "parameters (ZeRO-1): AdamW's memory per rank is divided by the ranks.");
}

Status check_ranks(const MinerOptions& o) {
  const std::uint32_t world = o.world();
  if (o.ranks > 1 && o.world_size != 0 && o.world_size != o.ranks) {
    return invalid_argument(
        "miner.ranks {} launches every rank on this machine, but miner.world_size says {}: set one of them", o.ranks,
        o.world_size);
  }
  if (o.rank >= world) return invalid_argument("miner.rank {} is not below the {} ranks", o.rank, world);
  if (o.micro_batch % world != 0) {
    return invalid_argument("miner.micro_batch {} is not a multiple of the {} ranks", o.micro_batch, world);
  }
  return Status::ok();
}

}  // namespace crucible::miner
