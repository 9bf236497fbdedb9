// The only translation unit of the miner that includes the torch API.
#include "crucible/miner/trainer.h"

#include <ATen/Parallel.h>
#include <torch/types.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/serialize.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <numbers>
#include <thread>

#include "crucible/common/model.h"

namespace crucible::miner {

namespace fs = std::filesystem;

struct Trainer::Impl {
  MinerOptions options;
  std::unique_ptr<model::Llama> model;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::vector<TensorSpec> specs;
  at::Device device{at::kCPU};
  std::uint64_t inner_steps = 0;

  double lr_at(std::uint64_t step) const {
    const double peak = options.lr;
    if (step < options.warmup_steps) return peak * static_cast<double>(step + 1) / options.warmup_steps;
    double t = std::min(1.0, static_cast<double>(step - options.warmup_steps) / static_cast<double>(options.decay_steps));
    double floor = peak * options.min_lr_ratio;
    return floor + (peak - floor) * 0.5 * (1 + std::cos(std::numbers::pi * t));
  }
};

Trainer::Trainer() : impl_(std::make_unique<Impl>()) {}
Trainer::~Trainer() = default;

Result<std::unique_ptr<Trainer>> Trainer::create(const model::ModelConfig& config, const MinerOptions& options,
                                                 std::uint64_t init_seed) {
  std::unique_ptr<Trainer> t(new Trainer());
  auto& m = *t->impl_;
  m.options = options;
  int threads = options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  if (options.device == "cuda") {
    if (!at::hasCUDA()) {
      return failed_precondition("miner.device = \"cuda\" but this build of libtorch has no CUDA or no GPU is visible");
    }
    m.device = at::Device(at::kCUDA, 0);
  }
  CRUCIBLE_ASSIGN_OR_RETURN(model::Llama llama, model::Llama::create(config, init_seed));
  m.model = std::make_unique<model::Llama>(std::move(llama));
  m.model->to(m.device);
  m.model->set_requires_grad(true);
  for (const auto& p : m.model->parameters()) m.specs.push_back({p.name, p.tensor.sizes().vec()});
  m.optimizer = std::make_unique<torch::optim::AdamW>(
      m.model->tensors(), torch::optim::AdamWOptions(options.lr).betas({0.9, 0.95}).eps(1e-8).weight_decay(
                              options.weight_decay));
  return t;
}

const std::vector<TensorSpec>& Trainer::specs() const { return impl_->specs; }
std::int64_t Trainer::num_parameters() const { return impl_->model->num_parameters(); }
std::uint64_t Trainer::inner_steps_done() const { return impl_->inner_steps; }

float Trainer::value(std::size_t tensor, std::int64_t flat) const {
  return impl_->model->parameters().at(tensor).tensor.detach().view({-1})[flat].item<float>();
}

Result<WindowResult> Trainer::train_window(std::span<const std::int64_t> samples, std::int64_t n,
                                           const std::function<void(const StepInfo&)>& on_step,
                                           const std::atomic<bool>* stop) {
  auto& m = *impl_;
  const std::int64_t L = m.model->config().seq_len;
  if (n <= 0 || static_cast<std::int64_t>(samples.size()) != n * L) {
    return invalid_argument("train_window: {} tokens for {} samples of {}", samples.size(), n, L);
  }
  at::Tensor all = at::from_blob(const_cast<std::int64_t*>(samples.data()), {n, L}, at::kLong).to(m.device);
  const auto start_time = std::chrono::steady_clock::now();
  std::vector<at::Tensor> start;
  {
    at::NoGradGuard g;
    for (const auto& p : m.model->parameters()) start.push_back(p.tensor.detach().clone());
  }
  const std::int64_t mb = std::min<std::int64_t>(m.options.micro_batch, n);
  WindowResult r;
  double loss_sum = 0;
  for (std::uint32_t step = 0; step < m.options.inner_steps; ++step) {
    if (stop != nullptr && stop->load()) return aborted("training stopped at step {} of {}", step, m.options.inner_steps);
    at::Tensor idx = at::remainder(at::arange(static_cast<std::int64_t>(step) * mb, (step + 1) * mb, at::kLong), n)
                         .to(m.device);
    at::Tensor batch = all.index_select(0, idx);
    for (auto& group : m.optimizer->param_groups()) {
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(m.lr_at(m.inner_steps));
    }
    m.optimizer->zero_grad();
    at::Tensor loss = m.model->loss(batch);
    double loss_value = loss.item<double>();
    if (!std::isfinite(loss_value)) return internal_error("training loss became {} at step {}", loss_value, step);
    loss.backward();
    if (m.options.grad_clip > 0) torch::nn::utils::clip_grad_norm_(m.model->tensors(), m.options.grad_clip);
    m.optimizer->step();
    ++m.inner_steps;
    loss_sum += loss_value;
    r.tokens += static_cast<std::uint64_t>(mb * L);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
    if (on_step) on_step({step + 1, m.options.inner_steps, loss_value, static_cast<double>(r.tokens) / std::max(secs, 1e-9)});
  }
  at::NoGradGuard g;
  for (std::size_t i = 0; i < start.size(); ++i) {
    at::Tensor& p = const_cast<at::Tensor&>(m.model->parameters()[i].tensor);
    at::Tensor d = (start[i] - p.detach()).to(at::kCPU, at::kFloat).contiguous();
    r.delta.emplace_back(d.data_ptr<float>(), d.data_ptr<float>() + d.numel());
    p.copy_(start[i]);  // the local model stays the global one until the outer step
  }
  r.mean_loss = loss_sum / std::max<std::uint32_t>(m.options.inner_steps, 1);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
  return r;
}

Status Trainer::apply_aggregate(const std::vector<std::vector<float>>& aggregate, double alpha) {
  auto& m = *impl_;
  if (aggregate.size() != m.specs.size()) return invalid_argument("aggregate has {} tensors, the model {}", aggregate.size(), m.specs.size());
  for (std::size_t i = 0; i < aggregate.size(); ++i) {
    if (static_cast<std::int64_t>(aggregate[i].size()) != m.specs[i].numel()) {
      return invalid_argument("aggregate tensor {} has {} values, the model {}", m.specs[i].name, aggregate[i].size(),
                              m.specs[i].numel());
    }
    for (float v : aggregate[i])
      if (!std::isfinite(v)) return invalid_argument("aggregate tensor {} holds NaN or Inf", m.specs[i].name);
  }
  at::NoGradGuard g;
  for (std::size_t i = 0; i < aggregate.size(); ++i) {
    at::Tensor& p = const_cast<at::Tensor&>(m.model->parameters()[i].tensor);
    at::Tensor a = at::from_blob(const_cast<float*>(aggregate[i].data()), p.sizes(), at::kFloat).to(m.device);
    p.sub_(a, alpha);
  }
  return Status::ok();
}

Result<double> Trainer::evaluate(std::span<const std::int64_t> samples, std::int64_t n) {
  auto& m = *impl_;
  const std::int64_t L = m.model->config().seq_len;
  if (n <= 0 || static_cast<std::int64_t>(samples.size()) != n * L) return invalid_argument("evaluate: bad sample count");
  at::NoGradGuard g;
  at::Tensor all = at::from_blob(const_cast<std::int64_t*>(samples.data()), {n, L}, at::kLong).to(m.device);
  return m.model->loss(all).item<double>();
}

Result<std::pair<double, double>> Trainer::evaluate_update(const std::vector<std::vector<float>>& update, double scale,
                                                           std::span<const std::int64_t> a, std::int64_t n_a,
                                                           std::span<const std::int64_t> b, std::int64_t n_b) {
  auto& m = *impl_;
  std::vector<at::Tensor> saved;
  {
    at::NoGradGuard g;
    for (const auto& p : m.model->parameters()) saved.push_back(p.tensor.detach().clone());
  }
  Status st = apply_aggregate(update, scale);
  Result<double> la = st.is_ok() ? evaluate(a, n_a) : Result<double>(st);
  Result<double> lb = st.is_ok() && la.is_ok() ? evaluate(b, n_b) : Result<double>(la.status());
  {
    at::NoGradGuard g;
    for (std::size_t i = 0; i < saved.size(); ++i) const_cast<at::Tensor&>(m.model->parameters()[i].tensor).copy_(saved[i]);
  }
  if (!la.is_ok()) return la.status();
  if (!lb.is_ok()) return lb.status();
  return std::make_pair(*la, *lb);
}

Status Trainer::save_model(const fs::path& file, const std::map<std::string, std::string>& metadata) const {
  return impl_->model->save(file, metadata);
}

Status Trainer::save(const fs::path& dir, std::uint64_t inner_steps) const {
  (void)inner_steps;
  CRUCIBLE_RETURN_IF_ERROR(impl_->model->save(dir / "model.safetensors"));
  const fs::path tmp = dir / ".optimizer.pt.tmp";
  try {
    torch::serialize::OutputArchive archive;
    impl_->optimizer->save(archive);
    archive.save_to(tmp.string());
  } catch (const std::exception& e) {
    return unavailable("saving optimizer state to {}: {}", tmp.string(), e.what());
  }
  std::error_code ec;
  fs::rename(tmp, dir / "optimizer.pt", ec);
  if (ec) return unavailable("saving optimizer state: {}", ec.message());
  return Status::ok();
}

Status Trainer::load(const fs::path& dir, std::uint64_t inner_steps) {
  CRUCIBLE_RETURN_IF_ERROR(load_model(dir / "model.safetensors"));
  try {
    torch::serialize::InputArchive archive;
    archive.load_from((dir / "optimizer.pt").string());
    impl_->optimizer->load(archive);
  } catch (const std::exception& e) {
    return data_loss("optimizer state {} is unreadable: {}", (dir / "optimizer.pt").string(), e.what());
  }
  impl_->inner_steps = inner_steps;
  return Status::ok();
}

Status Trainer::load_model(const fs::path& file) { return impl_->model->load(file); }

}  // namespace crucible::miner
