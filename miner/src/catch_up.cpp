// The miner's catch-up (protocol.md §8-9): the lead's aggregation sets, in
// their chain order (protocol::ModelChain), or the lead's checkpoint when
// the chain cannot be followed from the model held (a fresh miner joining
// late, a gap, a set that cannot be applied).
#include <algorithm>

#include "crucible/common/log.h"
#include "crucible/protocol/aggregation_set.h"
#include "crucible/protocol/model_chain.h"
#include "node_impl.h"

namespace crucible::miner {

Status MinerNode::Impl::catch_up(std::optional<std::uint64_t> wait_for, const std::atomic<bool>& stop, double latest) {
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
  const double start = io.clock->unix_seconds();
  double deadline = start + o.miner.aggregate_wait_s;
  if (latest > 0) deadline = std::min(deadline, latest);
  for (;;) {
    if (Status s = follow_chain(**lead); !s.is_ok()) {
      log::warn("the lead's chain not followed; will retry or load the lead's next checkpoint",
                {{"error", s.to_string()}});
      return Status::ok();
    }
    const bool have = !wait_for || (state.chain.window && *state.chain.window >= *wait_for);
    if (have || io.clock->unix_seconds() >= deadline || stop.load()) {
      if (!have) {
        log::info("aggregate not published in time; training on",
                  {{"window", *wait_for}, {"waited_s", io.clock->unix_seconds() - start}});
      }
      return Status::ok();
    }
    const auto left =
        std::chrono::milliseconds(static_cast<std::int64_t>((deadline - io.clock->unix_seconds()) * 1000));
    io.clock->sleep(std::clamp<std::chrono::milliseconds>(left, std::chrono::milliseconds(1), 2 * kPoll), stop);
  }
}

// Every set published after the model's window, in order, each committed
// once applied. A set the model cannot take (a desync) sends it to the
// lead's checkpoint, and on from there; so does a fresh miner with no set
// to start from. An error when neither moves the model on.
Status MinerNode::Impl::follow_chain(storage::ObjectStore& lead) {
  protocol::ChainModelOf<model::Replica> link(*replica);
  protocol::ModelChain sets(link, state.chain, *codec,
                            {o.protocol.outer(), o.storage.max_object_bytes, o.model.canonical(), "miner", false});
  for (;;) {  // each turn loads a newer checkpoint, so it ends
    CRUCIBLE_ASSIGN_OR_RETURN(auto windows, sets.published_after(lead, kMaxListedAggregates));
    std::optional<protocol::Desync> desync;
    for (std::uint64_t w : windows) {
      CRUCIBLE_ASSIGN_OR_RETURN(desync, sets.advance(w, lead));
      if (desync) break;
      CRUCIBLE_RETURN_IF_ERROR(commit());
      log::info("applied aggregate",
                {{"window", w}, {"peers", state.chain.last_set.size()}, {"global_step", state.chain.global_step}});
    }
    if (!desync && (state.chain.window || !windows.empty())) return Status::ok();
    // Desynced, or fresh with nothing to follow: start from the newest model there is.
    CRUCIBLE_ASSIGN_OR_RETURN(bool loaded, sets.load_newer_checkpoint(lead));
    if (!loaded) {
      return desync ? failed_precondition("a set not applied ({}) and no newer checkpoint yet",
                                          protocol::to_string(*desync))
                    : Status::ok();
    }
    CRUCIBLE_RETURN_IF_ERROR(commit());
  }
}

}  // namespace crucible::miner
