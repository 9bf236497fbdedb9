#include "crucible/miner/rank_worker.h"

#include <array>
#include <cstring>

#include "crucible/common/log.h"
#include "crucible/common/replica.h"
#include "crucible/miner/inner_loop.h"

namespace crucible::miner {

namespace {

enum class Command : std::uint64_t { kStop = 0, kTrain = 1 };
using Header = std::array<std::uint64_t, 3>;  // command, samples, seq_len
constexpr std::uint64_t kMaxSamples = 1 << 20;

// Rank 0 sends h; every other rank receives it into h.
Status broadcast_header(RankGroup& ranks, Header& h, double timeout_s = kWorkerIdleTimeoutS) {
  return ranks.broadcast(std::span(reinterpret_cast<std::uint8_t*>(h.data()), sizeof h), timeout_s);
}

}  // namespace

Status send_window(RankGroup& ranks, std::span<const std::int64_t> tokens, std::int64_t n) {
  if (ranks.world_size() == 1) return Status::ok();
  if (n <= 0 || tokens.size() % static_cast<std::size_t>(n) != 0) {
    return invalid_argument("send_window: {} tokens for {} samples", tokens.size(), n);
  }
  Header h{static_cast<std::uint64_t>(Command::kTrain), static_cast<std::uint64_t>(n), tokens.size() / n};
  CRUCIBLE_RETURN_IF_ERROR(broadcast_header(ranks, h));
  std::vector<std::int64_t> copy(tokens.begin(), tokens.end());
  return ranks.broadcast(std::span(reinterpret_cast<std::uint8_t*>(copy.data()), copy.size() * sizeof(std::int64_t)));
}

Status send_stop(RankGroup& ranks) {
  if (ranks.world_size() == 1) return Status::ok();
  // Briefly: a worker caught in a collective rank 0 left (a window
  // stopped half way) never takes it, and learns of the stop when rank 0's
  // connections close.
  Header h{static_cast<std::uint64_t>(Command::kStop), 0, 0};
  return broadcast_header(ranks, h, 5.0);
}

Status run_rank_worker(const MinerOptions& options, const model::ModelConfig& model, const RankLayout& layout) {
  if (layout.rank == 0) return invalid_argument("rank 0 is the miner itself, not a worker");
  CRUCIBLE_RETURN_IF_ERROR(model::validate(model));
  model::ReplicaOptions ro{options.device, options.threads, options.autocast};
  CRUCIBLE_ASSIGN_OR_RETURN(auto replica, model::Replica::create(model, ro, 1));  // rank 0's model comes each window
  CRUCIBLE_ASSIGN_OR_RETURN(auto group, RankGroup::join(layout));
  CRUCIBLE_ASSIGN_OR_RETURN(auto loop, InnerLoop::create(*replica, options, group.get()));
  CRUCIBLE_RETURN_IF_ERROR(loop->share_state());
  log::info("rank ready", {{"rank", layout.rank}, {"world_size", layout.world_size}, {"store", layout.store}});
  for (std::uint64_t windows = 0;; ++windows) {
    Header h{};
    CRUCIBLE_RETURN_IF_ERROR(broadcast_header(*group, h).with_context("waiting for rank 0's next window"));
    if (h[0] == static_cast<std::uint64_t>(Command::kStop)) {
      log::info("rank stopped: rank 0 said stop", {{"rank", layout.rank}, {"windows", windows}});
      return Status::ok();
    }
    if (h[0] != static_cast<std::uint64_t>(Command::kTrain) || h[1] == 0 || h[1] > kMaxSamples ||
        h[2] != static_cast<std::uint64_t>(model.seq_len)) {
      return data_loss(
          "rank 0 sent a window this rank cannot train (command {}, {} samples of {} tokens; the model's "
          "seq_len is {}): are both started with the same config?",
          h[0], h[1], h[2], model.seq_len);
    }
    std::vector<std::int64_t> tokens(h[1] * h[2]);
    CRUCIBLE_RETURN_IF_ERROR(group->broadcast(
        std::span(reinterpret_cast<std::uint8_t*>(tokens.data()), tokens.size() * sizeof(std::int64_t))));
    CRUCIBLE_ASSIGN_OR_RETURN(WindowResult r,
                              loop->train_window(tokens, static_cast<std::int64_t>(h[1]), nullptr, nullptr));
    log::info("rank trained window", {{"rank", layout.rank}, {"loss", r.mean_loss}, {"seconds", r.seconds}});
  }
}

}  // namespace crucible::miner
