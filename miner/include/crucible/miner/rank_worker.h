// What rank 0 of a miner tells its other ranks, and the loop a worker rank
// (1 and up) runs: it joins the group, takes rank 0's optimizer state, then
// trains every window rank 0 sends (its share of each micro-batch, from
// rank 0's model) until rank 0 says stop. A worker holds no key, no chain,
// no store and no state on disk: rank 0 has all of it.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>

#include "crucible/common/model_config.h"
#include "crucible/common/status.h"
#include "crucible/miner/miner_options.h"
#include "crucible/miner/rank_group.h"

namespace crucible::miner {

// How long a worker waits for rank 0's next window: as long as a window
// may take (rank 0 waits for sets and slots); rank 0's exit still ends the
// wait at once.
inline constexpr double kWorkerIdleTimeoutS = 7 * 86'400.0;

// Rank 0: the next window's n samples (n rows of seq_len tokens) to every worker.
Status send_window(RankGroup& ranks, std::span<const std::int64_t> tokens, std::int64_t n);
// Rank 0: the workers stop (exit 0).
Status send_stop(RankGroup& ranks);

// A worker rank's whole life; ok when rank 0 said stop.
Status run_rank_worker(const MinerOptions& options, const model::ModelConfig& model, const RankLayout& layout);

}  // namespace crucible::miner
