// The miner's local training (protocol.md §3, SparseLoCo inner loop): H
// AdamW steps on the window's assigned samples, starting from the global
// model held in a Replica it borrows; the pseudo-gradient
// delta = theta_start - theta_H; theta then goes back to theta_start (the
// outer step is the Replica's apply_update). AdamW's moments carry over from
// window to window and persist on disk.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>

#include "crucible/common/replica.h"
#include "crucible/common/status.h"
#include "crucible/miner/miner_options.h"
#include "crucible/miner/rank_group.h"

namespace crucible::miner {

struct StepInfo {
  std::uint32_t step = 0, steps = 0;
  double loss = 0;
  double tokens_per_second = 0;
};

struct WindowResult {
  model::TensorValues delta;  // per tensor, theta_start - theta_H
  std::uint32_t steps = 0;    // inner steps taken (H, or fewer when out_of_time cut them short)
  double mean_loss = 0;
  std::uint64_t tokens = 0;
  double seconds = 0;
};

class InnerLoop {
 public:
  // `replica` (and `ranks`, when given) must outlive the loop. With ranks,
  // this rank trains its share of every micro-batch (micro_batch must be a
  // multiple of the ranks) and the gradients are averaged over the ranks
  // before each step: every rank computes the same update, the one a
  // single rank computes on the whole micro-batch.
  static Result<std::unique_ptr<InnerLoop>> create(model::Replica& replica, const MinerOptions& options,
                                                   RankGroup* ranks = nullptr);
  ~InnerLoop();

  std::uint64_t steps_done() const;

  // With ranks, collective: every rank takes rank 0's optimizer state and
  // step count (once, after rank 0 has loaded its state). train_window
  // then starts every window from rank 0's model.
  Status share_state();

  // samples: n rows of seq_len tokens. Stops early (aborted) when *stop
  // turns true. Without ranks, `out_of_time` (when given) is asked before
  // each step after the first: true ends the window's training there, and
  // the update is that of the steps taken (with ranks every rank must take
  // the same steps, so it is not asked).
  Result<WindowResult> train_window(std::span<const std::int64_t> samples, std::int64_t n,
                                    const std::function<void(const StepInfo&)>& on_step, const std::atomic<bool>* stop,
                                    const std::function<bool()>& out_of_time = nullptr);

  // model.safetensors and optimizer.pt in dir (each written atomically).
  Status save(const std::filesystem::path& dir) const;
  Status load(const std::filesystem::path& dir, std::uint64_t steps_done);

 private:
  InnerLoop();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace crucible::miner
