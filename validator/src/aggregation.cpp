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

ValidatorChain::ValidatorChain(protocol::ChainState& state, WindowContext& cx)
    : link_(cx.replica),
      chain_(link_, state, cx.codec,
             {cx.o.protocol.outer(), cx.o.max_object_bytes, cx.o.model.canonical(), "validator", true}) {}

Status save_model(const protocol::ChainState& model, WindowContext& cx) {
  safetensors::Metadata meta = model.metadata();
  meta["model"] = cx.o.model.canonical();
  return cx.replica.save(fs::path(cx.o.validator.state_dir) / "model.safetensors", meta);
}

namespace {

Status checkpoint(std::uint64_t w, const protocol::ChainState& model, WindowContext& cx) {
  const fs::path tmp = fs::path(cx.o.validator.state_dir) / "checkpoint.safetensors";
  CRUCIBLE_RETURN_IF_ERROR(cx.replica.save(tmp, {{"window", std::to_string(w)}, {"model", cx.o.model.canonical()}}));
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes bytes, files::read_file(tmp, cx.o.max_object_bytes));
  const std::string key = keys::checkpoint(model.global_step);
  CRUCIBLE_RETURN_IF_ERROR(cx.io.store->put(key, bytes));
  protocol::CheckpointPointer ptr{w, model.global_step, key, cx.o.model.canonical(), model.basis};
  CRUCIBLE_RETURN_IF_ERROR(
      cx.io.store->put(keys::checkpoint_latest(), as_bytes(protocol::encode_checkpoint_pointer(ptr))));
  log::info("published checkpoint", {{"window", w}, {"global_step", model.global_step}});
  return Status::ok();
}

// A validator that is not the lead applies the lead's published set,
// waiting up to aggregate_wait_s for it; a set it cannot take (a desync)
// sends it to the lead's checkpoint.
Status follow_lead(std::uint64_t w, const chain::Metagraph& mg, protocol::ChainState& model, WindowContext& cx) {
  auto lead_uid = protocol::lead_validator(mg);
  if (!lead_uid) return not_found("no lead validator");
  CRUCIBLE_ASSIGN_OR_RETURN(auto lead, cx.peers.store_of(*lead_uid));
  const double deadline = cx.io.clock->unix_seconds() + cx.o.validator.aggregate_wait_s;
  ValidatorChain chain(model, cx);
  for (;;) {
    auto f = lead->get(keys::aggregate(w), protocol::kMaxSetBytes);
    if (f.is_ok()) {
      CRUCIBLE_ASSIGN_OR_RETURN(auto desync, chain->advance(w, f->data, *lead));
      if (!desync) return save_model(model, cx);
      CRUCIBLE_ASSIGN_OR_RETURN(bool loaded, chain->load_newer_checkpoint(*lead));
      return loaded ? save_model(model, cx) : Status::ok();
    }
    if (f.status().code() != StatusCode::kNotFound) return f.status();
    if (cx.io.clock->unix_seconds() >= deadline || cx.stop.load()) {
      return deadline_exceeded("the lead published no set for window {} in time", w);
    }
    cx.io.clock->sleep(kPoll, cx.stop);
  }
}

}  // namespace

Status advance_model(std::uint64_t w, const chain::Metagraph& mg, const std::optional<PublishedSet>& own,
                     ValidatorState& st, WindowContext& cx) {
  if (!own) {
    if (Status s = follow_lead(w, mg, st.model, cx); !s.is_ok()) {
      log::warn("the lead's aggregation set was not applied", {{"window", w}, {"error", s.to_string()}});
    }
    return Status::ok();
  }
  auto desync = ValidatorChain(st.model, cx)->advance(w, own->bytes, *cx.io.store);
  if (!desync.is_ok() || *desync) {
    log::error("own aggregate not applied",
               {{"window", w}, {"error", desync.is_ok() ? std::string("desync") : desync.status().to_string()}});
    return Status::ok();
  }
  CRUCIBLE_RETURN_IF_ERROR(save_model(st.model, cx));
  if ((w + 1) % cx.o.validator.checkpoint_every == 0) {
    if (Status c = checkpoint(w, st.model, cx); !c.is_ok()) {
      log::warn("checkpoint failed", {{"error", c.to_string()}});
    }
  }
  return Status::ok();
}

}  // namespace crucible::validator
