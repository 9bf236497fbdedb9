// The only translation unit of the miner that includes the torch API.
#include "crucible/miner/inner_loop.h"

// clip_grad.h needs torch/types.h first.
// clang-format off
#include <torch/types.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/serialize.h>
// clang-format on

#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>

#include "crucible/common/model.h"
#include "crucible/miner/lr_schedule.h"

namespace crucible::miner {

namespace fs = std::filesystem;

struct InnerLoop::Impl {
  model::Replica* replica = nullptr;
  RankGroup* ranks = nullptr;  // null: one rank
  MinerOptions options;
  LrSchedule schedule{options};
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::uint64_t steps = 0;

  model::Llama& llama() { return replica->llama(); }
  at::Device device() { return replica->on_cuda() ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU); }

  // The gradients and the loss <- their means over the ranks (through one
  // host buffer: Gloo reduces on the CPU).
  Status average_over_ranks(double& loss) {
    std::vector<at::Tensor> grads;
    std::int64_t total = 1;  // the loss rides along
    for (auto& p : llama().tensors()) {
      if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
      grads.push_back(p.grad());
      total += p.numel();
    }
    std::vector<float> flat(static_cast<std::size_t>(total));
    std::int64_t offset = 0;
    for (const auto& g : grads) {
      at::Tensor host = g.detach().to(at::kCPU, at::kFloat).contiguous().view({-1});
      std::copy_n(host.data_ptr<float>(), host.numel(), flat.begin() + offset);
      offset += host.numel();
    }
    flat.back() = static_cast<float>(loss);
    CRUCIBLE_RETURN_IF_ERROR(ranks->all_reduce_mean(flat));
    offset = 0;
    for (auto& g : grads) {
      at::Tensor mean = at::from_blob(flat.data() + offset, g.sizes(), at::kFloat);
      g.detach().copy_(mean);
      offset += g.numel();
    }
    loss = flat.back();
    return Status::ok();
  }

  bool ranked() const { return ranks != nullptr && ranks->world_size() > 1; }

  // Every rank's parameters <- rank 0's (through one host buffer).
  Status take_rank0_parameters() {
    std::vector<at::Tensor> params = llama().tensors();
    std::int64_t total = 0;
    for (const auto& p : params) total += p.numel();
    std::vector<float> flat(static_cast<std::size_t>(total));
    std::int64_t offset = 0;
    if (ranks->rank() == 0) {
      for (const auto& p : params) {
        at::Tensor host = p.detach().to(at::kCPU, at::kFloat).contiguous().view({-1});
        std::copy_n(host.data_ptr<float>(), host.numel(), flat.begin() + offset);
        offset += host.numel();
      }
    }
    CRUCIBLE_RETURN_IF_ERROR(
        ranks->broadcast(std::span(reinterpret_cast<std::uint8_t*>(flat.data()), flat.size() * sizeof(float))));
    if (ranks->rank() == 0) return Status::ok();
    at::NoGradGuard g;
    offset = 0;
    for (auto& p : params) {
      p.detach().copy_(at::from_blob(flat.data() + offset, p.sizes(), at::kFloat));
      offset += p.numel();
    }
    return Status::ok();
  }

  // One AdamW step on `batch` (with ranks: this rank's rows of it); the loss before the step.
  Result<double> step(const at::Tensor& batch, std::uint32_t index) {
    for (auto& group : optimizer->param_groups()) {
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(schedule.at(steps));
    }
    optimizer->zero_grad();
    at::Tensor rows = batch;
    if (ranked()) {
      const std::int64_t share = batch.size(0) / ranks->world_size();
      if (share * ranks->world_size() != batch.size(0)) {
        return invalid_argument("a micro-batch of {} samples does not split over {} ranks", batch.size(0),
                                ranks->world_size());
      }
      rows = batch.narrow(0, share * ranks->rank(), share);
    }
    at::Tensor loss;
    {
      model::AutocastScope cast(replica->on_cuda(), replica->autocast());
      loss = llama().loss(rows);
    }
    double value = loss.item<double>();
    if (!std::isfinite(value)) return internal_error("training loss became {} at step {}", value, index);
    loss.backward();
    if (ranked()) CRUCIBLE_RETURN_IF_ERROR(average_over_ranks(value));
    if (options.grad_clip > 0) torch::nn::utils::clip_grad_norm_(llama().tensors(), options.grad_clip);
    optimizer->step();
    ++steps;
    return value;
  }
};

InnerLoop::InnerLoop() : impl_(std::make_unique<Impl>()) {}
InnerLoop::~InnerLoop() = default;

Result<std::unique_ptr<InnerLoop>> InnerLoop::create(model::Replica& replica, const MinerOptions& options,
                                                     RankGroup* ranks) {
  if (ranks != nullptr && options.micro_batch % ranks->world_size() != 0) {
    return invalid_argument("miner.micro_batch {} is not a multiple of the {} ranks", options.micro_batch,
                            ranks->world_size());
  }
  std::unique_ptr<InnerLoop> loop(new InnerLoop());
  auto& m = *loop->impl_;
  m.replica = &replica;
  m.ranks = ranks;
  m.options = options;
  m.schedule = LrSchedule(options);
  replica.llama().set_requires_grad(true);
  m.optimizer = std::make_unique<torch::optim::AdamW>(replica.llama().tensors(),
                                                      torch::optim::AdamWOptions(options.lr)
                                                          .betas({options.adam_beta1, options.adam_beta2})
                                                          .eps(options.adam_eps)
                                                          .weight_decay(options.weight_decay));
  return loop;
}

std::uint64_t InnerLoop::steps_done() const { return impl_->steps; }

Status InnerLoop::share_state() {
  auto& m = *impl_;
  if (!m.ranked()) return Status::ok();
  Bytes state;
  if (m.ranks->rank() == 0) {
    std::ostringstream out;
    try {
      torch::serialize::OutputArchive archive;
      m.optimizer->save(archive);
      archive.save_to(out);
    } catch (const std::exception& e) {
      return internal_error("serializing the optimizer state for the ranks: {}", e.what());
    }
    const std::string text = out.str();
    state.assign(text.begin(), text.end());
    const std::uint64_t steps = m.steps;
    state.insert(state.end(), reinterpret_cast<const std::uint8_t*>(&steps),
                 reinterpret_cast<const std::uint8_t*>(&steps) + sizeof steps);
  }
  // AdamW's two moments and the parameters' count, with room for the archive's framing.
  std::uint64_t params = 0;
  for (const auto& t : m.llama().tensors()) params += static_cast<std::uint64_t>(t.numel());
  CRUCIBLE_RETURN_IF_ERROR(m.ranks->broadcast_bytes(state, 16 * params + (1 << 20)));
  if (m.ranks->rank() == 0) return Status::ok();
  if (state.size() < sizeof(std::uint64_t)) return data_loss("rank 0 sent no optimizer state");
  std::uint64_t steps = 0;
  std::memcpy(&steps, state.data() + state.size() - sizeof steps, sizeof steps);
  state.resize(state.size() - sizeof steps);
  try {
    std::istringstream in(std::string(state.begin(), state.end()));
    torch::serialize::InputArchive archive;
    archive.load_from(in);
    m.optimizer->load(archive);
  } catch (const std::exception& e) {
    return data_loss("rank 0's optimizer state is unreadable here: {}", e.what());
  }
  m.steps = steps;
  return Status::ok();
}

Result<WindowResult> InnerLoop::train_window(std::span<const std::int64_t> samples, std::int64_t n,
                                             const std::function<void(const StepInfo&)>& on_step,
                                             const std::atomic<bool>* stop) {
  auto& m = *impl_;
  const std::int64_t L = m.llama().config().seq_len;
  if (n <= 0 || static_cast<std::int64_t>(samples.size()) != n * L) {
    return invalid_argument("train_window: {} tokens for {} samples of {}", samples.size(), n, L);
  }
  if (m.ranked()) CRUCIBLE_RETURN_IF_ERROR(m.take_rank0_parameters());
  at::Tensor all = at::from_blob(const_cast<std::int64_t*>(samples.data()), {n, L}, at::kLong).to(m.device());
  const auto start_time = std::chrono::steady_clock::now();
  std::vector<at::Tensor> start;
  {
    at::NoGradGuard g;
    for (const auto& p : m.llama().parameters()) start.push_back(p.tensor.detach().clone());
  }
  const std::int64_t mb = std::min<std::int64_t>(m.options.micro_batch, n);
  const std::uint32_t H = m.options.inner_steps;
  WindowResult r;
  double loss_sum = 0;
  for (std::uint32_t s = 0; s < H; ++s) {
    if (stop != nullptr && stop->load()) return aborted("training stopped at step {} of {}", s, H);
    at::Tensor idx =
        at::remainder(at::arange(static_cast<std::int64_t>(s) * mb, (s + 1) * mb, at::kLong), n).to(m.device());
    CRUCIBLE_ASSIGN_OR_RETURN(double loss, m.step(all.index_select(0, idx), s));
    loss_sum += loss;
    r.tokens += static_cast<std::uint64_t>(mb * L);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
    if (on_step) on_step({s + 1, H, loss, static_cast<double>(r.tokens) / std::max(secs, 1e-9)});
  }
  at::NoGradGuard g;
  for (std::size_t i = 0; i < start.size(); ++i) {
    at::Tensor& p = const_cast<at::Tensor&>(m.llama().parameters()[i].tensor);
    at::Tensor d = (start[i] - p.detach()).to(at::kCPU, at::kFloat).contiguous();
    r.delta.emplace_back(d.data_ptr<float>(), d.data_ptr<float>() + d.numel());
    p.copy_(start[i]);  // the local model stays the global one until the outer step
  }
  r.mean_loss = loss_sum / std::max<std::uint32_t>(H, 1);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
  return r;
}

Status InnerLoop::save(const fs::path& dir) const {
  CRUCIBLE_RETURN_IF_ERROR(impl_->replica->save(dir / "model.safetensors"));
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

Status InnerLoop::load(const fs::path& dir, std::uint64_t steps_done) {
  CRUCIBLE_RETURN_IF_ERROR(impl_->replica->load(dir / "model.safetensors"));
  try {
    torch::serialize::InputArchive archive;
    archive.load_from((dir / "optimizer.pt").string());
    impl_->optimizer->load(archive);
  } catch (const std::exception& e) {
    return data_loss("optimizer state {} is unreadable: {}", (dir / "optimizer.pt").string(), e.what());
  }
  impl_->steps = steps_done;
  return Status::ok();
}

}  // namespace crucible::miner
