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
#include <optional>
#include <sstream>
#include <type_traits>

#include "crucible/common/model.h"
#include "crucible/miner/lr_schedule.h"

namespace crucible::miner {

namespace fs = std::filesystem;

namespace {

// The tensors end to end in `flat` (host floats), with `extra` slots after them.
void to_host(const std::vector<at::Tensor>& tensors, std::vector<float>& flat, std::size_t extra = 0) {
  std::int64_t total = 0;
  for (const auto& t : tensors) total += t.numel();
  flat.resize(static_cast<std::size_t>(total) + extra);
  std::int64_t offset = 0;
  for (const auto& t : tensors) {
    at::Tensor host = t.detach().to(at::kCPU, at::kFloat).contiguous().view({-1});
    std::copy_n(host.data_ptr<float>(), host.numel(), flat.begin() + offset);
    offset += host.numel();
  }
}

// Each tensor <- its part of `flat`, in order.
void from_host(std::span<const float> flat, const std::vector<at::Tensor>& tensors) {
  std::int64_t offset = 0;
  for (const auto& t : tensors) {
    t.detach().copy_(at::from_blob(const_cast<float*>(flat.data()) + offset, t.sizes(), at::kFloat));
    offset += t.numel();
  }
}

// AdamW's per-parameter state is keyed by a string in libtorch 1.13 and by
// the TensorImpl's address in 2.x.
using StateMap = std::remove_reference_t<decltype(std::declval<torch::optim::AdamW&>().state())>;
template <class Key = StateMap::key_type>
Key state_key(const at::Tensor& p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    return c10::guts::to_string(p.unsafeGetTensorImpl());
  } else {
    return p.unsafeGetTensorImpl();
  }
}

torch::optim::AdamWParamState* adamw_state(torch::optim::AdamW& optimizer, const at::Tensor& p) {
  auto it = optimizer.state().find(state_key(p));
  return it == optimizer.state().end() ? nullptr : static_cast<torch::optim::AdamWParamState*>(it->second.get());
}

}  // namespace

struct InnerLoop::Impl {
  model::Replica* replica = nullptr;
  RankGroup* ranks = nullptr;  // null: one rank
  MinerOptions options;
  LrSchedule schedule{options};
  // The whole model's AdamW. With a sharded optimizer it is not stepped:
  // rank 0 keeps the gathered state in it (on the host) to save, and every
  // rank reads its slice out of it once, in share_state.
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::uint64_t steps = 0;
  std::vector<float> host;  // the collectives' host buffer, kept between steps

  // ZeRO-1 (miner.shard_optimizer): this rank's slice [begin, begin + length)
  // of the parameters laid end to end (every rank's slice is `chunk` long,
  // the last one padded), as views of the parameters' own storage, one per
  // tensor it touches, and the AdamW that steps them: the only memory
  // sharding adds is its 1/world of AdamW's state.
  struct Piece {
    std::size_t tensor = 0;
    std::int64_t first = 0, count = 0;
    at::Tensor values;
  };
  struct Shard {
    std::int64_t begin = 0, length = 0, chunk = 0;
    std::vector<Piece> pieces;
    std::unique_ptr<torch::optim::AdamW> optimizer;
  };
  std::optional<Shard> shard;

  model::Llama& llama() { return replica->llama(); }
  at::Device device() { return replica->on_cuda() ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU); }
  bool ranked() const { return ranks != nullptr && ranks->world_size() > 1; }
  std::int64_t parameter_count() {
    std::int64_t total = 0;
    for (const auto& t : llama().tensors()) total += t.numel();
    return total;
  }
  torch::optim::AdamW& stepped() { return shard ? *shard->optimizer : *optimizer; }

  torch::optim::AdamWOptions adamw_options() const {
    return torch::optim::AdamWOptions(options.lr)
        .betas({options.adam_beta1, options.adam_beta2})
        .eps(options.adam_eps)
        .weight_decay(options.weight_decay);
  }

  void make_shard() {
    const std::vector<at::Tensor> params = llama().tensors();
    const std::int64_t total = parameter_count();
    const std::int64_t world = ranks->world_size();
    Shard s;
    s.chunk = (total + world - 1) / world;
    s.begin = std::min(total, s.chunk * ranks->rank());
    s.length = std::min(total, s.begin + s.chunk) - s.begin;
    std::vector<at::Tensor> views;
    for (std::size_t i = 0, offset = 0; i < params.size(); offset += params[i].numel(), ++i) {
      const std::int64_t lo = std::max<std::int64_t>(s.begin, offset);
      const std::int64_t hi = std::min<std::int64_t>(s.begin + s.length, offset + params[i].numel());
      if (lo >= hi) continue;
      at::Tensor view = params[i].detach().view({-1}).narrow(0, lo - offset, hi - lo);
      s.pieces.push_back({i, lo - static_cast<std::int64_t>(offset), hi - lo, view});
      views.push_back(view);
    }
    s.optimizer = std::make_unique<torch::optim::AdamW>(views, adamw_options());
    shard = std::move(s);
  }

  // The gradients (and the loss) <- their means over the ranks.
  Status average_over_ranks(double& loss) {
    std::vector<at::Tensor> grads;
    for (auto& p : llama().tensors()) {
      if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
      grads.push_back(p.grad());
    }
    to_host(grads, host, 1);  // the loss rides along
    host.back() = static_cast<float>(loss);
    CRUCIBLE_RETURN_IF_ERROR(ranks->all_reduce_mean(host));
    from_host(host, grads);
    loss = host.back();
    return Status::ok();
  }

  // Every rank's parameters <- rank 0's.
  Status take_rank0_parameters() {
    std::vector<at::Tensor> params = llama().tensors();
    if (ranks->rank() == 0) {
      to_host(params, host);
    } else {
      host.resize(static_cast<std::size_t>(parameter_count()));
    }
    CRUCIBLE_RETURN_IF_ERROR(
        ranks->broadcast(std::span(reinterpret_cast<std::uint8_t*>(host.data()), host.size() * sizeof(float))));
    at::NoGradGuard g;
    if (ranks->rank() != 0) from_host(host, params);
    return Status::ok();
  }

  // ZeRO-1's step: this rank's slice of the (averaged, clipped) gradients
  // steps its slice of the parameters; then every rank gathers every slice.
  Status step_shard() {
    Shard& s = *shard;
    const std::vector<at::Tensor> params = llama().tensors();
    for (Piece& piece : s.pieces) {
      piece.values.mutable_grad() = params[piece.tensor].grad().view({-1}).narrow(0, piece.first, piece.count);
    }
    s.optimizer->step();
    std::vector<at::Tensor> values;
    for (const Piece& piece : s.pieces) values.push_back(piece.values);
    std::vector<float> mine;
    to_host(values, mine);
    mine.resize(static_cast<std::size_t>(s.chunk), 0.0f);  // the last rank's slice, padded
    host.resize(static_cast<std::size_t>(s.chunk * ranks->world_size()));
    CRUCIBLE_RETURN_IF_ERROR(ranks->all_gather(mine, host));
    at::NoGradGuard g;
    from_host(host, params);
    return Status::ok();
  }

  // One AdamW step on `batch` (with ranks: this rank's rows of it); the loss before the step.
  Result<double> step(const at::Tensor& batch, std::uint32_t index) {
    for (auto& group : stepped().param_groups()) {
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
    if (shard) {
      CRUCIBLE_RETURN_IF_ERROR(step_shard());
    } else {
      optimizer->step();
    }
    ++steps;
    return value;
  }

  // The shard's AdamW state <- its slice of the whole model's (when there
  // is one: a fresh miner has none until its first step).
  void take_shard_state() {
    const std::vector<at::Tensor> params = llama().tensors();
    shard->optimizer->state().clear();
    for (const Piece& piece : shard->pieces) {
      const auto* whole = adamw_state(*optimizer, params[piece.tensor]);
      if (whole == nullptr) continue;
      auto state = std::make_unique<torch::optim::AdamWParamState>();
      state->step(whole->step());
      const auto slice = [&](const at::Tensor& t) {
        return t.view({-1}).narrow(0, piece.first, piece.count).to(piece.values.device()).clone();
      };
      state->exp_avg(slice(whole->exp_avg()));
      state->exp_avg_sq(slice(whole->exp_avg_sq()));
      shard->optimizer->state()[state_key(piece.values)] = std::move(state);
    }
    // Only rank 0 keeps (and saves) the whole, in host memory.
    if (ranks->rank() == 0) {
      place_state(at::Device(at::kCPU));
    } else {
      optimizer->state().clear();
    }
  }

  // Rank 0's whole-model AdamW state (host) <- every rank's slice.
  Status gather_shard_state() {
    Shard& s = *shard;
    std::vector<float> mine(static_cast<std::size_t>(2 * s.chunk), 0.0f);
    std::optional<std::int64_t> step;
    std::int64_t at = 0;
    for (const Piece& piece : s.pieces) {
      const auto* st = adamw_state(*s.optimizer, piece.values);
      if (st == nullptr) return Status::ok();  // no step taken
      step = st->step();
      at::Tensor avg = st->exp_avg().to(at::kCPU).contiguous(), sq = st->exp_avg_sq().to(at::kCPU).contiguous();
      std::copy_n(avg.data_ptr<float>(), piece.count, mine.begin() + at);
      std::copy_n(sq.data_ptr<float>(), piece.count, mine.begin() + s.chunk + at);
      at += piece.count;
    }
    std::vector<float> all(ranks->rank() == 0 ? mine.size() * ranks->world_size() : 0);
    CRUCIBLE_RETURN_IF_ERROR(ranks->gather_to_rank0(mine, all));
    if (ranks->rank() != 0 || !step) return Status::ok();
    // Rank r's block is [its exp_avg | its exp_avg_sq], each chunk long.
    const std::int64_t world = ranks->world_size(), chunk = s.chunk;
    at::Tensor blocks = at::from_blob(all.data(), {world, 2, chunk}, at::kFloat);
    at::Tensor avgs = blocks.select(1, 0).reshape({-1}), sqs = blocks.select(1, 1).reshape({-1});
    std::int64_t offset = 0;
    for (const auto& p : llama().tensors()) {
      const at::Tensor avg = avgs.narrow(0, offset, p.numel()).view(p.sizes());
      const at::Tensor sq = sqs.narrow(0, offset, p.numel()).view(p.sizes());
      offset += p.numel();
      if (auto* held = adamw_state(*optimizer, p); held != nullptr && held->exp_avg().is_cpu()) {
        held->step(*step);  // into last window's host tensors: no second copy of the moments
        held->exp_avg().copy_(avg);
        held->exp_avg_sq().copy_(sq);
        continue;
      }
      auto state = std::make_unique<torch::optim::AdamWParamState>();
      state->step(*step);
      state->exp_avg(avg.clone());
      state->exp_avg_sq(sq.clone());
      optimizer->state()[state_key(p)] = std::move(state);
    }
    return Status::ok();
  }

  // The whole model's AdamW state onto `device`, or where each parameter is
  // (so that a state saved from host memory, or by a miner that ran on
  // another device, steps here).
  void place_state(std::optional<at::Device> device = std::nullopt) {
    for (const auto& p : llama().tensors()) {
      const at::Device to = device.value_or(p.device());
      if (auto* st = adamw_state(*optimizer, p); st != nullptr && st->exp_avg().device() != to) {
        st->exp_avg(st->exp_avg().to(to));
        st->exp_avg_sq(st->exp_avg_sq().to(to));
      }
    }
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
  m.optimizer = std::make_unique<torch::optim::AdamW>(replica.llama().tensors(), m.adamw_options());
  if (options.shard_optimizer && m.ranked()) m.make_shard();
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
  const auto params = static_cast<std::uint64_t>(m.parameter_count());
  CRUCIBLE_RETURN_IF_ERROR(m.ranks->broadcast_bytes(state, 16 * params + (1 << 20)));
  if (m.ranks->rank() == 0) {
    if (m.shard) m.take_shard_state();
    return Status::ok();
  }
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
  if (m.shard) m.take_shard_state();
  return Status::ok();
}

Result<WindowResult> InnerLoop::train_window(std::span<const std::int64_t> samples, std::int64_t n,
                                             const std::function<void(const StepInfo&)>& on_step,
                                             const std::atomic<bool>* stop, const std::function<bool()>& out_of_time) {
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
    if (s > 0 && !m.ranked() && out_of_time && out_of_time()) break;
    at::Tensor idx =
        at::remainder(at::arange(static_cast<std::int64_t>(s) * mb, (s + 1) * mb, at::kLong), n).to(m.device());
    CRUCIBLE_ASSIGN_OR_RETURN(double loss, m.step(all.index_select(0, idx), s));
    loss_sum += loss;
    ++r.steps;
    r.tokens += static_cast<std::uint64_t>(mb * L);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
    if (on_step) on_step({s + 1, H, loss, static_cast<double>(r.tokens) / std::max(secs, 1e-9)});
  }
  if (m.shard) CRUCIBLE_RETURN_IF_ERROR(m.gather_shard_state());
  at::NoGradGuard g;
  for (std::size_t i = 0; i < start.size(); ++i) {
    at::Tensor& p = const_cast<at::Tensor&>(m.llama().parameters()[i].tensor);
    at::Tensor d = (start[i] - p.detach()).to(at::kCPU, at::kFloat).contiguous();
    r.delta.emplace_back(d.data_ptr<float>(), d.data_ptr<float>() + d.numel());
    p.copy_(start[i]);  // the local model stays the global one until the outer step
  }
  r.mean_loss = loss_sum / std::max<std::uint32_t>(r.steps, 1);
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
  impl_->place_state();
  impl_->steps = steps_done;
  return Status::ok();
}

}  // namespace crucible::miner
