// The shared model: a LLaMA-style decoder (RMSNorm, rotary position
// embeddings, SwiGLU MLP, causal multi-head attention with optional grouped
// key/value heads, optional tied embeddings), written on ATen operators so
// that autograd trains it and the same code runs on CPU or CUDA.
//
// Parameters are kept as a flat list under their Hugging Face Llama names
// ("model.layers.0.self_attn.q_proj.weight", ...), in a fixed order, so
// checkpoints load in Hugging Face tooling and every node walks the tensors
// the same way. Initialisation is specified bit for bit (docs/protocol.md):
// each tensor draws from its own SplitMix64 stream seeded by the seed and
// its name, so it does not depend on the torch version.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "crucible/common/model_config.h"
#include "crucible/common/safetensors.h"
#include "crucible/common/status.h"

namespace crucible::model {

struct NamedTensor {
  std::string name;
  at::Tensor tensor;
};

class Llama {
 public:
  // float32 on the CPU; invalid_argument for a config that fails validate().
  static Result<Llama> create(const ModelConfig& config, std::uint64_t seed);

  const ModelConfig& config() const { return config_; }
  const std::vector<NamedTensor>& parameters() const { return params_; }
  std::vector<at::Tensor> tensors() const;
  std::int64_t num_parameters() const;
  // SHA-256 over every parameter in order (name, shape, float32
  // little-endian values): for the genesis model, protocol.genesis_sha256.
  std::string parameters_sha256() const;

  // tokens: [batch, time] int64 -> logits [batch, time, vocab].
  at::Tensor logits(const at::Tensor& tokens) const;
  // Mean next-token cross-entropy over samples [batch, seq]: predicts
  // tokens[:, 1:] from tokens[:, :-1].
  at::Tensor loss(const at::Tensor& samples) const;
  // Per sample [n]: the mean next-token loss of each row.
  at::Tensor sample_losses(const at::Tensor& samples) const;

  // Moves the parameters (keeping them leaves that require grad).
  void to(const at::Device& device);
  void set_requires_grad(bool on);

  // Safetensors with Hugging Face names, F32. The metadata gets the config's
  // canonical text under "crucible.model"; `load` refuses a file whose
  // tensor names or shapes differ from this model's, or that holds NaN/Inf.
  Status save(const std::filesystem::path& path, safetensors::Metadata metadata = {}) const;
  Status load(const std::filesystem::path& path);
  Status load(const safetensors::File& file);

 private:
  struct Layer {
    at::Tensor attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down;
  };
  explicit Llama(ModelConfig config) : config_(std::move(config)) {}
  void bind();  // fills layers_/embed_/... from params_
  at::Tensor attention(const Layer& l, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) const;

  ModelConfig config_;
  std::vector<NamedTensor> params_;
  at::Tensor embed_, final_norm_, lm_head_;
  std::vector<Layer> layers_;
};

// The fixed initialisation stream: n normal(0, std) floats from
// SplitMix64(seed ^ fnv1a64(name)) by the Box–Muller transform in double.
std::vector<float> init_normal(std::uint64_t seed, std::string_view name, std::size_t n, double std);

}  // namespace crucible::model
