// The [validator] and [api] sections: one validator's local choices. What
// the network must agree on is in [protocol].
#pragma once

#include <cstdint>
#include <string>

#include "crucible/common/config.h"
#include "crucible/common/http_server.h"

namespace crucible::validator {

struct ValidatorOptions {
  std::string data_dir = "data/brown";                    // the same token shards as the miners
  std::string state_dir = "/var/lib/crucible/validator";  // RocksDB state and the model
  std::uint32_t eval_per_window = 20;                     // uids evaluated per window
  std::uint32_t eval_newcomers = 4;                       // of which at most this many never evaluated before
  double eval_window_share = 0.5;        // evaluations start only in this share of a window's length (0: no bound)
  std::uint32_t heldout_samples = 64;    // samples of the val split for the held-out loss each window (0: off)
  std::uint32_t eval_batches = 8;        // samples per loss (own and random)
  double eval_lr_factor = 0.2;           // theta' = theta - outer_lr * eval_lr_factor * (median / |u|) * u
  std::uint32_t weights_every = 2;       // windows between weight posts
  std::uint32_t checkpoint_every = 5;    // windows between the lead's checkpoints
  double copy_overlap = 0.5;             // mean top-k index overlap that counts as a copy
  double copy_cosine = 0.3;              // |cosine| of decoded values that counts as the same update
  std::uint32_t history_windows = 8;     // windows of updates and aggregates a new update is compared with
  std::uint32_t fetch_parallelism = 64;  // peers checked at once (>= the miners: one deadline for all)
  double fetch_deadline_s = 30.0;        // every call on a peer's store, retries included
  double gather_deadline_s = 60.0;       // no peer is started after this; each ends by fetch_deadline_s
  double observe_interval_s = 1.0;       // between two polls of a miner's key during its slot (timing evidence)
  double observe_idle_interval_s = 5.0;  // between two polls of a key before its slot's busy time
  double observe_max_latency_s = 5.0;    // a poll (HEAD and download) slower than this proves no time
  std::string device = "cpu";            // "cpu" or "cuda"
  std::string autocast = "auto";         // evaluation in bf16 autocast: auto (on CUDA), bf16, off
  int threads = 0;                       // 0 = all cores
  std::uint32_t max_windows = 0;         // stop after this many windows (0 = run until stopped)
  std::int64_t start_window = -1;        // first window to process on a fresh state (-1: the one under way)
  std::int64_t end_window = -1;          // stop before this window (-1: never)
  double aggregate_wait_s = 30.0;        // a non-lead waits this long for the lead's set
  std::uint16_t burn_uid = 0;            // gets all weight when no uid has a positive score (no stale weights)
  std::string random_seed;               // seed of the random-data choice (empty: derived from the key)
  std::string gradient_check = "off";    // off | measure | require (protocol.md §6)
  bool measure_decoy = false;            // also measure each update on another uid's samples (the check's power)
};

// The score API's HTTP server, with the API's defaults: port 8080 (0 = off),
// 1,024 connections, 16 per client address (0: no cap; behind a proxy all
// clients share its address), 2 I/O threads.
struct ApiOptions : http::ServerOptions {
  ApiOptions() {
    port = 8080;
    max_connections = 1024;
    max_connections_per_client = 16;
    threads = 2;
    name = "crucible-validator";
  }
};

void bind_options(config::Schema& schema, ValidatorOptions& options);
void bind_options(config::Schema& schema, ApiOptions& options);

}  // namespace crucible::validator
