// One window, as protocol.md §6-§10 orders it: gather, copies, evaluate,
// sync, score, then (the lead) the set, then record, advance, weights.
#include "crucible/validator/window.h"

#include <cmath>

#include <fmt/ranges.h>

#include "crucible/common/log.h"
#include "crucible/common/metrics.h"
#include "crucible/common/retry.h"

namespace crucible::validator {

namespace {

// A uid that changed hands starts afresh: its score, its cool-down.
void forget_previous_owners(const chain::Metagraph& mg, ValidatorState& st) {
  std::map<std::uint16_t, std::array<std::uint8_t, 32>> hotkeys;
  for (const auto& n : mg.neurons) hotkeys[n.uid] = n.hotkey;
  for (std::uint16_t uid : bind_hotkeys(st.scores, hotkeys)) {
    st.cooldown_until.erase(uid);
    log::warn("uid has a new hotkey: its score starts afresh", {{"uid", uid}});
  }
}

}  // namespace

Status process_window(std::uint64_t w, ValidatorState& st, const Observer& observer, WindowContext& cx) {
  const auto t0 = std::chrono::steady_clock::now();
  auto mg = retry_transient("metagraph", cx.stop, [&] { return cx.chain().metagraph(cx.o.chain.netuid); });
  if (!mg.is_ok()) return mg.status();
  forget_previous_owners(*mg, st);
  CRUCIBLE_ASSIGN_OR_RETURN(std::vector<Upload> uploads,
                            gather(w, *mg, st.cooldown_until, observer, cx));                   // gather.cpp
  mark_copies(uploads, st.history, {cx.o.validator.copy_overlap, cx.o.validator.copy_cosine});  // copies.cpp
  CRUCIBLE_ASSIGN_OR_RETURN(Evaluated ev, evaluate(w, uploads, st, cx));                        // evaluate.cpp
  ev.input.steps_behind = sync(w, ev.input.evaluations, uploads, st.model, cx);                 // sync.cpp
  score_window(st.scores, ev.input, cx.o.protocol.scoring);                                     // gauntlet.cpp
  // Records this window created belong to the hotkeys whose packets it
  // judged; unbound, the next owner of the uid would be taken for them.
  forget_previous_owners(*mg, st);
  std::optional<PublishedSet> set;  // aggregation.cpp: admission uses this window's evidence
  if (protocol::lead_validator(*mg) == cx.uid) {
    CRUCIBLE_ASSIGN_OR_RETURN(set, fix_aggregation_set(w, uploads, st, cx));
  }
  ev.summary.lead = set.has_value();
  metrics::global().set(metrics::Gauge::kValidatorLead, ev.summary.lead ? 1 : 0);
  if (set) {
    ev.summary.aggregate = set->set.uids;
    ev.summary.aggregate_prev = set->set.prev;
  }
  for (const auto& u : uploads) ev.summary.bytes_received += u.bytes;
  const auto results = window_results(uploads, ev.input, st.scores);
  CRUCIBLE_RETURN_IF_ERROR(record_window(w, results, ev.summary, st.scores, cx.db));  // record.cpp
  CRUCIBLE_RETURN_IF_ERROR(advance_model(w, *mg, set, st, cx));                       // aggregation.cpp
  std::optional<Sketch> aggregate;
  if (st.model.window == w && !st.model.last_aggregate.empty()) aggregate = sketch_of(st.model.last_aggregate);
  CRUCIBLE_RETURN_IF_ERROR(
      remember(w, uploads, aggregate ? &*aggregate : nullptr, cx.o.validator.history_windows, st.history, cx.db));
  CRUCIBLE_ASSIGN_OR_RETURN(ProgressRecord progress, measure_progress(w, ev.summary.bytes_received, st, cx));
  CRUCIBLE_RETURN_IF_ERROR(record_progress(progress, cx.db));
  if (Status s = maybe_post_weights(w, st, cx); !s.is_ok()) {  // weights.cpp
    log::error("weights", {{"error", s.to_string()}});
  }
  std::size_t valid = 0;
  for (const auto& u : uploads) valid += u.valid();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log::info("window done", {{"window", w},
                            {"uploads_valid", valid},
                            {"evaluated", ev.input.evaluations.size()},
                            {"lead", set.has_value()},
                            {"aggregated", progress.aggregate.size()},
                            {"set", fmt::format("{}", fmt::join(progress.aggregate, ","))},
                            {"heldout_loss", progress.heldout_loss ? *progress.heldout_loss : std::nan("")},
                            {"bytes_received", progress.bytes_received},
                            {"seconds", seconds}});
  metrics::global().set(metrics::Gauge::kWindow, static_cast<double>(w), {{"role", "validator"}});
  metrics::global().observe(metrics::Histogram::kWindowDurationSeconds, seconds, {{"role", "validator"}});
  return Status::ok();
}

}  // namespace crucible::validator
