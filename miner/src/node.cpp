#include "crucible/miner/node.h"

#include <unistd.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "crucible/chain/evm_chain.h"
#include "crucible/chain/packet_signing.h"
#include "crucible/chain/substrate.h"
#include "crucible/common/dataset.h"
#include "crucible/common/file_io.h"
#include "crucible/common/log.h"
#include "crucible/common/metrics.h"
#include "crucible/common/object_keys.h"
#include "crucible/common/retry.h"
#include "crucible/common/sampler.h"
#include "crucible/kernels/packet_tensor.h"
#include "crucible/miner/aggregation.h"
#include "crucible/miner/fingerprint.h"
#include "crucible/miner/miner_state.h"
#include "crucible/miner/trainer.h"
#include "crucible/storage/peer_location.h"
#include "crucible/storage/store_url.h"

namespace crucible::miner {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr auto kPoll = std::chrono::milliseconds(250);


}  // namespace

struct MinerNode::Impl {
  MinerNodeOptions o;
  chain::PrivateKey key;
  std::unique_ptr<chain::Chain> chain;
  std::shared_ptr<storage::ObjectStore> store;
  std::unique_ptr<PeerDirectory> peers;
  std::optional<data::Dataset> dataset;
  std::unique_ptr<Trainer> trainer;
  std::optional<StateDir> state_dir;
  MinerState state;
  std::uint16_t uid = 0;
  bool show_progress = false;
  double window_end_s = 0;  // estimated end of the window being trained (Unix seconds)

  explicit Impl(const chain::PrivateKey& k) : key(k) {}

  // Retries a chain read with backoff until it works or we are stopped.
  template <typename F>
  auto retry(std::string_view what, const std::atomic<bool>& stop, F&& f) -> decltype(f()) {
    return retry_transient(what, stop, std::forward<F>(f));
  }

  Status commit() {
    return state_dir->commit(state, trainer->specs(),
                             [&](const fs::path& g) { return trainer->save(g, state.inner_steps); });
  }

  Result<std::uint64_t> block_number(const std::atomic<bool>& stop) {
    return retry("block number", stop, [&] { return chain->block_number(); });
  }

  // aggregate/{v}.json windows after `applied` that the lead has published, ascending.
  Result<std::vector<std::uint64_t>> published_after(storage::ObjectStore& lead) {
    CRUCIBLE_ASSIGN_OR_RETURN(auto objects, lead.list_all(keys::aggregate_prefix(), 100'000));
    std::vector<std::uint64_t> out;
    for (const auto& obj : objects) {
      std::string name = obj.key.substr(obj.key.rfind('/') + 1);
      if (!name.ends_with(".json")) continue;
      std::uint64_t w = 0;
      auto digits = name.substr(0, name.size() - 5);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
      w = std::stoull(digits);
      if (!state.applied_window || w > *state.applied_window) out.push_back(w);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // Applies every published aggregate the model lacks, in chain order. With
  // `wait_for` set, waits up to aggregate_wait_s for that window's set.
  Status catch_up(std::optional<std::uint64_t> wait_for, const std::atomic<bool>& stop) {
    auto metagraph = retry("metagraph", stop, [&] { return chain->metagraph(o.chain.netuid); });
    if (!metagraph.is_ok()) return metagraph.status();
    auto lead_uid = lead_validator(*metagraph);
    if (!lead_uid) {
      log::debug("no lead validator yet: the model stays as it is");
      return Status::ok();
    }
    auto lead = peers->store_of(*lead_uid);
    if (!lead.is_ok()) {
      log::warn("cannot open the lead validator's store", {{"uid", *lead_uid}, {"error", lead.status().to_string()}});
      return Status::ok();
    }
    const auto deadline = Clock::now() + std::chrono::duration<double>(o.miner.aggregate_wait_s);
    for (;;) {
      auto windows = published_after(**lead);
      if (!windows.is_ok()) {
        log::warn("listing aggregates failed", {{"error", windows.status().to_string()}});
        return Status::ok();
      }
      if (Status ck = maybe_load_checkpoint(**lead, *windows); !ck.is_ok()) {
        log::warn("checkpoint not loaded; will retry", {{"error", ck.to_string()}});
        return Status::ok();
      }
      windows = published_after(**lead);
      if (!windows.is_ok()) return Status::ok();
      for (std::uint64_t w : *windows) {
        Status st = apply_one(**lead, w);
        if (!st.is_ok()) {
          log::warn("aggregate not applied; will retry", {{"window", w}, {"error", st.to_string()}});
          return Status::ok();
        }
      }
      bool have = !wait_for || (state.applied_window && *state.applied_window >= *wait_for);
      if (have || Clock::now() >= deadline || stop.load()) {
        if (!have) log::info("aggregate not published in time; training on", {{"window", *wait_for}});
        return Status::ok();
      }
      sleep_unless_stopped(std::chrono::milliseconds(500), stop);
    }
  }

  // Loads the lead's latest checkpoint when the aggregate chain cannot be
  // followed from the model we hold: a fresh miner joining late, or a gap.
  Status maybe_load_checkpoint(storage::ObjectStore& lead, const std::vector<std::uint64_t>& windows) {
    bool needed = false;
    if (!windows.empty()) {
      auto f = lead.get(keys::aggregate(windows.front()), kMaxSetBytes);
      if (!f.is_ok()) return f.status();
      auto set = decode_set(std::string_view(reinterpret_cast<const char*>(f->data.data()), f->data.size()));
      needed = set.is_ok() && set->prev != state.applied_window;
    } else {
      needed = !state.applied_window;  // fresh: start from the newest model there is
    }
    if (!needed) return Status::ok();
    auto latest = lead.get(keys::checkpoint_latest(), kMaxSetBytes);
    if (latest.status().code() == StatusCode::kNotFound) return Status::ok();  // none yet: follow the chain
    if (!latest.is_ok()) return latest.status();
    CRUCIBLE_ASSIGN_OR_RETURN(CheckpointPointer ptr,
                              decode_checkpoint_pointer(std::string_view(
                                  reinterpret_cast<const char*>(latest->data.data()), latest->data.size())));
    if (state.applied_window && ptr.window <= *state.applied_window) return Status::ok();
    if (ptr.model != o.model.canonical()) {
      return failed_precondition("the lead's checkpoint is for another model shape ({})", ptr.model);
    }
    CRUCIBLE_ASSIGN_OR_RETURN(storage::Fetched model, lead.get(ptr.key, o.storage.max_object_bytes));
    const fs::path tmp = state_dir->path() / "download.safetensors";
    CRUCIBLE_RETURN_IF_ERROR(files::write_file_atomic(tmp, model.data));
    Status loaded = trainer->load_model(tmp);
    std::error_code ec;
    fs::remove(tmp, ec);
    CRUCIBLE_RETURN_IF_ERROR(loaded.with_context("the lead's checkpoint"));
    state.applied_window = ptr.window;
    state.global_step = ptr.global_step;
    state.basis = ptr.basis;
    CRUCIBLE_RETURN_IF_ERROR(commit());
    log::info("loaded checkpoint", {{"window", ptr.window}, {"global_step", ptr.global_step}, {"key", ptr.key}});
    return Status::ok();
  }

  Status apply_one(storage::ObjectStore& lead, std::uint64_t w) {
    CRUCIBLE_ASSIGN_OR_RETURN(storage::Fetched f, lead.get(keys::aggregate(w), kMaxSetBytes));
    std::string_view text(reinterpret_cast<const char*>(f.data.data()), f.data.size());
    CRUCIBLE_ASSIGN_OR_RETURN(AggregationSet set, decode_set(text));
    if (set.window != w) return data_loss("aggregate/{}.json names window {}", w, set.window);
    if (set.prev != state.applied_window) {
      return failed_precondition("aggregate {} builds on window {}, the model has {} (a checkpoint is needed)", w,
                                 set.prev ? std::to_string(*set.prev) : "none",
                                 state.applied_window ? std::to_string(*state.applied_window) : "none");
    }
    if (!set.uids.empty()) {
      CRUCIBLE_ASSIGN_OR_RETURN(auto merged, fetch_and_merge(set, *peers, trainer->specs(), o.storage.max_object_bytes));
      CRUCIBLE_RETURN_IF_ERROR(trainer->apply_aggregate(merged, o.protocol.outer_lr));
    }
    state.applied_window = w;
    state.basis = chain::keccak256(f.data);
    ++state.global_step;
    CRUCIBLE_RETURN_IF_ERROR(commit());
    metrics::global().add(metrics::Counter::kAggregatesApplied, 1, {{"role", "miner"}});
    metrics::global().set(metrics::Gauge::kGlobalStep, static_cast<double>(state.global_step), {{"role", "miner"}});
    log::info("applied aggregate", {{"window", w}, {"peers", set.uids.size()}, {"global_step", state.global_step}});
    return Status::ok();
  }

  // The window's samples as one [n, L] token buffer, and their digest.
  Result<std::pair<std::vector<std::int64_t>, chain::Hash32>> samples_for(std::uint64_t w) {
    const auto L = static_cast<std::uint64_t>(o.model.seq_len);
    CRUCIBLE_ASSIGN_OR_RETURN(auto idx, dataset->assignment(uid, w, o.protocol.samples_per_window, L));
    CRUCIBLE_ASSIGN_OR_RETURN(auto tokens, dataset->tokens(idx, L));
    return std::make_pair(std::move(tokens), dataset->digest(idx, L));
  }

  Status train_and_upload(std::uint64_t w, const std::atomic<bool>& stop) {
    auto t0 = Clock::now();
    Fingerprint fp = take_fingerprint(w, uid, state.basis, trainer->specs(),
                                      [&](std::size_t t, std::int64_t i) { return trainer->value(t, i); });
    CRUCIBLE_ASSIGN_OR_RETURN(auto samples, samples_for(w));
    window_end_s = estimate_window_end(w, stop);
    const auto n = static_cast<std::int64_t>(o.protocol.samples_per_window);
    CRUCIBLE_ASSIGN_OR_RETURN(
        WindowResult r, trainer->train_window(samples.first, n, [&](const StepInfo& s) { progress(w, s); }, &stop));
    if (show_progress) fmt::print(stderr, "\n");
    state.inner_steps = trainer->inner_steps_done();
    metrics::global().add(metrics::Counter::kInnerSteps, o.miner.inner_steps);
    metrics::global().add(metrics::Counter::kTokensTrained, static_cast<double>(r.tokens));
    metrics::global().set(metrics::Gauge::kMinerLoss, r.mean_loss);
    metrics::global().set(metrics::Gauge::kTokensPerSecond, static_cast<double>(r.tokens) / std::max(r.seconds, 1e-9));

    // Error feedback and compression, tensor by tensor.
    packet::Packet p;
    p.protocol_version = kProtocolVersion;
    p.window = w;
    p.uid = uid;
    p.global_step = state.global_step;
    p.model_digest = fingerprint_digest(fp);
    p.sample_digest = samples.second;
    const auto& specs = trainer->specs();
    for (std::size_t i = 0; i < specs.size(); ++i) {
      CRUCIBLE_ASSIGN_OR_RETURN(kernels::CompressedTensor c,
                                kernels::error_feedback_step(state.ef[i], r.delta[i], specs[i].shape,
                                                             static_cast<float>(o.miner.ef_beta), o.miner.threads));
      CRUCIBLE_ASSIGN_OR_RETURN(packet::Tensor t, kernels::to_packet_tensor(specs[i].name, specs[i].shape, c));
      p.tensors.push_back(std::move(t));
    }
    CRUCIBLE_ASSIGN_OR_RETURN(Bytes sealed, chain::seal_packet(std::move(p), key));
    state.trained_window = w;
    CRUCIBLE_RETURN_IF_ERROR(commit());
    log::info("trained window", {{"window", w}, {"loss", r.mean_loss}, {"tokens", r.tokens}, {"seconds", r.seconds},
                                 {"packet_bytes", sealed.size()},
                                 {"bytes_per_param", static_cast<double>(sealed.size()) / trainer->num_parameters()}});

    // Upload once window w+1 has begun, inside its slot.
    const std::uint64_t first = (w + 1) * o.protocol.blocks_per_window;
    for (;;) {
      CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t head, block_number(stop));
      if (head >= first) break;
      if (!sleep_unless_stopped(kPoll, stop)) return aborted("stopped before the upload slot of window {}", w);
    }
    auto header = retry("block header", stop, [&] { return chain->block(first); });
    if (!header.is_ok()) return header.status();
    const double slot_end = static_cast<double>(header->timestamp) + o.protocol.upload_slot_s;
    if (unix_seconds() > slot_end) {
      metrics::global().add(metrics::Counter::kUploads, 1, {{"result", "late"}});
      log::warn("missed the upload slot; the update stays in error feedback", {{"window", w}});
      return Status::ok();
    }
    Status put = store->put(keys::gradient(w), sealed);
    if (!put.is_ok()) {
      metrics::global().add(metrics::Counter::kUploads, 1, {{"result", "failed"}});
      log::error("gradient upload failed", {{"window", w}, {"error", put.to_string()}});
      return Status::ok();
    }
    std::string fp_json = encode_fingerprint(fp, specs);
    if (Status f = store->put(keys::fingerprint(w), as_bytes(fp_json)); !f.is_ok()) {
      log::warn("fingerprint upload failed", {{"window", w}, {"error", f.to_string()}});
    }
    metrics::global().add(metrics::Counter::kUploads, 1, {{"result", "ok"}});
    state.uploaded_window = w;
    CRUCIBLE_RETURN_IF_ERROR(commit());
    log::info("uploaded gradient", {{"window", w}, {"key", keys::gradient(w)}, {"bytes", sealed.size()},
                                    {"seconds", std::chrono::duration<double>(Clock::now() - t0).count()}});
    metrics::global().observe(metrics::Histogram::kWindowDurationSeconds,
                              std::chrono::duration<double>(Clock::now() - t0).count(), {{"role", "miner"}});
    return Status::ok();
  }

  // When window w ends, from the chain: the head's timestamp plus the blocks
  // still to come at the recent block interval. 0 when it cannot be read.
  double estimate_window_end(std::uint64_t w, const std::atomic<bool>& stop) {
    auto head = block_number(stop);
    if (!head.is_ok()) return 0;
    const std::uint64_t span = std::min<std::uint64_t>(*head, 20);
    auto now = chain->block(*head);
    auto before = chain->block(*head - span);
    if (!now.is_ok() || !before.is_ok() || span == 0) return 0;
    const double spb = static_cast<double>(now->timestamp - before->timestamp) / static_cast<double>(span);
    const std::uint64_t end = (w + 1) * o.protocol.blocks_per_window;
    return static_cast<double>(now->timestamp) + spb * static_cast<double>(end > *head ? end - *head : 0);
  }

  void progress(std::uint64_t w, const StepInfo& s) {
    const double left = window_end_s > 0 ? std::max(0.0, window_end_s - unix_seconds()) : 0;
    if (show_progress) {
      fmt::print(stderr, "\r\033[Kwindow {} step {}/{} loss {:.4f} {:.0f} tokens/s {:.0f} s left in window", w,
                 s.step, s.steps, s.loss, s.tokens_per_second, left);
    } else {
      log::debug("inner step", {{"window", w}, {"step", s.step}, {"loss", s.loss}, {"tokens_per_s", s.tokens_per_second}});
    }
  }
};

MinerNode::MinerNode() = default;
MinerNode::~MinerNode() = default;

Result<std::unique_ptr<MinerNode>> MinerNode::create(const MinerNodeOptions& options, const chain::PrivateKey& key) {
  std::unique_ptr<MinerNode> node(new MinerNode());
  node->impl_ = std::make_unique<Impl>(key);
  Impl& m = *node->impl_;
  m.o = options;
  CRUCIBLE_RETURN_IF_ERROR(model::validate(options.model));
  m.show_progress = options.miner.progress == "on" || (options.miner.progress == "auto" && isatty(STDERR_FILENO) == 1);

  auto ds = data::Dataset::open(options.miner.data_dir, "train");
  if (!ds.is_ok()) return ds.status().with_context("miner.data_dir");
  m.dataset.emplace(std::move(*ds));
  if (m.dataset->info().vocab_size > options.model.vocab_size) {
    return invalid_argument("the dataset's vocabulary ({}) is larger than model.vocab_size ({})",
                            m.dataset->info().vocab_size, options.model.vocab_size);
  }
  if (m.dataset->num_samples(static_cast<std::uint64_t>(options.model.seq_len)) < options.protocol.samples_per_window) {
    return invalid_argument("the dataset holds fewer samples of {} tokens than protocol.samples_per_window ({})",
                            options.model.seq_len, options.protocol.samples_per_window);
  }

  CRUCIBLE_ASSIGN_OR_RETURN(m.trainer, Trainer::create(options.model, options.miner, options.protocol.init_seed));
  CRUCIBLE_ASSIGN_OR_RETURN(StateDir sd, StateDir::open(options.miner.state_dir));
  m.state_dir.emplace(std::move(sd));
  CRUCIBLE_ASSIGN_OR_RETURN(auto loaded, m.state_dir->load(m.trainer->specs()));
  if (loaded) {
    m.state = std::move(loaded->second);
    CRUCIBLE_RETURN_IF_ERROR(m.trainer->load(loaded->first, m.state.inner_steps).with_context("miner state"));
    log::info("resumed miner state", {{"folder", options.miner.state_dir}, {"global_step", m.state.global_step},
                                      {"trained_window", m.state.trained_window ? std::to_string(*m.state.trained_window) : "none"}});
  } else {
    for (const auto& spec : m.trainer->specs()) m.state.ef.emplace_back(static_cast<std::size_t>(spec.numel()), 0.0f);
  }

  CRUCIBLE_ASSIGN_OR_RETURN(auto evm, chain::EvmChain::connect(chain::to_evm_options(options.chain), key));
  m.chain = std::move(evm);
  CRUCIBLE_ASSIGN_OR_RETURN(m.store, storage::open_store(options.storage.url, options.storage.read_credentials(),
                                                         options.storage.write_credentials(),
                                                         options.storage.retry_policy()));
  m.peers = std::make_unique<PeerDirectory>(*m.chain, options.chain.netuid, options.storage.retry_policy());

  CRUCIBLE_ASSIGN_OR_RETURN(m.uid, join_subnet(*m.chain, options.chain.netuid, key, options.storage));
  log::info("miner ready", {{"uid", m.uid}, {"address", key.address().checksum()},
                            {"parameters", m.trainer->num_parameters()}, {"store", m.store->describe()}});
  return node;
}

Status MinerNode::run(const std::atomic<bool>& stop) {
  Impl& m = *impl_;
  std::uint32_t done = 0;
  while (!stop.load()) {
    auto head = m.block_number(stop);
    if (!head.is_ok()) {
      if (stop.load()) break;
      return head.status();
    }
    const std::uint64_t w = *head / m.o.protocol.blocks_per_window;
    metrics::global().set(metrics::Gauge::kWindow, static_cast<double>(w), {{"role", "miner"}});
    if (m.state.trained_window && *m.state.trained_window >= w) {
      sleep_unless_stopped(std::chrono::milliseconds(500), stop);
      continue;
    }
    std::optional<std::uint64_t> wait_for;
    if (w > 0 && m.state.uploaded_window && *m.state.uploaded_window == w - 1) wait_for = w - 1;
    CRUCIBLE_RETURN_IF_ERROR(m.catch_up(wait_for, stop));
    if (stop.load()) break;
    Status st = m.train_and_upload(w, stop);
    if (st.code() == StatusCode::kAborted) break;
    CRUCIBLE_RETURN_IF_ERROR(st);
    if (m.o.miner.max_windows != 0 && ++done >= m.o.miner.max_windows) {
      log::info("done: max_windows reached", {{"windows", done}});
      break;
    }
  }
  log::info("miner stopped", {{"trained_window", m.state.trained_window ? std::to_string(*m.state.trained_window) : "none"}});
  return Status::ok();
}

}  // namespace crucible::miner
