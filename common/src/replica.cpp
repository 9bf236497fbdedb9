#include "crucible/common/replica.h"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "crucible/common/model.h"

namespace crucible::model {

// libtorch 2.4 made autocast's switches per device type and deprecated
// the older per-device functions (warnings, which -Werror turns into errors).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define CRUCIBLE_AUTOCAST_BY_DEVICE_TYPE 1
#endif

AutocastScope::AutocastScope(bool cuda, bool on) : cuda_(cuda), on_(on) {
  if (!on_) return;
#ifdef CRUCIBLE_AUTOCAST_BY_DEVICE_TYPE
  const at::DeviceType type = cuda_ ? at::kCUDA : at::kCPU;
  was_enabled_ = at::autocast::is_autocast_enabled(type);
  was_dtype_ = static_cast<int>(at::autocast::get_autocast_dtype(type));
  at::autocast::set_autocast_dtype(type, at::kBFloat16);
  at::autocast::set_autocast_enabled(type, true);
#else
  was_enabled_ = cuda_ ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
  was_dtype_ =
      static_cast<int>(cuda_ ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype());
  if (cuda_) {
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
  } else {
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
  }
#endif
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!on_) return;
  // The last scope out drops the casts it cached (of parameters that change).
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  const auto dtype = static_cast<at::ScalarType>(was_dtype_);
#ifdef CRUCIBLE_AUTOCAST_BY_DEVICE_TYPE
  const at::DeviceType type = cuda_ ? at::kCUDA : at::kCPU;
  at::autocast::set_autocast_enabled(type, was_enabled_);
  at::autocast::set_autocast_dtype(type, dtype);
#else
  if (cuda_) {
    at::autocast::set_enabled(was_enabled_);
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_cpu_enabled(was_enabled_);
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
#endif
}

struct Replica::Impl {
  std::unique_ptr<Llama> model;
  std::vector<TensorSpec> specs;
  at::Device device{at::kCPU};
  bool autocast = false;

  at::Tensor& param(std::size_t i) { return const_cast<at::Tensor&>(model->parameters()[i].tensor); }

  Status check_update(const TensorValues& update) const {
    if (update.size() != specs.size()) {
      return invalid_argument("update has {} tensors, the model {}", update.size(), specs.size());
    }
    for (std::size_t i = 0; i < update.size(); ++i) {
      if (static_cast<std::int64_t>(update[i].size()) != specs[i].numel()) {
        return invalid_argument("update tensor {} has {} values, the model {}", specs[i].name, update[i].size(),
                                specs[i].numel());
      }
      for (float v : update[i])
        if (!std::isfinite(v)) return invalid_argument("update tensor {} holds NaN or Inf", specs[i].name);
    }
    return Status::ok();
  }

  // n samples of seq_len tokens, or invalid_argument naming `what`.
  Status check_samples(std::span<const std::int64_t> samples, std::int64_t n, const char* what) const {
    const std::int64_t L = model->config().seq_len;
    if (n <= 0 || static_cast<std::int64_t>(samples.size()) != n * L) {
      return invalid_argument("{}: {} tokens for {} samples of {}", what, samples.size(), n, L);
    }
    return Status::ok();
  }

  at::Tensor samples_tensor(std::span<const std::int64_t> samples, std::int64_t n) const {
    const std::int64_t L = model->config().seq_len;
    return at::from_blob(const_cast<std::int64_t*>(samples.data()), {n, L}, at::kLong).to(device);
  }
};

Replica::Replica() : impl_(std::make_unique<Impl>()) {}
Replica::~Replica() = default;

Result<std::unique_ptr<Replica>> Replica::create(const ModelConfig& config, const ReplicaOptions& options,
                                                 std::uint64_t init_seed) {
  std::unique_ptr<Replica> r(new Replica());
  auto& m = *r->impl_;
  const int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  if (options.device == "cuda") {
    if (!at::hasCUDA()) {
      return failed_precondition("device = \"cuda\" but this build of libtorch has no CUDA or no GPU is visible");
    }
    m.device = at::Device(at::kCUDA, 0);
  } else if (options.device != "cpu") {
    return invalid_argument("device must be \"cpu\" or \"cuda\", not \"{}\"", options.device);
  }
  if (options.autocast == "auto") {
    m.autocast = m.device.is_cuda();
  } else if (options.autocast == "bf16" || options.autocast == "off") {
    m.autocast = options.autocast == "bf16";
  } else {
    return invalid_argument("autocast must be \"auto\", \"bf16\" or \"off\", not \"{}\"", options.autocast);
  }
  CRUCIBLE_ASSIGN_OR_RETURN(Llama llama, Llama::create(config, init_seed));
  m.model = std::make_unique<Llama>(std::move(llama));
  m.model->to(m.device);
  for (const auto& p : m.model->parameters()) m.specs.push_back({p.name, p.tensor.sizes().vec()});
  return r;
}

const ModelConfig& Replica::config() const { return impl_->model->config(); }
const std::vector<TensorSpec>& Replica::specs() const { return impl_->specs; }
std::int64_t Replica::num_parameters() const { return impl_->model->num_parameters(); }
std::string Replica::parameters_sha256() const { return impl_->model->parameters_sha256(); }
Llama& Replica::llama() { return *impl_->model; }
bool Replica::on_cuda() const { return impl_->device.is_cuda(); }
bool Replica::autocast() const { return impl_->autocast; }

TensorValues Replica::values_at(const std::vector<std::vector<std::int64_t>>& positions) const {
  TensorValues out;
  out.reserve(positions.size());
  at::NoGradGuard g;
  for (std::size_t t = 0; t < positions.size() && t < impl_->specs.size(); ++t) {
    const auto& pos = positions[t];
    at::Tensor idx =
        at::from_blob(const_cast<std::int64_t*>(pos.data()), {static_cast<std::int64_t>(pos.size())}, at::kLong)
            .to(impl_->device);
    at::Tensor v = impl_->model->parameters()[t].tensor.detach().reshape({-1}).index_select(0, idx);
    v = v.to(at::kCPU, at::kFloat).contiguous();
    out.emplace_back(v.data_ptr<float>(), v.data_ptr<float>() + v.numel());
  }
  return out;
}

Status Replica::apply_update(const TensorValues& update, double scale) {
  auto& m = *impl_;
  CRUCIBLE_RETURN_IF_ERROR(m.check_update(update));
  at::NoGradGuard g;
  for (std::size_t i = 0; i < update.size(); ++i) {
    at::Tensor& p = m.param(i);
    at::Tensor a = at::from_blob(const_cast<float*>(update[i].data()), p.sizes(), at::kFloat).to(m.device);
    p.sub_(a, scale);
  }
  return Status::ok();
}

Result<double> Replica::loss(std::span<const std::int64_t> samples, std::int64_t n) {
  auto& m = *impl_;
  CRUCIBLE_RETURN_IF_ERROR(m.check_samples(samples, n, "loss"));
  at::NoGradGuard g;
  AutocastScope cast(m.device.is_cuda(), m.autocast);
  return m.model->loss(m.samples_tensor(samples, n)).item<double>();
}

Result<TensorValues> Replica::gradient(std::span<const std::int64_t> samples, std::int64_t n) {
  auto& m = *impl_;
  CRUCIBLE_RETURN_IF_ERROR(m.check_samples(samples, n, "gradient"));
  std::vector<bool> had;
  for (std::size_t i = 0; i < m.specs.size(); ++i) {
    had.push_back(m.param(i).requires_grad());
    m.param(i).mutable_grad().reset();
    m.param(i).set_requires_grad(true);
  }
  TensorValues out;
  {
    at::Tensor loss;
    {
      AutocastScope cast(m.device.is_cuda(), m.autocast);
      loss = m.model->loss(m.samples_tensor(samples, n));
    }
    loss.backward();
    for (std::size_t i = 0; i < m.specs.size(); ++i) {
      at::Tensor g = m.param(i).grad();
      if (!g.defined()) g = at::zeros_like(m.param(i));
      g = g.detach().to(at::kCPU, at::kFloat).contiguous().reshape({-1});
      out.emplace_back(g.data_ptr<float>(), g.data_ptr<float>() + g.numel());
    }
  }
  for (std::size_t i = 0; i < m.specs.size(); ++i) {
    m.param(i).mutable_grad().reset();
    m.param(i).set_requires_grad(had[i]);
  }
  return out;
}

Result<std::vector<double>> Replica::sample_losses(std::span<const std::int64_t> samples, std::int64_t n) {
  auto& m = *impl_;
  CRUCIBLE_RETURN_IF_ERROR(m.check_samples(samples, n, "loss"));
  at::NoGradGuard g;
  AutocastScope cast(m.device.is_cuda(), m.autocast);
  at::Tensor each = m.model->sample_losses(m.samples_tensor(samples, n)).to(at::kCPU, at::kDouble).contiguous();
  return std::vector<double>(each.data_ptr<double>(), each.data_ptr<double>() + each.numel());
}

Result<std::pair<std::vector<double>, std::vector<double>>> Replica::probe_samples(
    const TensorValues& update, double scale, std::span<const std::int64_t> a, std::int64_t n_a,
    std::span<const std::int64_t> b, std::int64_t n_b) {
  auto& m = *impl_;
  CRUCIBLE_RETURN_IF_ERROR(m.check_update(update));
  std::vector<at::Tensor> saved;
  {
    at::NoGradGuard g;
    for (const auto& p : m.model->parameters()) saved.push_back(p.tensor.detach().clone());
  }
  using Losses = Result<std::vector<double>>;
  Status st = apply_update(update, scale);
  Losses la = st.is_ok() ? sample_losses(a, n_a) : Losses(st);
  Losses lb = la.is_ok() ? sample_losses(b, n_b) : Losses(la.status());
  {
    at::NoGradGuard g;
    for (std::size_t i = 0; i < saved.size(); ++i) m.param(i).copy_(saved[i]);
  }
  if (!la.is_ok()) return la.status();
  if (!lb.is_ok()) return lb.status();
  return std::make_pair(std::move(*la), std::move(*lb));
}

Result<std::pair<double, double>> Replica::probe(const TensorValues& update, double scale,
                                                 std::span<const std::int64_t> a, std::int64_t n_a,
                                                 std::span<const std::int64_t> b, std::int64_t n_b) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto each, probe_samples(update, scale, a, n_a, b, n_b));
  return std::make_pair(mean_loss(each.first), mean_loss(each.second));
}

double mean_loss(std::span<const double> losses) {
  double s = 0;
  for (double x : losses) s += x;
  return losses.empty() ? 0.0 : s / static_cast<double>(losses.size());
}

Status Replica::save(const std::filesystem::path& file, const std::map<std::string, std::string>& metadata) const {
  return impl_->model->save(file, metadata);
}

Status Replica::load(const std::filesystem::path& file) { return impl_->model->load(file); }
Status Replica::load(const safetensors::File& file) { return impl_->model->load(file); }

Result<double> dataset_loss(Replica& replica, const data::Dataset& data, std::uint64_t samples, std::uint64_t batch) {
  const auto L = static_cast<std::uint64_t>(replica.config().seq_len);
  const std::uint64_t n = std::min<std::uint64_t>(samples, data.num_samples(L));
  if (n == 0) return invalid_argument("no samples of {} tokens to measure", L);
  batch = std::max<std::uint64_t>(batch, 1);
  double sum = 0;
  for (std::uint64_t first = 0; first < n; first += batch) {
    std::vector<std::uint64_t> idx;
    for (std::uint64_t i = first; i < std::min(n, first + batch); ++i) idx.push_back(i);
    CRUCIBLE_ASSIGN_OR_RETURN(auto tokens, data.tokens(idx, L));
    CRUCIBLE_ASSIGN_OR_RETURN(double loss, replica.loss(tokens, static_cast<std::int64_t>(idx.size())));
    sum += loss * static_cast<double>(idx.size());
  }
  return sum / static_cast<double>(n);
}

}  // namespace crucible::model
