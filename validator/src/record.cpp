// Record (protocol.md §6): one window's per-uid results, its summary and
// every uid's score, in one RocksDB batch with the progress mark, so a
// crash leaves the window whole or absent. The window's similarity
// history (copies.cpp remember) and its progress record (progress.cpp)
// are two later commits, each one batch: a crash before them loses that
// window's sketches (restore_history reads what was kept), and its
// progress record is made at restart (complete_progress).
#include <cmath>

#include "crucible/common/metrics.h"
#include "crucible/validator/window.h"

namespace crucible::validator {

namespace {

Bytes json_bytes(const nlohmann::json& j) {
  std::string s = j.dump();
  return Bytes(s.begin(), s.end());
}

}  // namespace

std::vector<UidResult> window_results(const std::vector<Upload>& uploads, const WindowInput& input,
                                      const std::map<std::uint16_t, MinerScore>& scores) {
  std::map<std::uint16_t, const Evaluation*> by_uid;
  for (const auto& e : input.evaluations) by_uid[e.uid] = &e;
  std::vector<UidResult> out;
  for (const auto& u : uploads) {
    UidResult r;
    r.uid = u.uid;
    r.valid = u.valid();
    r.uploaded = u.uploaded;
    r.rejection = u.rejection;
    r.detail = u.detail;
    if (u.uploaded && u.seen_at > 0) r.seen_ms = static_cast<std::int64_t>(u.seen_at * 1000);
    if (auto it = by_uid.find(u.uid); it != by_uid.end() && it->second->valid) {
      const Evaluation& e = *it->second;
      auto behind = input.steps_behind.find(u.uid);
      r.eval = EvalResult{e.loss_before_own,
                          e.loss_after_own,
                          e.loss_before_rand,
                          e.loss_after_rand,
                          gradient_score(e),
                          binary_indicator(e),
                          behind != input.steps_behind.end() ? behind->second : 0.0};
      if (std::isfinite(e.align_own)) r.eval->align_own = e.align_own;
      if (std::isfinite(e.align_rand)) r.eval->align_rand = e.align_rand;
      if (std::isfinite(e.own_z)) r.eval->own_z = e.own_z;
      if (e.norm_ratio > 0) r.eval->norm_ratio = e.norm_ratio;
    }
    if (auto s = scores.find(u.uid); s != scores.end()) r.final_score = s->second.final_score;
    out.push_back(std::move(r));
  }
  return out;
}

Status record_window(std::uint64_t w, const std::vector<UidResult>& results, const WindowSummary& summary,
                     const std::map<std::uint16_t, MinerScore>& scores, storage::StateStore& db) {
  storage::StateStore::Batch batch;
  for (const auto& r : results) {
    const Bytes row = json_bytes(to_json(r));
    batch.put(storage::Family::kWindowScores, window_uid_key(w, r.uid), row);
    batch.put(storage::Family::kWindowScores, history_key(r.uid, w), row);
  }
  batch.put(storage::Family::kWindowScores, window_summary_key(w), json_bytes(to_json(summary)));
  for (const auto& [u, s] : scores) batch.put(storage::Family::kRatings, rating_key(u), json_bytes(to_json(s)));
  CRUCIBLE_RETURN_IF_ERROR(db.commit_window(w, std::move(batch)));
  for (const auto& r : results) {
    if (r.valid) {
      metrics::global().add(metrics::Counter::kUploadsValid);
    } else if (r.rejection) {
      metrics::global().add(metrics::Counter::kUploadsRejected, 1,
                            {{"reason", std::string(protocol::name(*r.rejection))}});
    }
  }
  return Status::ok();
}

}  // namespace crucible::validator
