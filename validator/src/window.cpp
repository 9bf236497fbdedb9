// One window, as protocol.md §6, §8 orders it: gather, copies, evaluate,
// sync, score, then (the lead) the set, then record, advance, weights.
#include "crucible/validator/window.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <string>

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

// Wall time of each step of a window: crucible_validator_step_seconds{step}
// and the `steps` field of the "window done" line (bench/scale reads both).
class StepClock {
 public:
  // The step that ended now, timed from the previous end.
  void done(const char* step) {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    metrics::global().observe(metrics::Histogram::kValidatorStepSeconds, s, {{"step", step}});
    text_ += fmt::format("{}{}={:.3f}", text_.empty() ? "" : ",", step, s);
  }
  const std::string& text() const { return text_; }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::string text_;
};

// The window's spool folder (gather.cpp: valid packets wait on disk until
// the window is done): whatever an earlier, interrupted window left there
// goes first, and this window's goes when it ends, however it ends.
class Spool {
 public:
  explicit Spool(std::filesystem::path dir) : dir_(std::move(dir)) {
    std::error_code ec;
    std::filesystem::remove_all(dir_.parent_path(), ec);
  }
  ~Spool() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

 private:
  std::filesystem::path dir_;
};

// The "window done" line and the window's gauges.
void report_window(std::uint64_t w, const std::vector<Upload>& uploads, const Evaluated& ev,
                   const ProgressRecord& progress, double seconds, const StepClock& steps) {
  std::size_t valid = 0;
  for (const auto& u : uploads) valid += u.valid();
  log::info("window done", {{"window", w},
                            {"uploads_valid", valid},
                            {"evaluated", ev.input.evaluations.size()},
                            {"lead", ev.summary.lead},
                            {"aggregated", progress.aggregate.size()},
                            {"set", fmt::format("{}", fmt::join(progress.aggregate, ","))},
                            {"heldout_loss", progress.heldout_loss ? *progress.heldout_loss : std::nan("")},
                            {"bytes_received", progress.bytes_received},
                            {"seconds", seconds},
                            {"steps", steps.text()}});
  metrics::global().set(metrics::Gauge::kWindow, static_cast<double>(w), {{"role", "validator"}});
  metrics::global().observe(metrics::Histogram::kWindowDurationSeconds, seconds, {{"role", "validator"}});
}

// When evaluations stop starting (evaluate's deadline, Unix seconds on the
// node's clock): eval_window_share of window w's length as the chain ran it
// (from its first block to the next window's, which opened the slot),
// counted from `started`, when the window's processing began. No bound when
// the share is 0 or the block cannot be read.
double evaluation_deadline(std::uint64_t w, const protocol::UploadSlot& slot, double started, WindowContext& cx) {
  constexpr double kNone = std::numeric_limits<double>::infinity();
  const double share = cx.o.validator.eval_window_share;
  if (share <= 0) return kNone;
  auto first = cx.chain().block(cx.clock.first_block(w));
  if (!first.is_ok() || slot.start_s <= static_cast<double>(first->timestamp)) return kNone;
  return started + share * (slot.start_s - static_cast<double>(first->timestamp));
}

}  // namespace

Status process_window(std::uint64_t w, ValidatorState& st, const Observer& observer, WindowContext& cx) {
  const auto t0 = std::chrono::steady_clock::now();
  const double started = cx.io.clock->unix_seconds();
  const Spool spool(spool_dir(cx, w));
  StepClock steps;
  auto mg = retry_transient("metagraph", *cx.io.clock, cx.stop, [&] { return cx.chain().metagraph(cx.o.netuid); });
  if (!mg.is_ok()) return mg.status();
  forget_previous_owners(*mg, st);
  CRUCIBLE_ASSIGN_OR_RETURN(const protocol::UploadSlot slot, read_slot(w, cx));  // gather.cpp
  steps.done("metagraph");
  CRUCIBLE_ASSIGN_OR_RETURN(std::vector<Upload> uploads, gather(w, slot, *mg, st.cooldown_until, observer, cx));
  steps.done("gather");
  const SameUpdate same{cx.o.validator.copy_overlap, cx.o.validator.copy_cosine};
  mark_copies(uploads, st.history, same);  // copies.cpp
  steps.done("copies");
  CRUCIBLE_ASSIGN_OR_RETURN(Evaluated ev,
                            evaluate(w, uploads, st, cx, evaluation_deadline(w, slot, started, cx)));  // evaluate.cpp
  steps.done("evaluate");
  ev.input.steps_behind = sync(w, ev.input.evaluations, uploads, st.model, cx);  // sync.cpp
  steps.done("sync");
  score_window(st.scores, ev.input, cx.o.protocol.scoring);  // gauntlet.cpp
  // Records this window created belong to the hotkeys whose packets it
  // judged; unbound, the next owner of the uid would be taken for them.
  forget_previous_owners(*mg, st);
  steps.done("score");
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
  steps.done("set");
  for (const auto& u : uploads) ev.summary.bytes_received += u.bytes;
  const auto results = window_results(uploads, ev.input, st.scores);
  CRUCIBLE_RETURN_IF_ERROR(record_window(w, results, ev.summary, st.scores, cx.db));  // record.cpp
  steps.done("record");
  CRUCIBLE_RETURN_IF_ERROR(advance_model(w, *mg, set, st, cx));  // aggregation.cpp
  steps.done("merge");
  std::optional<Sketch> aggregate;
  if (st.model.window == w && !st.model.last_aggregate.empty()) aggregate = sketch_of(st.model.last_aggregate);
  CRUCIBLE_RETURN_IF_ERROR(
      remember(w, uploads, aggregate ? &*aggregate : nullptr, cx.o.validator.history_windows, st.history, cx.db));
  steps.done("remember");
  CRUCIBLE_ASSIGN_OR_RETURN(ProgressRecord progress, measure_progress(w, ev.summary.bytes_received, st, cx));
  CRUCIBLE_RETURN_IF_ERROR(record_progress(progress, cx.db));
  steps.done("progress");
  if (Status s = maybe_post_weights(w, st, cx); !s.is_ok()) {  // weights.cpp
    log::error("weights", {{"error", s.to_string()}});
  }
  steps.done("weights");
  report_window(w, uploads, ev, progress, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                steps);
  return Status::ok();
}

}  // namespace crucible::validator
