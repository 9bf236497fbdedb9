#include "crucible/common/model_config.h"

#include <fmt/format.h>

namespace crucible::model {

std::int64_t ModelConfig::num_parameters() const {
  const std::int64_t kv_dim = head_dim() * n_kv_heads;
  const std::int64_t attention = dim * dim * 2 + dim * kv_dim * 2;  // q, o + k, v
  const std::int64_t mlp = dim * hidden_dim * 3;
  const std::int64_t layer = attention + mlp + dim * 2;  // two RMSNorm weights
  const std::int64_t embeddings = vocab_size * dim * (tie_embeddings ? 1 : 2);
  return embeddings + n_layers * layer + dim;  // + final norm
}

std::string ModelConfig::canonical() const {
  return fmt::format(
      "vocab_size={};dim={};n_layers={};n_heads={};n_kv_heads={};hidden_dim={};seq_len={};rope_theta={};"
      "norm_eps={};tie_embeddings={};init_std={}",
      vocab_size, dim, n_layers, n_heads, n_kv_heads, hidden_dim, seq_len, rope_theta, norm_eps, tie_embeddings,
      init_std);
}

void bind_options(config::Schema& schema, ModelConfig& o) {
  schema.add_int("model.vocab_size", &o.vocab_size, "Vocabulary size (>= the tokenizer's).", 256, 1 << 20);
  schema.add_int("model.dim", &o.dim, "Hidden size.", 8, 16384);
  schema.add_int("model.n_layers", &o.n_layers, "Decoder layers.", 1, 256);
  schema.add_int("model.n_heads", &o.n_heads, "Attention heads.", 1, 256);
  schema.add_int("model.n_kv_heads", &o.n_kv_heads, "Key/value heads (grouped-query attention when fewer).", 1, 256);
  schema.add_int("model.hidden_dim", &o.hidden_dim, "SwiGLU inner size.", 8, 65536);
  schema.add_int("model.seq_len", &o.seq_len, "Tokens per training sample.", 2, 1 << 16);
  schema.add_double("model.rope_theta", &o.rope_theta, "RoPE base.", 1, 1e9);
  schema.add_double("model.norm_eps", &o.norm_eps, "RMSNorm epsilon.", 1e-12, 1e-2);
  schema.add_bool("model.tie_embeddings", &o.tie_embeddings, "Share the embedding with the output head.");
  schema.add_double("model.init_std", &o.init_std, "Standard deviation of the initial weights.", 1e-6, 1);
}

Status validate(const ModelConfig& c) {
  if (c.dim % c.n_heads != 0)
    return invalid_argument("model: dim {} is not a multiple of n_heads {}", c.dim, c.n_heads);
  if (c.head_dim() % 2 != 0) return invalid_argument("model: head size {} must be even for RoPE", c.head_dim());
  if (c.n_heads % c.n_kv_heads != 0) {
    return invalid_argument("model: n_heads {} is not a multiple of n_kv_heads {}", c.n_heads, c.n_kv_heads);
  }
  return Status::ok();
}

Result<ModelConfig> load_model_config(const std::string& path) {
  ModelConfig c;
  config::Schema schema;
  bind_options(schema, c);
  config::LoadInputs inputs;
  inputs.files = {path};
  CRUCIBLE_RETURN_IF_ERROR(config::load(schema, inputs));
  CRUCIBLE_RETURN_IF_ERROR(validate(c).with_context(path));
  return c;
}

}  // namespace crucible::model
