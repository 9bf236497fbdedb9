// The miner's catch-up (protocol.md §8-9): the lead's aggregation sets, in
// their chain order, or the lead's checkpoint when the chain cannot be
// followed from the model held (a fresh miner joining late, or a gap).
#include "crucible/common/log.h"
#include "crucible/common/metrics.h"
#include "crucible/protocol/aggregation_set.h"
#include "crucible/protocol/checkpoint_pointer.h"
#include "crucible/protocol/object_keys.h"
#include "node_impl.h"

namespace crucible::miner {

namespace keys = protocol::keys;

Result<std::vector<std::uint64_t>> MinerNode::Impl::published_after(storage::ObjectStore& lead) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto objects, lead.list_all(keys::aggregate_prefix(), kMaxListedAggregates));
  std::vector<std::uint64_t> out;
  for (const auto& obj : objects) {
    auto w = keys::aggregate_window(obj.key);
    if (w && (!state.applied_window || *w > *state.applied_window)) out.push_back(*w);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status MinerNode::Impl::catch_up(std::optional<std::uint64_t> wait_for, const std::atomic<bool>& stop) {
  auto metagraph = retry_transient("metagraph", *io.clock, stop, [&] { return chain().metagraph(o.chain.netuid); });
  if (!metagraph.is_ok()) return metagraph.status();
  auto lead_uid = protocol::lead_validator(*metagraph);
  if (!lead_uid) {
    log::debug("no lead validator yet: the model stays as it is");
    return Status::ok();
  }
  auto lead = peers->store_of(*lead_uid);
  if (!lead.is_ok()) {
    log::warn("cannot open the lead validator's store", {{"uid", *lead_uid}, {"error", lead.status().to_string()}});
    return Status::ok();
  }
  const double deadline = io.clock->unix_seconds() + o.miner.aggregate_wait_s;
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
      if (Status st = apply_one(**lead, w); !st.is_ok()) {
        // A set that cannot be applied (its packets gone or bad) is not
        // retried forever: the lead's next checkpoint takes the model past it.
        if (!st.is_transient()) stuck_window = w;
        log::warn("aggregate not applied; will retry or load the lead's next checkpoint",
                  {{"window", w}, {"error", st.to_string()}});
        return Status::ok();
      }
    }
    const bool have = !wait_for || (state.applied_window && *state.applied_window >= *wait_for);
    if (have || io.clock->unix_seconds() >= deadline || stop.load()) {
      if (!have) log::info("aggregate not published in time; training on", {{"window", *wait_for}});
      return Status::ok();
    }
    io.clock->sleep(2 * kPoll, stop);
  }
}

// Whether the model must come from a checkpoint: a set that cannot be
// applied, a gap in the set chain, or a fresh miner.
Result<bool> MinerNode::Impl::checkpoint_needed(storage::ObjectStore& lead, const std::vector<std::uint64_t>& windows) {
  if (stuck_window && (!state.applied_window || *stuck_window > *state.applied_window)) return true;
  if (windows.empty()) return !state.applied_window;  // fresh: start from the newest model there is
  CRUCIBLE_ASSIGN_OR_RETURN(storage::Fetched f, lead.get(keys::aggregate(windows.front()), protocol::kMaxSetBytes));
  auto set = protocol::decode_set(f.data);
  return set.is_ok() && set->prev != state.applied_window;
}

Status MinerNode::Impl::maybe_load_checkpoint(storage::ObjectStore& lead, const std::vector<std::uint64_t>& windows) {
  CRUCIBLE_ASSIGN_OR_RETURN(bool needed, checkpoint_needed(lead, windows));
  if (!needed) return Status::ok();
  CRUCIBLE_ASSIGN_OR_RETURN(
      auto checkpoint,
      protocol::fetch_newer_checkpoint(lead, state.applied_window, o.model.canonical(), o.storage.max_object_bytes));
  if (!checkpoint) return Status::ok();  // none (newer) yet: follow the chain
  CRUCIBLE_ASSIGN_OR_RETURN(safetensors::File file, safetensors::parse(std::move(checkpoint->model)));
  CRUCIBLE_RETURN_IF_ERROR(replica->load(file).with_context("the lead's checkpoint"));
  const protocol::CheckpointPointer& ptr = checkpoint->pointer;
  state.applied_window = ptr.window;
  state.global_step = ptr.global_step;
  state.basis = ptr.basis;
  if (stuck_window && *stuck_window <= ptr.window) stuck_window.reset();
  CRUCIBLE_RETURN_IF_ERROR(commit());
  log::info("loaded checkpoint", {{"window", ptr.window}, {"global_step", ptr.global_step}, {"key", ptr.key}});
  return Status::ok();
}

Status MinerNode::Impl::apply_one(storage::ObjectStore& lead, std::uint64_t w) {
  CRUCIBLE_ASSIGN_OR_RETURN(storage::Fetched f, lead.get(keys::aggregate(w), protocol::kMaxSetBytes));
  CRUCIBLE_ASSIGN_OR_RETURN(protocol::AggregationSet set, protocol::decode_set(f.data));
  if (set.window != w) return data_loss("aggregate/{}.json names window {}", w, set.window);
  if (set.prev != state.applied_window) {
    return failed_precondition("aggregate {} builds on window {}, the model has {} (a checkpoint is needed)", w,
                               set.prev ? std::to_string(*set.prev) : "none",
                               state.applied_window ? std::to_string(*state.applied_window) : "none");
  }
  if (!set.uids.empty()) {
    CRUCIBLE_ASSIGN_OR_RETURN(auto merged,
                              protocol::fetch_and_merge(set, lead, specs(), o.storage.max_object_bytes, codec.get()));
    CRUCIBLE_RETURN_IF_ERROR(replica->apply_update(merged, o.protocol.outer_lr));
  }
  state.applied_window = w;
  state.basis = protocol::set_basis(f.data);
  ++state.global_step;
  CRUCIBLE_RETURN_IF_ERROR(commit());
  metrics::global().add(metrics::Counter::kAggregatesApplied, 1, {{"role", "miner"}});
  metrics::global().set(metrics::Gauge::kGlobalStep, static_cast<double>(state.global_step), {{"role", "miner"}});
  log::info("applied aggregate", {{"window", w}, {"peers", set.uids.size()}, {"global_step", state.global_step}});
  return Status::ok();
}

}  // namespace crucible::miner
