// The aggregation set and the model's outer step (protocol.md §8-9): the
// lead fixes and publishes w's set once the window is scored; every validator then
// applies the lead's set (theta_{w+1}), and the lead checkpoints.
#include <fmt/ranges.h>

#include "crucible/chain/keccak.h"
#include "crucible/common/file_io.h"
#include "crucible/common/log.h"
#include "crucible/common/metrics.h"
#include "crucible/protocol/checkpoint_pointer.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/protocol/peers.h"
#include "crucible/validator/window.h"

namespace crucible::validator {

namespace fs = std::filesystem;
namespace keys = protocol::keys;

Result<PublishedSet> fix_aggregation_set(std::uint64_t w, const std::vector<Upload>& uploads, const ValidatorState& st,
                                         WindowContext& cx) {
  // A set already published (a restart) is final.
  auto existing = cx.io.store->get(keys::aggregate(w), protocol::kMaxSetBytes);
  if (existing.is_ok()) {
    CRUCIBLE_ASSIGN_OR_RETURN(auto set, protocol::decode_set(existing->data));
    return PublishedSet{std::move(set), std::move(existing->data)};
  }
  if (existing.status().code() != StatusCode::kNotFound) return existing.status();
  std::vector<protocol::SetCandidate> candidates;
  for (const auto& u : uploads) {
    if (!u.valid()) continue;
    protocol::SetCandidate c{u.uid, u.digest, 0, false};
    if (auto it = st.scores.find(u.uid); it != st.scores.end()) {
      c.final_score = it->second.final_score;
      c.admitted = admitted(it->second, cx.o.protocol.scoring);
    }
    candidates.push_back(c);
  }
  PublishedSet out;
  out.set = protocol::choose_set(w, st.model.window, std::move(candidates), cx.o.protocol.aggregate_top);
  CRUCIBLE_ASSIGN_OR_RETURN(const std::uint64_t packet_bytes, protocol::expected_packet_bytes(cx.replica.specs()));
  std::vector<Bytes> kept;  // the members' packets, from the window's spool
  for (std::uint16_t uid : out.set.uids) {
    CRUCIBLE_ASSIGN_OR_RETURN(Bytes b, files::read_file(spool_path(cx, w, uid), packet_bytes));
    kept.push_back(std::move(b));
  }
  std::vector<ByteSpan> packets(kept.begin(), kept.end());
  CRUCIBLE_RETURN_IF_ERROR(protocol::store_set_packets(out.set, packets, *cx.io.store));
  const std::string encoded = protocol::encode_set(out.set);
  out.bytes.assign(encoded.begin(), encoded.end());
  CRUCIBLE_RETURN_IF_ERROR(cx.io.store->put(keys::aggregate(w), out.bytes));
  log::info("published aggregation set", {{"window", w}, {"uids", fmt::format("{}", fmt::join(out.set.uids, ","))}});
  return out;
}

Status apply_set(const protocol::AggregationSet& set, ByteSpan bytes, storage::ObjectStore& lead, ModelState& model,
                 WindowContext& cx) {
  model::TensorValues merged;
  if (!set.uids.empty()) {
    CRUCIBLE_ASSIGN_OR_RETURN(
        merged, protocol::fetch_and_merge(set, lead, cx.replica.specs(), cx.o.storage.max_object_bytes, cx.codec));
    CRUCIBLE_RETURN_IF_ERROR(cx.replica.apply_update(merged, cx.o.protocol.outer_lr));
  }
  model.last_aggregate = std::move(merged);
  model.last_set = set.uids;
  model.window = set.window;
  model.basis = protocol::set_basis(bytes);
  return Status::ok();
}

Status save_model(const ModelState& model, WindowContext& cx) {
  std::map<std::string, std::string> meta{
      {"window", std::to_string(*model.window)}, {"basis", to_hex(model.basis)}, {"model", cx.o.model.canonical()}};
  return cx.replica.save(fs::path(cx.o.validator.state_dir) / "model.safetensors", meta);
}

namespace {

Status checkpoint(std::uint64_t w, std::uint64_t global_step, const ModelState& model, WindowContext& cx) {
  const fs::path tmp = fs::path(cx.o.validator.state_dir) / "checkpoint.safetensors";
  CRUCIBLE_RETURN_IF_ERROR(cx.replica.save(tmp, {{"window", std::to_string(w)}, {"model", cx.o.model.canonical()}}));
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes bytes, files::read_file(tmp, cx.o.storage.max_object_bytes));
  CRUCIBLE_RETURN_IF_ERROR(cx.io.store->put(keys::checkpoint(global_step), bytes));
  protocol::CheckpointPointer ptr{w, global_step, keys::checkpoint(global_step), cx.o.model.canonical(), model.basis};
  CRUCIBLE_RETURN_IF_ERROR(
      cx.io.store->put(keys::checkpoint_latest(), as_bytes(protocol::encode_checkpoint_pointer(ptr))));
  log::info("published checkpoint", {{"window", w}, {"global_step", global_step}});
  return Status::ok();
}

// A validator that is not the lead applies the lead's published set,
// waiting up to aggregate_wait_s for it.
Status follow_lead(std::uint64_t w, const chain::Metagraph& mg, ModelState& model, WindowContext& cx) {
  auto lead_uid = protocol::lead_validator(mg);
  if (!lead_uid) return not_found("no lead validator");
  CRUCIBLE_ASSIGN_OR_RETURN(auto lead, cx.peers.store_of(*lead_uid));
  const double deadline = cx.io.clock->unix_seconds() + cx.o.validator.aggregate_wait_s;
  for (;;) {
    auto f = lead->get(keys::aggregate(w), protocol::kMaxSetBytes);
    if (f.is_ok()) {
      CRUCIBLE_ASSIGN_OR_RETURN(auto set, protocol::decode_set(f->data));
      if (set.prev != model.window) return failed_precondition("the set of {} builds on another window", w);
      CRUCIBLE_RETURN_IF_ERROR(apply_set(set, f->data, *lead, model, cx));
      return save_model(model, cx);
    }
    if (f.status().code() != StatusCode::kNotFound) return f.status();
    if (cx.io.clock->unix_seconds() >= deadline || cx.stop.load()) {
      return deadline_exceeded("the lead published no set for window {} in time", w);
    }
    cx.io.clock->sleep(kPoll, cx.stop);
  }
}

}  // namespace

Result<bool> load_lead_checkpoint(storage::ObjectStore& lead, ModelState& model, WindowContext& cx) {
  CRUCIBLE_ASSIGN_OR_RETURN(
      auto checkpoint,
      protocol::fetch_newer_checkpoint(lead, model.window, cx.o.model.canonical(), cx.o.storage.max_object_bytes));
  if (!checkpoint) return false;
  CRUCIBLE_ASSIGN_OR_RETURN(safetensors::File file, safetensors::parse(std::move(checkpoint->model)));
  CRUCIBLE_RETURN_IF_ERROR(cx.replica.load(file).with_context("the lead's checkpoint"));
  const protocol::CheckpointPointer& ptr = checkpoint->pointer;
  model.window = ptr.window;
  model.basis = ptr.basis;
  model.last_aggregate.clear();
  model.last_set.clear();
  CRUCIBLE_RETURN_IF_ERROR(save_model(model, cx));
  log::info("loaded the lead's checkpoint", {{"window", ptr.window}, {"global_step", ptr.global_step}});
  return true;
}

Status advance_model(std::uint64_t w, const chain::Metagraph& mg, const std::optional<PublishedSet>& own,
                     ValidatorState& st, WindowContext& cx) {
  if (!own) {
    Status s = follow_lead(w, mg, st.model, cx);
    if (!s.is_ok()) {
      log::warn("the lead's aggregation set was not applied", {{"window", w}, {"error", s.to_string()}});
      // A set that cannot be applied is not retried forever: the lead's
      // next checkpoint takes the model past it.
      const auto lead_uid = protocol::lead_validator(mg);
      if (lead_uid && !s.is_transient()) {
        auto lead = cx.peers.store_of(*lead_uid);
        auto loaded = lead.is_ok() ? load_lead_checkpoint(**lead, st.model, cx) : Result<bool>(lead.status());
        if (!loaded.is_ok())
          log::warn("the lead's checkpoint was not loaded", {{"error", loaded.status().to_string()}});
      }
    }
    return Status::ok();
  }
  if (Status s = apply_set(own->set, own->bytes, *cx.io.store, st.model, cx); !s.is_ok()) {
    log::error("aggregate not applied", {{"window", w}, {"error", s.to_string()}});
    return Status::ok();
  }
  CRUCIBLE_RETURN_IF_ERROR(save_model(st.model, cx));
  metrics::global().add(metrics::Counter::kAggregatesApplied, 1, {{"role", "validator"}});
  if ((w + 1) % cx.o.validator.checkpoint_every == 0) {
    if (Status c = checkpoint(w, w + 1, st.model, cx); !c.is_ok()) {
      log::warn("checkpoint failed", {{"error", c.to_string()}});
    }
  }
  return Status::ok();
}

}  // namespace crucible::validator
