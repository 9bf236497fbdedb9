// Progress (protocol.md §6): how the global model stands after window w's
// aggregate, the product the network exists for. The held-out loss is the
// mean next-token loss over the first heldout_samples samples of the
// data's val split, in fixed batches, so every validator with the same
// model and data reports the same number.
#include <cmath>

#include "crucible/common/log.h"
#include "crucible/common/metrics.h"
#include "crucible/validator/window.h"

namespace crucible::validator {

namespace {

Result<std::optional<double>> heldout_loss(WindowContext& cx, std::uint64_t& samples) {
  samples = 0;
  if (cx.heldout == nullptr || cx.o.validator.heldout_samples == 0) return std::optional<double>();
  const std::uint64_t n = std::min<std::uint64_t>(
      cx.o.validator.heldout_samples, cx.heldout->num_samples(static_cast<std::uint64_t>(cx.o.model.seq_len)));
  if (n == 0) return std::optional<double>();
  CRUCIBLE_ASSIGN_OR_RETURN(double loss, model::dataset_loss(cx.replica, *cx.heldout, n));
  samples = n;
  return std::optional<double>(loss);
}

}  // namespace

Result<ProgressRecord> measure_progress(std::uint64_t w, std::uint64_t bytes_received, const ValidatorState& st,
                                        WindowContext& cx) {
  ProgressRecord p;
  p.window = w;
  p.bytes_received = bytes_received;
  if (st.model.window == w) {
    p.aggregate = st.model.last_set;
    p.tokens_aggregated = static_cast<std::uint64_t>(p.aggregate.size()) * cx.o.protocol.samples_per_window *
                          static_cast<std::uint64_t>(cx.o.model.seq_len);
  }
  CRUCIBLE_ASSIGN_OR_RETURN(p.heldout_loss, heldout_loss(cx, p.heldout_samples));
  if (p.heldout_loss) metrics::global().set(metrics::Gauge::kHeldoutLoss, *p.heldout_loss);
  return p;
}

Status complete_progress(std::uint64_t last, const ValidatorState& st, WindowContext& cx) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto kept, cx.db.get(storage::Family::kWindowScores, progress_key(last)));
  if (kept) return Status::ok();
  CRUCIBLE_ASSIGN_OR_RETURN(auto summary_bytes, cx.db.get(storage::Family::kWindowScores, window_summary_key(last)));
  std::uint64_t bytes = 0;
  if (summary_bytes) {
    auto j = nlohmann::json::parse(summary_bytes->begin(), summary_bytes->end(), nullptr, false);
    if (auto summary = window_summary_from_json(j); summary.is_ok()) bytes = summary->bytes_received;
  }
  CRUCIBLE_ASSIGN_OR_RETURN(ProgressRecord p, measure_progress(last, bytes, st, cx));
  log::info("measured the last window's progress after a restart", {{"window", last}});
  return record_progress(p, cx.db);
}

Status record_progress(const ProgressRecord& p, storage::StateStore& db) {
  storage::StateStore::Batch b;
  const std::string text = to_json(p).dump();
  b.put(storage::Family::kWindowScores, progress_key(p.window), as_bytes(text));
  return db.commit(std::move(b));
}

}  // namespace crucible::validator
