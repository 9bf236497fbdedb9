#include "crucible/common/model.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <numbers>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "crucible/common/sampler.h"
#include "crucible/common/sha256.h"

namespace crucible::model {
namespace {

std::uint64_t fnv1a64(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

at::Tensor normal_tensor(std::uint64_t seed, const std::string& name, std::vector<std::int64_t> shape, double std) {
  at::Tensor t = at::empty(shape, at::kFloat);
  std::vector<float> v = init_normal(seed, name, static_cast<std::size_t>(t.numel()), std);
  std::memcpy(t.data_ptr<float>(), v.data(), v.size() * sizeof(float));
  return t;
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps) {
  at::Tensor xf = x.to(at::kFloat);
  return (xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps)).to(x.scalar_type()) * w;
}

// [..., d] -> cat(-x2, x1): the Hugging Face (non-interleaved) rotary layout.
at::Tensor rotate_half(const at::Tensor& x) {
  auto halves = x.chunk(2, -1);
  return at::cat({-halves[1], halves[0]}, -1);
}

}  // namespace

std::vector<float> init_normal(std::uint64_t seed, std::string_view name, std::size_t n, double std) {
  SplitMix64 rng(seed ^ fnv1a64(name));
  std::vector<float> out(n);
  constexpr double kTwoPi = 2 * std::numbers::pi;
  for (std::size_t i = 0; i < n; i += 2) {
    // u1 in (0, 1], u2 in [0, 1): 53-bit uniforms.
    double u1 = (static_cast<double>(rng.next() >> 11) + 1.0) * 0x1.0p-53;
    double u2 = static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
    double r = std::sqrt(-2.0 * std::log(u1)) * std;
    out[i] = static_cast<float>(r * std::cos(kTwoPi * u2));
    if (i + 1 < n) out[i + 1] = static_cast<float>(r * std::sin(kTwoPi * u2));
  }
  return out;
}

Result<Llama> Llama::create(const ModelConfig& config, std::uint64_t seed) {
  CRUCIBLE_RETURN_IF_ERROR(validate(config));
  Llama m(config);
  const auto& c = config;
  const std::int64_t kv_dim = c.head_dim() * c.n_kv_heads;
  // Residual projections start smaller (GPT-2 / LLaMA practice): std / sqrt(2 * layers).
  const double out_std = c.init_std / std::sqrt(2.0 * static_cast<double>(c.n_layers));
  auto add = [&](std::string name, std::vector<std::int64_t> shape, double std) {
    at::Tensor t = std > 0 ? normal_tensor(seed, name, std::move(shape), std) : at::ones(shape, at::kFloat);
    m.params_.push_back({std::move(name), std::move(t)});
  };
  add("model.embed_tokens.weight", {c.vocab_size, c.dim}, c.init_std);
  for (std::int64_t i = 0; i < c.n_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    add(p + "input_layernorm.weight", {c.dim}, 0);
    add(p + "self_attn.q_proj.weight", {c.dim, c.dim}, c.init_std);
    add(p + "self_attn.k_proj.weight", {kv_dim, c.dim}, c.init_std);
    add(p + "self_attn.v_proj.weight", {kv_dim, c.dim}, c.init_std);
    add(p + "self_attn.o_proj.weight", {c.dim, c.dim}, out_std);
    add(p + "post_attention_layernorm.weight", {c.dim}, 0);
    add(p + "mlp.gate_proj.weight", {c.hidden_dim, c.dim}, c.init_std);
    add(p + "mlp.up_proj.weight", {c.hidden_dim, c.dim}, c.init_std);
    add(p + "mlp.down_proj.weight", {c.dim, c.hidden_dim}, out_std);
  }
  add("model.norm.weight", {c.dim}, 0);
  if (!c.tie_embeddings) add("lm_head.weight", {c.vocab_size, c.dim}, c.init_std);
  m.bind();
  return m;
}

void Llama::bind() {
  std::size_t i = 0;
  embed_ = params_[i++].tensor;
  layers_.clear();
  for (std::int64_t l = 0; l < config_.n_layers; ++l) {
    Layer layer;
    for (at::Tensor* t : {&layer.attn_norm, &layer.wq, &layer.wk, &layer.wv, &layer.wo, &layer.mlp_norm, &layer.w_gate,
                          &layer.w_up, &layer.w_down}) {
      *t = params_[i++].tensor;
    }
    layers_.push_back(std::move(layer));
  }
  final_norm_ = params_[i++].tensor;
  lm_head_ = config_.tie_embeddings ? embed_ : params_[i++].tensor;
}

std::vector<at::Tensor> Llama::tensors() const {
  std::vector<at::Tensor> out;
  out.reserve(params_.size());
  for (const auto& p : params_) out.push_back(p.tensor);
  return out;
}

std::int64_t Llama::num_parameters() const {
  std::int64_t n = 0;
  for (const auto& p : params_) n += p.tensor.numel();
  return n;
}

std::string Llama::parameters_sha256() const {
  static_assert(std::endian::native == std::endian::little, "float32 bytes are hashed as stored");
  Sha256 h;
  h.update(std::string("crucible-parameters-v1;"));
  for (const auto& p : params_) {
    const at::Tensor t = p.tensor.detach().to(at::kCPU, at::kFloat).contiguous();
    h.update(fmt::format("{}:{};", p.name, fmt::join(t.sizes(), "x")));
    h.update(t.data_ptr<float>(), static_cast<std::size_t>(t.numel()) * sizeof(float));
  }
  return h.finish_hex();
}

at::Tensor Llama::attention(const Layer& l, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) const {
  const auto& c = config_;
  const std::int64_t b = x.size(0), t = x.size(1), hd = c.head_dim();
  auto heads = [&](const at::Tensor& w, std::int64_t n) {
    return at::linear(x, w).view({b, t, n, hd}).transpose(1, 2);
  };
  at::Tensor q = heads(l.wq, c.n_heads);
  at::Tensor k = heads(l.wk, c.n_kv_heads);
  at::Tensor v = heads(l.wv, c.n_kv_heads);
  q = q * cos + rotate_half(q) * sin;
  k = k * cos + rotate_half(k) * sin;
  if (c.n_kv_heads != c.n_heads) {
    k = k.repeat_interleave(c.n_heads / c.n_kv_heads, 1);
    v = v.repeat_interleave(c.n_heads / c.n_kv_heads, 1);
  }
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(hd));
  at::Tensor mask = at::full({t, t}, -std::numeric_limits<float>::infinity(), x.options()).triu(1);
  at::Tensor probs = at::softmax(scores + mask, -1);
  at::Tensor out = at::matmul(probs, v).transpose(1, 2).reshape({b, t, c.dim});
  return at::linear(out, l.wo);
}

at::Tensor Llama::logits(const at::Tensor& tokens) const {
  const auto& c = config_;
  const std::int64_t t = tokens.size(1), hd = c.head_dim();
  auto opts = embed_.options();
  at::Tensor inv_freq =
      1.0 / at::pow(c.rope_theta, at::arange(0, hd, 2, opts.dtype(at::kDouble)) / static_cast<double>(hd));
  at::Tensor freqs = at::outer(at::arange(t, opts.dtype(at::kDouble)), inv_freq);
  at::Tensor emb = at::cat({freqs, freqs}, -1);
  at::Tensor cos = emb.cos().to(opts.dtype()), sin = emb.sin().to(opts.dtype());

  at::Tensor h = at::embedding(embed_, tokens);
  for (const Layer& l : layers_) {
    h = h + attention(l, rms_norm(h, l.attn_norm, c.norm_eps), cos, sin);
    at::Tensor x = rms_norm(h, l.mlp_norm, c.norm_eps);
    h = h + at::linear(at::silu(at::linear(x, l.w_gate)) * at::linear(x, l.w_up), l.w_down);
  }
  return at::linear(rms_norm(h, final_norm_, c.norm_eps), lm_head_);
}

at::Tensor Llama::loss(const at::Tensor& samples) const {
  const std::int64_t t = samples.size(1);
  at::Tensor inputs = samples.narrow(1, 0, t - 1);
  at::Tensor targets = samples.narrow(1, 1, t - 1);
  at::Tensor out = logits(inputs);
  return at::cross_entropy_loss(out.reshape({-1, config_.vocab_size}).to(at::kFloat), targets.reshape({-1}));
}

at::Tensor Llama::sample_losses(const at::Tensor& samples) const {
  const std::int64_t n = samples.size(0), t = samples.size(1);
  at::Tensor inputs = samples.narrow(1, 0, t - 1);
  at::Tensor targets = samples.narrow(1, 1, t - 1);
  at::Tensor out = logits(inputs);
  at::Tensor each = at::cross_entropy_loss(out.reshape({-1, config_.vocab_size}).to(at::kFloat), targets.reshape({-1}),
                                           {}, at::Reduction::None);
  return each.reshape({n, t - 1}).mean(1);
}

void Llama::to(const at::Device& device) {
  for (auto& p : params_) {
    bool grad = p.tensor.requires_grad();
    p.tensor = p.tensor.detach().to(device).set_requires_grad(grad);
  }
  bind();
}

void Llama::set_requires_grad(bool on) {
  for (auto& p : params_) p.tensor.set_requires_grad(on);
}

Status Llama::save(const std::filesystem::path& path, safetensors::Metadata metadata) const {
  std::vector<at::Tensor> host;
  std::vector<safetensors::TensorView> views;
  host.reserve(params_.size());
  for (const auto& p : params_) {
    host.push_back(p.tensor.detach().to(at::kCPU, at::kFloat).contiguous());
    const at::Tensor& h = host.back();
    views.push_back({p.name, safetensors::DType::kF32, h.sizes().vec(),
                     ByteSpan(static_cast<const std::uint8_t*>(h.data_ptr()), h.numel() * sizeof(float))});
  }
  metadata["format"] = "pt";
  metadata["crucible.model"] = config_.canonical();
  return safetensors::write_file(path, views, metadata);
}

Status Llama::load(const std::filesystem::path& path) {
  CRUCIBLE_ASSIGN_OR_RETURN(safetensors::File file, safetensors::read_file(path));
  return load(file).with_context(path.string());
}

Status Llama::load(const safetensors::File& file) {
  if (file.tensors.size() != params_.size()) {
    return failed_precondition("checkpoint holds {} tensors, the model has {}", file.tensors.size(), params_.size());
  }
  // Check everything before changing anything.
  std::vector<at::Tensor> loaded;
  for (const auto& p : params_) {
    const safetensors::TensorView* t = file.find(p.name);
    if (t == nullptr) return failed_precondition("checkpoint lacks tensor {}", p.name);
    if (t->dtype != safetensors::DType::kF32) return failed_precondition("checkpoint tensor {} is not F32", p.name);
    if (t->shape != p.tensor.sizes().vec()) {
      return failed_precondition("checkpoint tensor {} has shape [{}], the model [{}]", p.name,
                                 fmt::join(t->shape, ", "), fmt::join(p.tensor.sizes().vec(), ", "));
    }
    at::Tensor h = at::empty(t->shape, at::kFloat);
    std::memcpy(h.data_ptr<float>(), t->data.data(), t->data.size());
    if (!at::isfinite(h).all().item<bool>()) return data_loss("checkpoint tensor {} holds NaN or Inf", p.name);
    loaded.push_back(std::move(h));
  }
  at::NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) params_[i].tensor.copy_(loaded[i]);
  return Status::ok();
}

}  // namespace crucible::model
