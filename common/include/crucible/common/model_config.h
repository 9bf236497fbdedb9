// The shape of the shared model (a LLaMA-style decoder). Every node of one
// network must use the same one: its canonical text is hashed into
// checkpoints and the miner refuses a checkpoint made for another shape.
// Presets live in configs/models/*.toml as a [model] section.
#pragma once

#include <cstdint>
#include <string>

#include "crucible/common/config.h"
#include "crucible/common/status.h"

namespace crucible::model {

struct ModelConfig {
  std::int64_t vocab_size = 2048;
  std::int64_t dim = 128;  // hidden size
  std::int64_t n_layers = 4;
  std::int64_t n_heads = 4;
  std::int64_t n_kv_heads = 4;    // grouped-query attention when < n_heads
  std::int64_t hidden_dim = 344;  // SwiGLU inner size
  std::int64_t seq_len = 128;     // tokens per sample (inputs are seq_len - 1 of them)
  double rope_theta = 10000.0;
  double norm_eps = 1e-5;
  bool tie_embeddings = true;  // lm_head shares embed_tokens
  double init_std = 0.02;

  std::int64_t head_dim() const { return dim / n_heads; }
  std::int64_t num_parameters() const;
  // "vocab_size=2048;dim=128;..." in a fixed order: what two nodes compare.
  std::string canonical() const;
};

// Keys "model.vocab_size", ... with ranges.
void bind_options(config::Schema& schema, ModelConfig& options);

// Shape checks the ranges alone cannot make (dim divisible by heads, even head size, ...).
Status validate(const ModelConfig& config);

// Loads a [model] file (configs/models/tiny.toml): unknown keys are errors.
Result<ModelConfig> load_model_config(const std::string& path);

}  // namespace crucible::model
