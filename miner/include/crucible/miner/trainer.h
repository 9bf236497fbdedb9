// The miner's local training (protocol.md §3, SparseLoCo inner loop): H
// AdamW steps on the window's assigned samples starting from the global
// model, the pseudo-gradient delta = theta_start - theta_H, and theta reset
// to theta_start; later the outer step theta <- theta - alpha * aggregate.
// AdamW's moments carry over from window to window and persist on disk.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "crucible/common/model_config.h"
#include "crucible/common/status.h"
#include "crucible/miner/aggregation.h"
#include "crucible/miner/miner_options.h"

namespace crucible::miner {

struct StepInfo {
  std::uint32_t step = 0, steps = 0;
  double loss = 0;
  double tokens_per_second = 0;
};

struct WindowResult {
  std::vector<std::vector<float>> delta;  // per tensor, theta_start - theta_H
  double mean_loss = 0;
  std::uint64_t tokens = 0;
  double seconds = 0;
};

class Trainer {
 public:
  // The genesis model from init_seed, on the configured device.
  static Result<std::unique_ptr<Trainer>> create(const model::ModelConfig& config, const MinerOptions& options,
                                                 std::uint64_t init_seed);
  ~Trainer();

  const std::vector<TensorSpec>& specs() const;
  std::int64_t num_parameters() const;
  // The model's value of tensor t at a flat index (for fingerprints).
  float value(std::size_t tensor, std::int64_t flat) const;
  std::uint64_t inner_steps_done() const;

  // samples: n rows of seq_len tokens. Stops early (aborted) when *stop turns true.
  Result<WindowResult> train_window(std::span<const std::int64_t> samples, std::int64_t n,
                                    const std::function<void(const StepInfo&)>& on_step,
                                    const std::atomic<bool>* stop);
  // theta <- theta - alpha * aggregate; sizes must match, values be finite.
  Status apply_aggregate(const std::vector<std::vector<float>>& aggregate, double alpha);
  // Mean loss over samples (no gradient), e.g. for a held-out split.
  Result<double> evaluate(std::span<const std::int64_t> samples, std::int64_t n);
  // The validator's probe: with theta' = theta - scale * update, the mean
  // losses on `a` (n_a samples) and `b` (n_b samples); theta is then put
  // back bit for bit.
  Result<std::pair<double, double>> evaluate_update(const std::vector<std::vector<float>>& update, double scale,
                                                    std::span<const std::int64_t> a, std::int64_t n_a,
                                                    std::span<const std::int64_t> b, std::int64_t n_b);
  Status save_model(const std::filesystem::path& file, const std::map<std::string, std::string>& metadata) const;

  // model.safetensors and optimizer.pt in dir (each written atomically).
  Status save(const std::filesystem::path& dir, std::uint64_t inner_steps) const;
  Status load(const std::filesystem::path& dir, std::uint64_t inner_steps);
  Status load_model(const std::filesystem::path& safetensors_file);

 private:
  Trainer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace crucible::miner
