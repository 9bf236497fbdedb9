// How the validator's state sits in RocksDB (storage::StateStore), shared by
// the node (writes) and the HTTP API (reads). Values are JSON objects, each
// a typed record with to_json/from_json:
//   ratings        uid/<uid:05>                 MinerScore
//   window_scores  w/<window:012>/summary        WindowSummary
//                  w/<window:012>/uid/<uid:05>   UidResult (one uid in the window)
//                  u/<uid:05>/<window:012>       the same, keyed for a uid's history
//                  p/<window:012>                ProgressRecord (the global model after the window)
//   weights_log    epoch/<epoch:012>             WeightsLogEntry
//   meta           first_window                  the first window of this state (decimal text)
//   sketches       <window:020>/<uid:05>         an upload's sketch (similarity.h), for copies.cpp
//                  <window:020>/aggregate        the window's aggregate's sketch
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "crucible/chain/chain.h"
#include "crucible/common/status.h"
#include "crucible/protocol/rejection.h"
#include "crucible/validator/gauntlet.h"

namespace crucible::validator {

std::string rating_key(std::uint16_t uid);
// The uid a ratings key names (rating_key's inverse); nullopt for any other key.
std::optional<std::uint16_t> uid_of_rating_key(std::string_view key);
std::string window_summary_key(std::uint64_t window);
std::string window_uid_key(std::uint64_t window, std::uint16_t uid);
std::string window_prefix(std::uint64_t window);
std::string history_key(std::uint16_t uid, std::uint64_t window);
std::string history_prefix(std::uint16_t uid);
std::string epoch_key(std::uint64_t epoch);
std::string progress_key(std::uint64_t window);  // p/<window:012> in window_scores
inline constexpr const char* kProgressPrefix = "p/";

nlohmann::json to_json(const MinerScore& s);
// Strict: a missing field, or one of another type, is data_loss naming it
// (a record this node wrote is whole; one that is not is a damaged database,
// never read as a default). `last_evaluated` and `hotkey` may be null.
Result<MinerScore> score_from_json(const nlohmann::json& j);

// What an evaluated upload scored in one window.
struct EvalResult {
  double loss_before_own = 0, loss_after_own = 0;
  double loss_before_rand = 0, loss_after_rand = 0;
  double gradient_score = 0;
  int binary = 0;
  double steps_behind = 0;
  std::optional<double> align_own = {}, align_rand = {};  // the gradient check, when it ran
  std::optional<double> own_z = {};                       // the own-data gain's z, when measured
  std::optional<double> norm_ratio = {};                  // its norm over the admitted median, when there was one
};

// One uid's result in one window. "reason" is a protocol::Rejection name.
struct UidResult {
  std::uint16_t uid = 0;
  bool valid = false;
  bool uploaded = false;
  std::optional<protocol::Rejection> rejection;
  std::string detail;
  std::optional<std::int64_t> seen_ms;
  std::optional<EvalResult> eval;
  double final_score = 0;
};
nlohmann::json to_json(const UidResult& r);
Result<UidResult> uid_result_from_json(const nlohmann::json& j);

struct WindowSummary {
  std::uint64_t window = 0;
  bool lead = false;
  std::vector<std::uint16_t> evaluated;
  std::uint16_t random_uid = 0;
  double loss_before_rand = 0;
  double median_norm = 0;
  std::optional<std::vector<std::uint16_t>> aggregate;  // the set (lead only)
  std::optional<std::uint64_t> aggregate_prev;
  std::uint64_t bytes_received = 0;  // packet bytes downloaded in the window's gather
};
nlohmann::json to_json(const WindowSummary& s);
Result<WindowSummary> window_summary_from_json(const nlohmann::json& j);

// How the global model stands after window w's aggregate (protocol.md §6).
struct ProgressRecord {
  std::uint64_t window = 0;
  std::optional<double> heldout_loss;  // none when there is no held-out split
  std::uint64_t heldout_samples = 0;
  std::uint64_t tokens_aggregated = 0;   // tokens behind the window's aggregate (members x samples x seq_len)
  std::uint64_t bytes_received = 0;      // packet bytes downloaded in the window's gather
  std::vector<std::uint16_t> aggregate;  // the set applied
};
nlohmann::json to_json(const ProgressRecord& p);
Result<ProgressRecord> progress_from_json(const nlohmann::json& j);

// A weights post as a small state machine:
//   set_weights:    pending -> confirmed | failed
//   commit-reveal:  committing -> committed -> confirmed (revealed) | failed
// kExpired: a commit whose reveal epoch passed before it could be revealed.
enum class WeightsPhase { kPending, kCommitting, kCommitted, kConfirmed, kFailed, kExpired };
std::string_view name(WeightsPhase p) noexcept;

struct WeightsLogEntry {
  std::uint64_t epoch = 0;
  std::uint64_t window = 0;
  std::vector<std::uint16_t> uids;
  std::vector<std::uint16_t> values;
  WeightsPhase phase = WeightsPhase::kPending;
  std::optional<std::uint64_t> block_before;   // head before sending (set_weights)
  std::optional<chain::WeightsCommit> commit;  // commit-reveal: what was committed, with its salt
  std::optional<std::string> commit_tx;
  // commit-reveal: the subnet epoch the commit landed in; its reveal is due
  // in this + the subnet's RevealPeriodEpochs (read when revealing, as
  // subtensor reads it).
  std::optional<std::uint64_t> commit_epoch;
  std::optional<std::string> tx;
  std::optional<std::uint64_t> block;
  std::optional<std::string> error;
  bool confirmed_after_restart = false;
};
nlohmann::json to_json(const WeightsLogEntry& e);
// Strict: data_loss naming the field when one is missing or of another type.
Result<WeightsLogEntry> weights_entry_from_json(const nlohmann::json& j);

}  // namespace crucible::validator
