#include "crucible/protocol/model_chain.h"

#include <algorithm>
#include <charconv>

#include "crucible/common/log.h"
#include "crucible/common/metrics.h"
#include "crucible/protocol/checkpoint_pointer.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/protocol/peers.h"

namespace crucible::protocol {

namespace {

std::string window_name(const std::optional<std::uint64_t>& w) { return w ? std::to_string(*w) : "none"; }

Result<std::uint64_t> metadata_u64(const safetensors::Metadata& m, const std::string& field) {
  auto it = m.find(field);
  if (it == m.end()) return data_loss("model metadata: no {}", field);
  std::uint64_t v = 0;
  const std::string& s = it->second;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) {
    return data_loss("model metadata: {} is '{}', not an unsigned integer", field, s);
  }
  return v;
}

}  // namespace

safetensors::Metadata ChainState::metadata() const {
  safetensors::Metadata m{{"basis", to_hex(basis)}, {"global_step", std::to_string(global_step)}};
  if (window) m["window"] = std::to_string(*window);
  return m;
}

Result<ChainState> ChainState::from_metadata(const safetensors::Metadata& m) {
  ChainState s;
  if (m.contains("window")) {
    CRUCIBLE_ASSIGN_OR_RETURN(s.window, metadata_u64(m, "window"));
  }
  auto basis = m.find("basis");
  if (basis == m.end()) return data_loss("model metadata: no basis");
  auto b = from_hex_fixed<32>(basis->second);
  if (!b.is_ok()) return data_loss("model metadata: basis: {}", b.status().message());
  s.basis = *b;
  if (m.contains("global_step")) {
    CRUCIBLE_ASSIGN_OR_RETURN(s.global_step, metadata_u64(m, "global_step"));
  } else {
    s.global_step = s.window ? *s.window + 1 : 0;
  }
  return s;
}

std::string_view to_string(Desync d) {
  switch (d) {
    case Desync::kOtherBasis:
      return "other_basis";
    case Desync::kSetMissing:
      return "set_missing";
    case Desync::kSetDamaged:
      return "set_damaged";
    case Desync::kPacketMissing:
      return "packet_missing";
  }
  return "unknown";
}

ModelChain::ModelChain(ChainModel& model, ChainState& state, kernels::Backend& codec, ChainOptions options)
    : model_(model), state_(state), codec_(codec), o_(std::move(options)) {
  // Every series at 0 from the start, so that /metrics shows them before the first desync.
  for (Desync d : {Desync::kOtherBasis, Desync::kSetMissing, Desync::kSetDamaged, Desync::kPacketMissing}) {
    metrics::global().add(metrics::Counter::kChainDesyncs, 0,
                          {{"role", o_.role}, {"reason", std::string(to_string(d))}});
  }
  metrics::global().add(metrics::Counter::kCheckpointsLoaded, 0, {{"role", o_.role}});
}

std::optional<Desync> ModelChain::desync(Desync d, std::uint64_t w, const Status& why) const {
  metrics::global().add(metrics::Counter::kChainDesyncs, 1, {{"role", o_.role}, {"reason", std::string(to_string(d))}});
  log::warn("aggregation set not applied", {{"window", w},
                                            {"reason", to_string(d)},
                                            {"model_window", window_name(state_.window)},
                                            {"error", why.to_string()}});
  return d;
}

Result<std::optional<Desync>> ModelChain::advance(std::uint64_t w, storage::ObjectStore& sets) {
  auto f = sets.get(keys::aggregate(w), kMaxSetBytes);
  if (f.status().code() == StatusCode::kNotFound) return desync(Desync::kSetMissing, w, f.status());
  if (!f.is_ok()) return f.status();
  return advance(w, f->data, sets);
}

Result<std::optional<Desync>> ModelChain::advance(std::uint64_t w, ByteSpan published, storage::ObjectStore& packets) {
  auto set = decode_set(published);
  if (!set.is_ok()) return desync(Desync::kSetDamaged, w, set.status());
  if (set->window != w)
    return desync(Desync::kSetDamaged, w, data_loss("aggregate/{} names window {}", w, set->window));
  return take(*set, published, packets);
}

Result<std::optional<Desync>> ModelChain::take(const AggregationSet& set, ByteSpan bytes,
                                               storage::ObjectStore& packets) {
  if (set.prev != state_.window) {
    return desync(Desync::kOtherBasis, set.window,
                  failed_precondition("the set builds on window {}, the model holds {}", window_name(set.prev),
                                      window_name(state_.window)));
  }
  TensorValues merged;
  if (!set.uids.empty()) {
    auto m = fetch_and_merge(set, packets, model_.specs(), o_.max_object_bytes, codec_);
    if (!m.is_ok() && m.status().is_transient()) return m.status();
    if (!m.is_ok()) return desync(Desync::kPacketMissing, set.window, m.status());
    if (Status s = model_.apply_update(*m, o_.outer_lr.at(state_.global_step)); !s.is_ok()) {
      return desync(Desync::kPacketMissing, set.window, s);
    }
    merged = std::move(*m);
  }
  state_.window = set.window;
  state_.basis = set_basis(bytes);
  ++state_.global_step;
  state_.last_set = set.uids;
  state_.last_aggregate = o_.keep_last ? std::move(merged) : TensorValues{};
  metrics::global().add(metrics::Counter::kAggregatesApplied, 1, {{"role", o_.role}});
  metrics::global().set(metrics::Gauge::kGlobalStep, static_cast<double>(state_.global_step), {{"role", o_.role}});
  return std::optional<Desync>();
}

Result<std::vector<std::uint64_t>> ModelChain::published_after(storage::ObjectStore& sets,
                                                               std::size_t max_listed) const {
  CRUCIBLE_ASSIGN_OR_RETURN(auto objects, sets.list_all(keys::aggregate_prefix(), max_listed));
  std::vector<std::uint64_t> out;
  for (const auto& obj : objects) {
    auto w = keys::aggregate_window(obj.key);
    if (w && (!state_.window || *w > *state_.window)) out.push_back(*w);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<bool> ModelChain::load_newer_checkpoint(storage::ObjectStore& lead) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto checkpoint,
                            fetch_newer_checkpoint(lead, state_.window, o_.model_canonical, o_.max_object_bytes));
  if (!checkpoint) return false;
  CRUCIBLE_ASSIGN_OR_RETURN(safetensors::File file, safetensors::parse(std::move(checkpoint->model)));
  CRUCIBLE_RETURN_IF_ERROR(model_.load(file).with_context("the lead's checkpoint"));
  const CheckpointPointer& ptr = checkpoint->pointer;
  state_.window = ptr.window;
  state_.basis = ptr.basis;
  state_.global_step = ptr.global_step;
  state_.last_aggregate.clear();
  state_.last_set.clear();
  metrics::global().add(metrics::Counter::kCheckpointsLoaded, 1, {{"role", o_.role}});
  metrics::global().set(metrics::Gauge::kGlobalStep, static_cast<double>(state_.global_step), {{"role", o_.role}});
  log::info("loaded checkpoint from the lead",
            {{"window", ptr.window}, {"global_step", ptr.global_step}, {"key", ptr.key}});
  return true;
}

void ModelChain::reload_last(storage::ObjectStore& sets) {
  if (!state_.window) return;
  auto f = sets.get(keys::aggregate(*state_.window), kMaxSetBytes);
  if (!f.is_ok()) return;
  auto set = decode_set(f->data);
  if (!set.is_ok()) return;
  state_.last_set = set->uids;
  if (o_.keep_last && !set->uids.empty()) {
    auto merged = fetch_and_merge(*set, sets, model_.specs(), o_.max_object_bytes, codec_);
    if (merged.is_ok()) state_.last_aggregate = std::move(*merged);
  }
}

}  // namespace crucible::protocol
