// Sync (protocol.md §7): how many outer steps behind the validator's model
// each evaluated miner trained. Its packet's signed model digest equal to
// the digest of the validator's own model at the uid's positions: 0.
// Otherwise its fingerprint/{w}.json, bound to that digest, tells how far;
// a missing, malformed, foreign or unbound fingerprint counts as the cap.
#include "crucible/protocol/fingerprint.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/validator/window.h"

namespace crucible::validator {

namespace {

// The last outer step (its outer lr x aggregate) at the positions.
model::TensorValues last_step_at(const std::vector<std::vector<std::int64_t>>& positions,
                                 const protocol::ChainState& model, WindowContext& cx) {
  model::TensorValues out;
  if (model.last_aggregate.empty() || model.global_step == 0) return out;
  const double outer_lr = cx.o.protocol.outer().at(model.global_step - 1);
  for (std::size_t t = 0; t < positions.size() && t < model.last_aggregate.size(); ++t) {
    std::vector<float> s;
    for (std::int64_t p : positions[t]) {
      s.push_back(static_cast<float>(outer_lr * model.last_aggregate[t][static_cast<std::size_t>(p)]));
    }
    out.push_back(std::move(s));
  }
  return out;
}

double steps_behind_of(const Upload& u, std::uint64_t w, const protocol::ChainState& model, WindowContext& cx) {
  const double cap = cx.o.protocol.scoring.sync_max_steps;
  const auto positions = protocol::fingerprint_positions(model.basis, u.uid, cx.replica.specs());
  protocol::Fingerprint ours{w, u.uid, model.basis, cx.replica.values_at(positions)};
  if (protocol::fingerprint_digest(ours) == u.model_digest) return 0;  // it holds exactly our model
  auto peer = cx.peers.store_of(u.uid);
  if (!peer.is_ok()) return cap;
  auto f = (*peer)->get(protocol::keys::fingerprint(w), protocol::kMaxFingerprintBytes);
  if (!f.is_ok()) return cap;
  auto fp = protocol::decode_fingerprint(f->data, cx.replica.specs());
  if (!fp.is_ok() || fp->window != w || fp->uid != u.uid || fp->basis != model.basis ||
      protocol::fingerprint_digest(*fp) != u.model_digest) {
    return cap;
  }
  return protocol::steps_behind(fp->values, ours.values, last_step_at(positions, model, cx), cap);
}

}  // namespace

std::map<std::uint16_t, double> sync(std::uint64_t w, const std::vector<Evaluation>& evaluations,
                                     const std::vector<Upload>& uploads, const protocol::ChainState& model,
                                     WindowContext& cx) {
  std::map<std::uint16_t, const Upload*> by_uid;
  for (const auto& u : uploads) by_uid[u.uid] = &u;
  std::map<std::uint16_t, double> out;
  for (const auto& e : evaluations) {
    if (e.valid && by_uid.count(e.uid)) out[e.uid] = steps_behind_of(*by_uid[e.uid], w, model, cx);
  }
  return out;
}

}  // namespace crucible::validator
