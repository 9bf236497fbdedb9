// The model replica every node holds (protocol.md §3, §6-§8): the global
// model on a device, with what both nodes do to it. The miner's inner loop
// borrows it to train; the validator evaluates updates on it and advances
// it with each window's aggregate. Torch stays behind this header.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "crucible/common/dataset.h"
#include "crucible/common/model_config.h"
#include "crucible/common/safetensors.h"
#include "crucible/common/status.h"
#include "crucible/common/tensor_spec.h"

namespace crucible::model {

class Llama;

struct ReplicaOptions {
  std::string device = "cpu";  // "cpu" or "cuda"
  int threads = 0;             // torch intra-op threads; 0 = all cores
  // Forward passes (losses, gradients, the miner's inner steps) in bf16
  // autocast: "auto" (on CUDA, where tensor cores make it pay; not on CPU),
  // "bf16" (wherever), "off". Parameters, optimizer state and losses stay
  // f32.
  std::string autocast = "auto";
};

// bf16 autocast for the replica's device while it lives (when `on`), the
// previous state restored after; the same on libtorch 1.13 and 2.x.
class AutocastScope {
 public:
  AutocastScope(bool cuda, bool on);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool cuda_ = false, on_ = false, was_enabled_ = false;
  int was_dtype_ = 0;
};

class Replica {
 public:
  // The genesis model from init_seed, on the configured device.
  static Result<std::unique_ptr<Replica>> create(const ModelConfig& config, const ReplicaOptions& options,
                                                 std::uint64_t init_seed);
  ~Replica();

  const ModelConfig& config() const;
  const std::vector<TensorSpec>& specs() const;
  std::int64_t num_parameters() const;
  // Llama::parameters_sha256 of the model as it is now.
  std::string parameters_sha256() const;

  // Per tensor, the values at the given flat positions (one host copy per
  // tensor, not one per value).
  TensorValues values_at(const std::vector<std::vector<std::int64_t>>& positions) const;

  // theta <- theta - scale * update; sizes must match and values be finite
  // (invalid_argument otherwise, the model unchanged).
  Status apply_update(const TensorValues& update, double scale);
  // Mean next-token loss over n samples of seq_len tokens (no gradient).
  Result<double> loss(std::span<const std::int64_t> samples, std::int64_t n);
  // The gradient of the mean next-token loss over n samples at theta, per
  // tensor (host copies; theta and the parameters' grad state unchanged).
  Result<TensorValues> gradient(std::span<const std::int64_t> samples, std::int64_t n);
  // The mean next-token loss of each of n samples (no gradient).
  Result<std::vector<double>> sample_losses(std::span<const std::int64_t> samples, std::int64_t n);
  // The validator's probe: with theta' = theta - scale * update, the loss
  // of each sample of `a` (n_a samples) and of `b` (n_b samples); theta is
  // then put back bit for bit, whatever happened.
  Result<std::pair<std::vector<double>, std::vector<double>>> probe_samples(const TensorValues& update, double scale,
                                                                            std::span<const std::int64_t> a,
                                                                            std::int64_t n_a,
                                                                            std::span<const std::int64_t> b,
                                                                            std::int64_t n_b);
  // probe_samples' mean losses on `a` and on `b`.
  Result<std::pair<double, double>> probe(const TensorValues& update, double scale, std::span<const std::int64_t> a,
                                          std::int64_t n_a, std::span<const std::int64_t> b, std::int64_t n_b);

  // Safetensors with Hugging Face names (atomic write); load refuses other
  // names, shapes or non-finite values.
  Status save(const std::filesystem::path& file, const std::map<std::string, std::string>& metadata = {}) const;
  Status load(const std::filesystem::path& file);
  Status load(const safetensors::File& file);

  // For the inner loop (a torch translation unit): the module itself.
  Llama& llama();
  bool on_cuda() const;
  // Whether forward passes run in bf16 autocast (ReplicaOptions::autocast).
  bool autocast() const;

 private:
  Replica();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The mean of per-sample losses (sample_losses, probe_samples): the batch's
// loss. 0 for none.
double mean_loss(std::span<const double> losses);

// Mean next-token loss over the first `samples` samples of `data` (all of
// them when fewer), in batches of `batch`: what the validator's held-out
// loss and `crucible model eval` report. Fails on an empty range.
Result<double> dataset_loss(Replica& replica, const data::Dataset& data, std::uint64_t samples,
                            std::uint64_t batch = 16);

}  // namespace crucible::model
