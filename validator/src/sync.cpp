// Sync (protocol.md §7): how many outer steps behind the validator's model
// each evaluated miner trained, from its fingerprint/{w}.json. A missing,
// malformed or foreign fingerprint counts as the cap.
#include "crucible/protocol/fingerprint.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/validator/window.h"

namespace crucible::validator {

namespace {

double steps_behind_of(std::uint16_t who, std::uint64_t w, const ModelState& model, const model::TensorValues& ours,
                       const model::TensorValues& last_step, WindowContext& cx) {
  const double cap = cx.o.protocol.scoring.sync_max_steps;
  auto peer = cx.peers.store_of(who);
  if (!peer.is_ok()) return cap;
  auto f = (*peer)->get(protocol::keys::fingerprint(w), protocol::kMaxFingerprintBytes);
  if (!f.is_ok()) return cap;
  auto fp = protocol::decode_fingerprint(f->data, cx.replica.specs());
  if (!fp.is_ok() || fp->window != w || fp->uid != who || fp->basis != model.basis) return cap;
  return protocol::steps_behind(fp->values, ours, last_step, cap);
}

}  // namespace

std::map<std::uint16_t, double> sync(std::uint64_t w, const std::vector<Evaluation>& evaluations,
                                     const ModelState& model, WindowContext& cx) {
  std::map<std::uint16_t, double> out;
  const auto positions = protocol::fingerprint_positions(model.basis, cx.replica.specs());
  const model::TensorValues ours = cx.replica.values_at(positions);
  model::TensorValues last_step;
  if (!model.last_aggregate.empty()) {
    for (std::size_t t = 0; t < positions.size() && t < model.last_aggregate.size(); ++t) {
      std::vector<float> s;
      for (std::int64_t p : positions[t]) {
        s.push_back(static_cast<float>(cx.o.protocol.outer_lr * model.last_aggregate[t][static_cast<std::size_t>(p)]));
      }
      last_step.push_back(std::move(s));
    }
  }
  for (const auto& e : evaluations) {
    if (e.valid) out[e.uid] = steps_behind_of(e.uid, w, model, ours, last_step, cx);
  }
  return out;
}

}  // namespace crucible::validator
